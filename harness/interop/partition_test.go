package interop_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TestPartitions runs OpenSM with a partitions.conf and part_enforce both
// on two switches with two hosts each (ca1-1, where OpenSM runs, and
// ca1-2 on sw1; ca2-1 and ca2-2 on sw2):
//
//	Default 0x7fff  every port full
//	pfull   0x0010  ca1-2, ca2-1 full
//	plim    0x0020  ca1-2, ca2-1 limited; ca2-2 full
//
// and checks what silicon does with it: the switch ports facing hosts
// hold their host's keys and enforce both ways (smpquery pkeys and
// portinfo); flows sent in a partition both ends belong to arrive; a
// limited member's flow to a full member arrives; two limited members
// cannot talk, the receiver dropping it; a P_Key the sender's switch port
// does not hold is dropped at that switch port on the way in
// (PortRcvConstraintErrors), one the receiver's switch port does not hold
// on the way out (PortXmitConstraintErrors), both read with perfquery.
func TestPartitions(t *testing.T) {
	topo, guid := partTopo(t)
	f := fabrictest.Up(t, "part", topo, harness.UpOptions{})
	conf := writePartConf(t, fmt.Sprintf("Default=0x7fff, ipoib : ALL=full ;\n"+
		"pfull=0x0010 : 0x%016x=full, 0x%016x=full ;\n"+
		"plim=0x0020 : 0x%016x=limited, 0x%016x=limited, 0x%016x=full ;\n",
		guid("ca1-2"), guid("ca2-1"), guid("ca1-2"), guid("ca2-1"), guid("ca2-2")))
	osm := f.StartOpenSM("ca1-1", "-P", conf, "-Z", "both")
	osm.WaitLog(t, 60*time.Second, 0, "SUBNET UP")

	facing := func(host string) partSwPort { return partFacing(t, f, host) }

	t.Run("switch tables", func(t *testing.T) {
		for _, tc := range []struct {
			host       string
			want, none []string
		}{
			{"ca1-2", []string{"0xffff", "0x8010", "0x0020"}, []string{"0x8020"}},
			{"ca2-1", []string{"0xffff", "0x8010", "0x0020"}, []string{"0x8020"}},
			{"ca2-2", []string{"0xffff", "0x8020"}, []string{"0x8010", "0x0010"}},
			{"ca1-1", []string{"0xffff"}, []string{"0x8010", "0x0010", "0x8020", "0x0020"}},
		} {
			sp := facing(tc.host)
			out := f.For(t).MustUMAD("ca1-1", "smpquery", "pkeys", strconv.Itoa(int(sp.lid)), strconv.Itoa(sp.port))
			for _, k := range tc.want {
				if !strings.Contains(out, k) {
					t.Errorf("%s port %d (to %s): pkeys lack %s:\n%s", sp.sw, sp.port, tc.host, k, out)
				}
			}
			for _, k := range tc.none {
				if strings.Contains(out, k) {
					t.Errorf("%s port %d (to %s): pkeys hold %s:\n%s", sp.sw, sp.port, tc.host, k, out)
				}
			}
			pi := f.For(t).MustUMAD("ca1-1", "smpquery", "portinfo", strconv.Itoa(int(sp.lid)), strconv.Itoa(sp.port))
			t.Logf("%s port %d (to %s): smpquery pkeys:\n%s", sp.sw, sp.port, tc.host, out)
			for _, field := range []string{"PartEnforceInb", "PartEnforceOutb"} {
				if !regexp.MustCompile(field + `:\.*1\b`).MatchString(pi) {
					t.Errorf("%s port %d (to %s): %s not 1:\n%s", sp.sw, sp.port, tc.host, field, pi)
				}
			}
		}
		si := f.For(t).MustUMAD("ca1-1", "smpquery", "switchinfo", strconv.Itoa(int(facing("ca1-2").lid)))
		for _, re := range []string{`PartEnforceCap:\.*64\b`, `InboundPartEnf:\.*1\b`, `OutboundPartEnf:\.*1\b`} {
			if !regexp.MustCompile(re).MatchString(si) {
				t.Errorf("switchinfo does not match %s:\n%s", re, si)
			}
		}
	})

	// ca2-2 also claims partition 0x0030, which OpenSM gave nobody: its
	// switch port does not hold it.
	partAddPKey(t, f, "ca2-2", 0x8030)
	partTraffic(t, f, partFlows)
}

// partSwPort is a switch port: the switch's name and LID, the port number.
type partSwPort struct {
	sw   string
	lid  uint16
	port int
}

// partFacing returns the switch port host's port 1 is cabled to.
func partFacing(t *testing.T, f *fabrictest.Fabric, host string) partSwPort {
	t.Helper()
	i, _ := f.Topo.Lookup(host)
	p, ok := f.Topo.Peer(topologies.PortRef{Node: i, Port: 1})
	if !ok {
		t.Fatalf("%s is not cabled", host)
	}
	sw := f.Topo.Node(p.Node).Name
	return partSwPort{sw: sw, lid: portStatus(t, f, sw, p.Port).LID, port: p.Port}
}

// partPerfCounter checks with perfquery, from OpenSM's host, that counter
// of switch port sp is not 0.
func partPerfCounter(t *testing.T, f *fabrictest.Fabric, sp partSwPort, counter string) {
	t.Helper()
	out := f.For(t).MustUMAD("ca1-1", "perfquery", strconv.Itoa(int(sp.lid)), strconv.Itoa(sp.port))
	m := regexp.MustCompile(counter + `:\.*(\d+)`).FindStringSubmatch(out)
	if m == nil || m[1] == "0" {
		t.Errorf("perfquery %s port %d: %s not counted:\n%s", sp.sw, sp.port, counter, out)
	}
	t.Logf("perfquery %s port %d: %s", sp.sw, sp.port, m[0])
}

// partStatusDrops checks that ibfab status shows P_Key violations among
// the drops of switch port sp.
func partStatusDrops(t *testing.T, f *fabrictest.Fabric, sp partSwPort) {
	t.Helper()
	if d := portStatus(t, f, sp.sw, sp.port).Drops; d["pkey_violation"] == 0 {
		t.Errorf("ibfab status: %s port %d drops %v, want pkey_violation", sp.sw, sp.port, d)
	}
}

// partAddPKey puts k into the first free entry of block 0 of host's own
// P_Key table, as a hostile or misconfigured host would: a directed-route
// Get and Set of hop count 0 from the host's own SMI (the node's "mad"
// op), which its switch port knows nothing of.
func partAddPKey(t *testing.T, f *fabrictest.Fabric, host string, k mad.PKey) {
	t.Helper()
	dr := func(m mad.Method, data []byte) []byte {
		b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: m, TransactionID: uint64(0x9a7) << 32,
			AttrID: mad.AttrPKeyTable, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		var r nodeproc.ReceivedMAD
		f.For(t).MustCall(host, "mad", nodeproc.MADArgs{Port: 1, DLID: mad.PermissiveLID, MAD: b, TimeoutMS: 2000}, &r)
		d := mad.DRSMP(r.MAD)
		if !d.IsValid() || d.Status() != mad.StatusOK {
			t.Fatalf("%s: %v P_KeyTable: % x", host, m, r.MAD)
		}
		return append([]byte(nil), d.Data()...)
	}
	tbl := dr(mad.MethodGet, nil)
	for i := 0; i < mad.PKeysPerBlock; i++ {
		if mad.PKeyTable(tbl).PKey(i).Base() == 0 {
			mad.PKeyTable(tbl).SetPKey(i, k)
			dr(mad.MethodSet, tbl)
			return
		}
	}
	t.Fatalf("%s: block 0 of the P_Key table is full", host)
}

// partFlow is a flow sent with a P_Key, and where it must end:
// "delivered", "receiver" (the destination CA drops it), "ingress" (the
// source's switch port), "egress" (the destination's switch port).
type partFlow struct {
	name     string
	src, dst string
	pkey     uint16
	want     string
}

// partFlows are the flows of TestPartitions' file (and of
// TestPartitionsIBSM's, which has its partitions and more), with ca2-2
// claiming 0x0030, which its switch port does not hold.
var partFlows = []partFlow{
	{"full members of pfull", "ca1-2", "ca2-1", 0x8010, "delivered"},
	{"limited to full member of plim", "ca1-2", "ca2-2", 0x8020, "delivered"},
	{"full to limited member of plim", "ca2-2", "ca2-1", 0x8020, "delivered"},
	{"two limited members of plim", "ca1-2", "ca2-1", 0x8020, "receiver"},
	{"a key the source's switch port lacks", "ca2-2", "ca1-2", 0x8030, "ingress"},
	{"a key the destination's switch port lacks", "ca2-2", "ca1-1", 0x8020, "egress"},
}

// partTraffic sends each flow and checks where it ends, with the
// switches' PortRcvConstraintErrors and PortXmitConstraintErrors read by
// perfquery from ca1-1 where a switch drops it.
func partTraffic(t *testing.T, f *fabrictest.Fabric, flows []partFlow) {
	facing := func(host string) partSwPort { return partFacing(t, f, host) }
	lid := func(host string) uint16 { return portStatus(t, f, host, 1).LID }
	for _, tc := range flows {
		t.Run(tc.name, func(t *testing.T) {
			in, out := facing(tc.src), facing(tc.dst)
			partQuiet(t, f, tc.dst)
			rx0 := portStatus(t, f, tc.dst, 1).Traffic.RxPackets
			drop0 := portStatus(t, f, tc.dst, 1).Drops["pkey_violation"]
			rcv0 := portStatus(t, f, in.sw, in.port).Counters.PortRcvConstraintErrors
			xmit0 := portStatus(t, f, out.sw, out.port).Counters.PortXmitConstraintErrors
			f.For(t).MustCall(tc.src, "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: fabrictest.PairLoad,
				Payload: 256, Dests: []uint16{lid(tc.dst)}, Seed: 1, PKey: tc.pkey}, nil)
			defer f.For(t).StopTraffic([]string{tc.src})
			arrived := func() bool { return portStatus(t, f, tc.dst, 1).Traffic.RxPackets >= rx0+5 }
			var where func() bool
			switch tc.want {
			case "delivered":
				where = arrived
			case "receiver":
				where = func() bool { return portStatus(t, f, tc.dst, 1).Drops["pkey_violation"] >= drop0+5 }
			case "ingress":
				where = func() bool {
					return portStatus(t, f, in.sw, in.port).Counters.PortRcvConstraintErrors >= min(rcv0+5, 255)
				}
			case "egress":
				where = func() bool {
					return portStatus(t, f, out.sw, out.port).Counters.PortXmitConstraintErrors >= min(xmit0+5, 255)
				}
			}
			fabrictest.Wait(t, 20*time.Second, tc.want, where)
			if tc.want != "delivered" && arrived() {
				t.Errorf("%s received the flow", tc.dst)
			}
			if tc.want == "delivered" || tc.want == "receiver" {
				// Nothing was dropped at the switches on the way.
				rcv := portStatus(t, f, in.sw, in.port).Counters.PortRcvConstraintErrors
				xmit := portStatus(t, f, out.sw, out.port).Counters.PortXmitConstraintErrors
				if rcv != rcv0 || xmit != xmit0 {
					t.Errorf("switches dropped the flow: PortRcvConstraintErrors %d→%d at %s port %d, PortXmitConstraintErrors %d→%d at %s port %d",
						rcv0, rcv, in.sw, in.port, xmit0, xmit, out.sw, out.port)
				}
			}
			// perfquery reads the switch's counters as OpenSM's PerfMgr would.
			switch tc.want {
			case "delivered":
				t.Logf("%s received %d packets", tc.dst, portStatus(t, f, tc.dst, 1).Traffic.RxPackets-rx0)
			case "receiver":
				t.Logf("%s dropped %d packets for their P_Key", tc.dst, portStatus(t, f, tc.dst, 1).Drops["pkey_violation"]-drop0)
			case "ingress":
				partPerfCounter(t, f, in, "PortRcvConstraintErrors")
				partStatusDrops(t, f, in)
			case "egress":
				partPerfCounter(t, f, out, "PortXmitConstraintErrors")
				partStatusDrops(t, f, out)
			}
		})
	}
}

// partQuiet waits until host's port 1 has received nothing (delivered or
// dropped) for 200 ms: the packets of the flow before, which a loaded
// machine may still be moving after its source stopped, are not counted
// for the next.
func partQuiet(t *testing.T, f *fabrictest.Fabric, host string) {
	t.Helper()
	seen := func() uint64 {
		st := portStatus(t, f, host, 1)
		return st.Traffic.RxPackets + st.Drops["pkey_violation"]
	}
	last, since := seen(), time.Now()
	fabrictest.Wait(t, 10*time.Second, host+" quiet", func() bool {
		if n := seen(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 200*time.Millisecond
	})
}

// partTopo is the partition tests' fabric, two switches with two hosts
// each, and the port GUID of a host by name.
func partTopo(t *testing.T) (*topologies.Topology, func(string) uint64) {
	t.Helper()
	topo, err := topologies.Irregular(2, 4, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	return topo, func(name string) uint64 {
		i, ok := topo.Lookup(name)
		if !ok {
			t.Fatalf("no node %s", name)
		}
		return topo.Node(i).Ports[1].GUID
	}
}

// writePartConf writes text to a partitions.conf of the test's and
// returns its path.
func writePartConf(t *testing.T, text string) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "partitions.conf")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("partitions.conf:\n%s", text)
	return conf
}
