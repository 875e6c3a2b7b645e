#!/usr/bin/env bash
# The main job on the built-in default fabric (the thesis's 8-switch/7-host
# network):
#
#   topology  -> ibfab topo thesis8, checked         -> OUT/default.topo
#   ibsim     -> ibsim -s OUT/default.topo in a netns, ibnetdiscover through
#                libumad2sim: the simulator loads our file unchanged
#   capture   -> ibfab pcap sample: link training and the DR discovery SMPs
#                -> OUT/discovery.pcap, decoded by ibfab and by tshark
#   fabric    -> ibfab up: one process per switch and HCA in its namespace,
#                links trained; status; ibsm brings the subnet up (every
#                port Active); ibfab down              -> OUT/status*.txt
#   suite     -> ibfab run link-failure: the default fabric again, ibsm,
#                uniform traffic between the hosts, a link cut; ibsm takes
#                the change in (trap, partial discovery, provisional routes);
#                checks, traffic plot, capture of the cut link, torn down
#                                                      -> OUT/link-failure/
#
# Usage: scripts/demo.sh [OUT]   (run as root; `sudo make demo` builds first)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/demo}
ibfab=${IBFAB:-bin/ibfab}
mkdir -p "$out"
ns="ibf-demo-$$"
sim_pid=""

fabric="demo"

cleanup() {
	"$ibfab" down --name "$fabric" >/dev/null 2>&1 || true
	[ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT

umad2sim() {
	for d in /usr/lib/*-linux-gnu/umad2sim /usr/lib/umad2sim /usr/lib64/umad2sim; do
		[ -f "$d/libumad2sim.so" ] && { echo "$d/libumad2sim.so"; return; }
	done
	echo "libumad2sim.so not found (Debian package libumad2sim0)" >&2
	return 1
}

echo "== topology: the built-in default fabric"
"$ibfab" topo thesis8 -o "$out/default.topo"
"$ibfab" topo check "$out/default.topo"

echo
echo "== ibsim loads it; ibnetdiscover through libumad2sim sees it"
lib=$(umad2sim)
ip netns add "$ns"
mkfifo "$out/.ibsim-stdin"
# ibsim reads console commands on stdin: keep it open until we are done.
sleep infinity > "$out/.ibsim-stdin" &
hold=$!
ip netns exec "$ns" ibsim -s "$out/default.topo" < "$out/.ibsim-stdin" > "$out/ibsim.log" 2>&1 &
sim_pid=$!
rm -f "$out/.ibsim-stdin"
for _ in $(seq 50); do
	if ip netns exec "$ns" env LD_PRELOAD="$lib" ibnetdiscover > "$out/ibnetdiscover.txt" 2>/dev/null; then break; fi
	sleep 0.1
done
kill "$hold" 2>/dev/null || true
"$ibfab" topo check "$out/ibnetdiscover.txt"

echo
echo "== capture: link training and directed-route discovery of the fabric"
"$ibfab" pcap sample -f "$out/default.topo" -w "$out/discovery.pcap"
"$ibfab" pcap decode "$out/discovery.pcap" > "$out/discovery.ibfab.txt"
tshark -r "$out/discovery.pcap" -V > "$out/discovery.tshark.txt" 2>/dev/null
tshark -r "$out/discovery.pcap" 2>/dev/null | sed -n '31,36p'
malformed=$(grep -c "Malformed" "$out/discovery.tshark.txt" || true)
echo "tshark: $(tshark -r "$out/discovery.pcap" 2>/dev/null | wc -l) frames, $malformed malformed"
[ "$malformed" -eq 0 ]

echo
echo "== fabric: the default fabric as real processes on veth links"
"$ibfab" up --name "$fabric"
"$ibfab" status --name "$fabric" > "$out/status.txt"
head -6 "$out/status.txt"
echo "..."
"$ibfab" exec "$fabric" ca4 -- ip -br link show p1
echo "-- ibsm on ca4 brings the subnet up"
"$ibfab" exec "$fabric" ca4 -- "$(dirname "$ibfab")/ibsm" --port sim --once | tee "$out/ibsm-once.txt" | head -8
"$ibfab" status --name "$fabric" > "$out/status-active.txt"
"$ibfab" status --name "$fabric" --json > "$out/status.json"
echo "ports Active: $(grep -c ' Active ' "$out/status-active.txt" || true)"
"$ibfab" down --name "$fabric"

echo
echo "== suite: traffic, a link cut, the SM's assimilation, the report"
# ibfab run brings the default fabric up again under its own name, starts
# ibsm as a daemon, runs traffic, cuts sw2-sw6, and tears everything down.
"$ibfab" run link-failure --out "$out"
echo "report: $out/link-failure/index.md (traffic.svg, capture.pcap, report.json)"
frames=$(tshark -r "$out/link-failure/capture.pcap" 2>/dev/null | wc -l)
malformed=$(tshark -r "$out/link-failure/capture.pcap" -V 2>/dev/null | grep -c "Malformed" || true)
echo "capture of the cut link: $frames frames, $malformed malformed (tshark)"
[ "$malformed" -eq 0 ]
left=$(ip netns list 2>/dev/null | grep -c -e "ibf-$fabric-" -e "ibf-s_link_failure-" || true)
echo "namespaces left: $left"
[ "$left" -eq 0 ]

echo
echo "demo output in $out:"
ls -1 "$out"
