package harness_test

// Debian's infiniband-diags and OpenSM, unmodified, through `ibfab exec
// --umad` (libumad2sim and an HCA's attach point), against the default
// fabric; and `ibfab capture` of an OpenSM sweep, read back by tshark.

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/harness"
	"ibfab/harness/ibfabcli"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/tsharktest"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire"
)

// waitLong bounds the waits on OpenSM and traffic; nothing asserts on time.
const waitLong = 60 * time.Second

// diagFabric is a configured fabric and what its status says.
type diagFabric struct {
	*fabrictest.Fabric
	sm   string            // the HCA the SM ran on
	lid  map[string]uint16 // node name → base LID (a switch's port 0's)
	shim bool              // the diags run through ibfab's umad shim, not libumad2sim
}

// configure brings the subnet up with sm ("opensm" or "ibsm" through
// libumad2sim, "opensm-shim" through the umad shim) on node, and reads the
// LIDs it assigned.
func configure(t *testing.T, f *fabrictest.Fabric, sm, node string) *diagFabric {
	t.Helper()
	switch sm {
	case "opensm", "opensm-shim":
		log := filepath.Join(t.TempDir(), "opensm.log")
		if sm == "opensm" {
			f.For(t).MustUMAD(node, "opensm", "--once", "-f", log)
		} else {
			f.For(t).MustShim(node, "opensm", "--once", "-f", log)
		}
		b, err := os.ReadFile(log)
		require.NoError(t, err)
		require.Contains(t, string(b), "SUBNET UP", "opensm log:\n%s", tail(string(b), 30))
	case "ibsm":
		out := f.For(t).MustUMAD(node, fabrictest.Bin(t, "ibsm"), "--port", "sim", "--once")
		t.Logf("ibsm: %s", tail(out, 3))
	case "ibsm-softumad":
		// ibsm's umad port on the HCA's kernel-semantics endpoint.
		out, err := f.Exec(node, nil, fabrictest.Bin(t, "ibsm"), "--port", "softumad", "--once")
		require.NoError(t, err, "ibsm --port softumad:\n%s", out)
		t.Logf("ibsm: %s", tail(string(out), 3))
	}
	checkPorts(t, f, "Active")
	d := &diagFabric{Fabric: f, sm: node, lid: map[string]uint16{}, shim: strings.HasSuffix(sm, "-shim") || sm == "ibsm-softumad"}
	for _, n := range f.Status().Nodes {
		d.lid[n.Name] = n.Ports[0].LID
		require.NotZero(t, n.Ports[0].LID, "%s has no LID", n.Name)
	}
	return d
}

// sub returns d failing the subtest t.
func (d *diagFabric) sub(t *testing.T) *diagFabric {
	e := *d
	e.Fabric = d.For(t)
	return &e
}

// diag runs a diagnostic from HCA node through exec --umad and returns
// its standard output.
func (d *diagFabric) diag(t *testing.T, node string, argv ...string) string {
	t.Helper()
	if d.shim {
		return d.MustShim(node, argv...)
	}
	return d.MustUMAD(node, argv...)
}

// dotted parses the "Name:.....value" lines smpquery and perfquery print.
func dotted(out string) map[string]string {
	re := regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_ ]*?):?\.+(.*)$`)
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if s := re.FindStringSubmatch(strings.TrimSpace(l)); s != nil {
			m[s[1]] = strings.TrimSpace(s[2])
		}
	}
	return m
}

func num(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 0, 64)
	require.NoError(t, err, "%q", s)
	return v
}

// TestDiags configures the default fabric with OpenSM, then with our SM,
// then with OpenSM through the umad shim (the diags through it too), then
// with our SM's umad port on the HCA's MAD endpoint (softumad), and
// checks what infiniband-diags report, run from HCAs that are not the
// SM's, against the topology and ibfab status.
func TestDiags(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	for _, sm := range []string{"opensm", "ibsm", "opensm-shim", "ibsm-softumad"} {
		t.Run(sm, func(t *testing.T) {
			suffix := map[string]string{"opensm": "dgop", "ibsm": "dgib", "opensm-shim": "dgsh", "ibsm-softumad": "dgsu"}[sm]
			f := fabrictest.Up(t, suffix, topologies.Default(), harness.UpOptions{})
			d := configure(t, f, sm, "ca4")
			code, _, stderr := run("exec", "--umad", f.Name, "sw1", "--", "true")
			assert.Equal(t, harness.ExitFailure, code)
			assert.Contains(t, stderr, "only an HCA has an attach point")
			for _, c := range []struct {
				name string
				test func(*diagFabric, *testing.T)
			}{
				{"ibnetdiscover", (*diagFabric).testDiscover},
				{"smpquery", (*diagFabric).testSMPQuery},
				{"ibroute", (*diagFabric).testIbroute},
				{"ibtracert", (*diagFabric).testIbtracert},
				{"perfquery", (*diagFabric).testPerfquery},
				{"ibstat", (*diagFabric).testIbstat},
			} {
				t.Run(c.name, func(t *testing.T) { c.test(d.sub(t), t) })
			}
		})
	}
}

// testDiscover: ibnetdiscover's output, parsed with our topologies parser,
// is the fabric brought up: the same nodes by GUID (type, ports,
// description, port GUIDs), the same links at the same rates.
func (d *diagFabric) testDiscover(t *testing.T) {
	out := d.diag(t, "ca7", "ibnetdiscover")
	disc, err := topologies.Parse(strings.NewReader(out), "ibnetdiscover output")
	require.NoError(t, err, "ibnetdiscover printed:\n%s", out)
	model := d.Topo
	require.Equal(t, model.NumNodes(), disc.NumNodes())
	for _, n := range model.Nodes() {
		j, ok := disc.LookupGUID(n.GUID)
		if !assert.True(t, ok, "%s (GUID %#x) not discovered", n.Name, n.GUID) {
			continue
		}
		dn := disc.Node(j)
		assert.Equal(t, n.Type, dn.Type, n.Name)
		assert.Equal(t, n.NumPorts, dn.NumPorts, n.Name)
		assert.Equal(t, n.Description, dn.Description, n.Name)
		if n.Type == topologies.CA {
			for p := 1; p <= n.NumPorts; p++ {
				assert.Equal(t, n.Ports[p].GUID, dn.Ports[p].GUID, "%s port %d GUID", n.Name, p)
			}
		}
	}
	assert.Equal(t, linksByGUID(model), linksByGUID(disc))
}

// linksByGUID names each link by its ends' GUIDs and ports, with its rate.
func linksByGUID(tp *topologies.Topology) []string {
	var out []string
	for _, l := range tp.Links() {
		a := fmt.Sprintf("%016x[%d]", tp.Node(l.A.Node).GUID, l.A.Port)
		b := fmt.Sprintf("%016x[%d]", tp.Node(l.B.Node).GUID, l.B.Port)
		if b < a {
			a, b = b, a
		}
		out = append(out, a+"-"+b+" "+l.Width.String()+l.Speed.String())
	}
	slices.Sort(out)
	return out
}

// testSMPQuery: nodeinfo and nodedesc of every node, switchinfo of every
// switch, portinfo of every HCA port and of every port of one switch.
func (d *diagFabric) testSMPQuery(t *testing.T) {
	st := map[string]nodeproc.Status{}
	for _, n := range d.Status().Nodes {
		st[n.Name] = n.Status
	}
	maxLID := slices.Max(slices.Collect(maps.Values(d.lid)))
	for _, n := range d.Topo.Nodes() {
		lid := strconv.Itoa(int(d.lid[n.Name]))
		ni := dotted(d.diag(t, "ca7", "smpquery", "nodeinfo", lid))
		typ, portGUID := "Channel Adapter", n.Ports[1].GUID
		if n.Type == topologies.Switch {
			typ, portGUID = "Switch", n.GUID
		}
		assert.Equal(t, typ, ni["NodeType"], n.Name)
		assert.Equal(t, uint64(n.NumPorts), num(t, ni["NumPorts"]), n.Name)
		assert.Equal(t, n.GUID, num(t, ni["Guid"]), n.Name)
		assert.Equal(t, n.SystemImageGUID, num(t, ni["SystemGuid"]), n.Name)
		assert.Equal(t, portGUID, num(t, ni["PortGuid"]), n.Name)

		nd := dotted(d.diag(t, "ca7", "smpquery", "nodedesc", lid))
		assert.Equal(t, n.Description, nd["Node Description"], n.Name)

		if n.Type == topologies.Switch {
			si := dotted(d.diag(t, "ca7", "smpquery", "switchinfo", lid))
			assert.GreaterOrEqual(t, num(t, si["LinearFdbTop"]), uint64(maxLID), "%s LinearFDBTop", n.Name)
			assert.Equal(t, uint64(49152), num(t, si["LinearFdbCap"]), n.Name)
		}
	}
	portChecks := func(node string, port int) {
		s := st[node].Ports[port-1]
		pi := dotted(d.diag(t, "ca7", "smpquery", "portinfo", strconv.Itoa(int(d.lid[node])), strconv.Itoa(port)))
		where := fmt.Sprintf("%s[%d]", node, port)
		assert.Equal(t, s.State, pi["LinkState"], where)
		assert.Equal(t, s.Phys, pi["PhysLinkState"], where) // Polling when uncabled
		if s.State == "Active" {
			assert.Equal(t, "4X", pi["LinkWidthActive"], where)
			assert.Equal(t, "2.5 Gbps", pi["LinkSpeedActive"], where)
		}
		if d.Topo.Node(d.Index(node)).Type == topologies.CA {
			// A switch's LocalPort is the port the query came in by.
			assert.Equal(t, uint64(port), num(t, pi["LocalPort"]), where)
			assert.Equal(t, uint64(s.LID), num(t, pi["Lid"]), where)
			assert.Equal(t, uint64(d.lid[d.sm]), num(t, pi["SMLid"]), where)
		}
	}
	for _, h := range d.Hosts() {
		portChecks(h, 1)
	}
	for p := 1; p <= d.Topo.Node(d.Index("sw1")).NumPorts; p++ {
		portChecks("sw1", p) // port 4 is not cabled: Down
	}
}

// lft parses ibroute's output: destination LID → output port.
func lft(t *testing.T, out string) map[uint16]int {
	re := regexp.MustCompile(`(?m)^0x([0-9a-f]+) ([0-9]+) :`)
	m := map[uint16]int{}
	for _, s := range re.FindAllStringSubmatch(out, -1) {
		m[uint16(num(t, "0x"+s[1]))] = int(num(t, s[2]))
	}
	return m
}

// testIbroute: the LFT ibroute dumps of every switch routes every LID of
// the fabric, hop by hop over the topology's links, to the node that has it.
func (d *diagFabric) testIbroute(t *testing.T) {
	tables := map[int]map[uint16]int{}
	for i, n := range d.Topo.Nodes() {
		if n.Type == topologies.Switch {
			out := d.diag(t, "ca7", "ibroute", strconv.Itoa(int(d.lid[n.Name])))
			tables[i] = lft(t, out)
			require.NotEmpty(t, tables[i], "ibroute %s:\n%s", n.Name, out)
		}
	}
	for src := range tables {
		for dst, dl := range d.lid {
			at, hops := src, 0
			for ; hops < 16; hops++ {
				if d.Topo.Node(at).Type != topologies.Switch {
					break
				}
				p, ok := tables[at][dl]
				if !assert.True(t, ok, "%s has no route to LID %d", d.Topo.Node(at).Name, dl) || p == 0 {
					break
				}
				peer, ok := d.Topo.Peer(topologies.PortRef{Node: at, Port: p})
				if !assert.True(t, ok, "%s routes LID %d out of uncabled port %d", d.Topo.Node(at).Name, dl, p) {
					break
				}
				at = peer.Node
			}
			assert.Equal(t, dst, d.Topo.Node(at).Name, "LID %d from %s", dl, d.Topo.Node(src).Name)
		}
	}
}

// testIbtracert: the path ibtracert reports between two HCAs follows the
// topology's links, with the LIDs and GUIDs the fabric has, from one to
// the other.
func (d *diagFabric) testIbtracert(t *testing.T) {
	hop := regexp.MustCompile(`^\[(\d+)\] -> (switch|ca) port \{0x([0-9a-f]+)\}\[(\d+)\] lid (\d+)-\d+ "([^"]*)"$`)
	for _, pair := range [][2]string{{"ca11", "ca15"}, {"ca7", "ca14"}, {"ca13", "ca4"}} {
		src, dst := pair[0], pair[1]
		out := d.diag(t, "ca12", "ibtracert", strconv.Itoa(int(d.lid[src])), strconv.Itoa(int(d.lid[dst])))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.GreaterOrEqual(t, len(lines), 3, "ibtracert %s %s:\n%s", src, dst, out)
		assert.Contains(t, lines[0], fmt.Sprintf("From ca {%#016x} portnum 1 lid %d-%d \"%s\"", d.Topo.Node(d.Index(src)).GUID, d.lid[src], d.lid[src], src))
		assert.Contains(t, lines[len(lines)-1], fmt.Sprintf("To ca {%#016x} portnum 1 lid %d-%d \"%s\"", d.Topo.Node(d.Index(dst)).GUID, d.lid[dst], d.lid[dst], dst))
		at := d.Index(src)
		for _, l := range lines[1 : len(lines)-1] {
			m := hop.FindStringSubmatch(strings.TrimSpace(l))
			require.NotNil(t, m, "ibtracert hop %q", l)
			out, in := int(num(t, m[1])), int(num(t, m[4]))
			peer, ok := d.Topo.Peer(topologies.PortRef{Node: at, Port: out})
			require.True(t, ok, "%s port %d is not cabled (%q)", d.Topo.Node(at).Name, out, l)
			n := d.Topo.Node(peer.Node)
			guid := n.GUID
			if n.Type == topologies.CA {
				guid = n.Ports[in].GUID
			}
			assert.Equal(t, topologies.PortRef{Node: peer.Node, Port: in}, peer, l)
			assert.Equal(t, fmt.Sprintf("%016x", guid), m[3], l)
			assert.Equal(t, n.Name, m[6], l)
			assert.Equal(t, strconv.Itoa(int(d.lid[n.Name])), m[5], l)
			at = peer.Node
		}
		assert.Equal(t, dst, d.Topo.Node(at).Name, "ibtracert %s %s ends elsewhere:\n%s", src, dst, out)
	}
}

// testPerfquery: the PMA counters perfquery reads at an HCA move by at
// least what its traffic generator sent, and lie between the counters
// ibfab status shows just before and just after.
func (d *diagFabric) testPerfquery(t *testing.T) {
	const src, dst = "ca11", "ca15"
	lid := strconv.Itoa(int(d.lid[src]))
	perf := func() map[string]string { return dotted(d.diag(t, "ca7", "perfquery", lid, "1")) }
	before := perf()
	d.MustCall(src, "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 5, Payload: 256, Dests: []uint16{d.lid[dst]}, Seed: 1}, nil)
	fabrictest.Wait(t, waitLong, "UD packets at "+dst, func() bool {
		return d.Node(dst).Ports[0].Traffic.RxPackets > 50
	})
	var gen struct {
		Sent uint64 `json:"sent"`
	}
	d.MustCall(src, "traffic-stop", map[string]any{"port": 1}, &gen)
	require.NotZero(t, gen.Sent)
	mid := d.Node(src).Ports[0].Counters
	after := perf()
	end := d.Node(src).Ports[0].Counters
	for _, c := range []struct {
		name      string
		mid, end  uint64
		minGrowth uint64
	}{
		{"PortXmitPkts", mid.PortXmitPkts, end.PortXmitPkts, gen.Sent},
		{"PortXmitData", mid.PortXmitData, end.PortXmitData, gen.Sent * 256 / 4},
		{"PortRcvPkts", mid.PortRcvPkts, end.PortRcvPkts, 0},
		{"PortRcvData", mid.PortRcvData, end.PortRcvData, 0},
	} {
		b, a := num(t, before[c.name]), num(t, after[c.name])
		assert.GreaterOrEqual(t, a-b, c.minGrowth, "%s grew by %d, the generator sent %d", c.name, a-b, gen.Sent)
		assert.GreaterOrEqual(t, a, c.mid, "%s: perfquery %d, status before %d", c.name, a, c.mid)
		assert.LessOrEqual(t, a, c.end, "%s: perfquery %d, status after %d", c.name, a, c.end)
	}
}

// testIbstat: ibstat at an HCA shows its port as the attach point reports
// it: GUIDs, LID, SM LID, state.
func (d *diagFabric) testIbstat(t *testing.T) {
	out := d.diag(t, "ca7", "ibstat")
	n := d.Topo.Node(d.Index("ca7"))
	for _, want := range []string{
		fmt.Sprintf("Node GUID: %#016x", n.GUID),
		fmt.Sprintf("Port GUID: %#016x", n.Ports[1].GUID),
		fmt.Sprintf("Base lid: %d", d.lid["ca7"]),
		fmt.Sprintf("SM lid: %d", d.lid[d.sm]),
		"State: Active",
		"Physical state: LinkUp",
	} {
		assert.Contains(t, out, want)
	}
}

// TestSAQuery runs OpenSM as a daemon (the subnet administrator) at one
// HCA and saquery at others: the SA's answers cross the fabric back to
// saquery's attach point (GMP responses at a node that is not the SM's),
// and say what the fabric holds. The queries ask for one record each: the
// ibsim protocol carries one 256-byte MAD per message and umad2sim cuts
// what OpenSM sends to that, so a multi-segment (RMPP) answer arrives as
// its first segment only, as under ibsim itself.
func TestSAQuery(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	f := fabrictest.Up(t, "sa", topologies.Default(), harness.UpOptions{})
	log := filepath.Join(t.TempDir(), "opensm.log")
	osm := f.StartUMAD("ca4", "opensm", "-f", log, "-d2") // -d2: flush the log at every message
	fabrictest.Wait(t, waitLong, "OpenSM's SUBNET UP", func() bool {
		if exited, err := osm.Exited(); exited {
			t.Fatalf("opensm exited: %v\n%s", err, osm.Output())
		}
		b, _ := os.ReadFile(log)
		return bytes.Contains(b, []byte("SUBNET UP"))
	})
	checkPorts(t, f, "Active")
	lid := map[string]uint16{}
	for _, n := range f.Status().Nodes {
		lid[n.Name] = n.Ports[0].LID
	}
	for _, at := range []string{"ca7", "ca15", "ca4"} {
		t.Run(at, func(t *testing.T) {
			for _, n := range f.Topo.Nodes() {
				out := f.For(t).MustUMAD(at, "saquery", strconv.Itoa(int(lid[n.Name])))
				recs := strings.Split(out, "NodeRecord dump:")
				require.Len(t, recs, 2, "one NodeRecord for %s:\n%s", n.Name, out)
				m := dotted(recs[1])
				assert.Equal(t, uint64(lid[n.Name]), num(t, m["lid"]), n.Name)
				assert.Equal(t, n.GUID, num(t, m["node_guid"]), n.Name)
				assert.Equal(t, n.Description, m["NodeDescription"], n.Name)
			}
			for _, h := range []string{"ca11", "ca13"} {
				// saquery reads records up to the end of the one segment,
				// here a second one of zeros and the segment's tail: the
				// first is the answer.
				out := f.For(t).MustUMAD(at, "saquery", "PIR", strconv.Itoa(int(lid[h])))
				recs := strings.Split(out, "PortInfoRecord dump:")
				require.GreaterOrEqual(t, len(recs), 2, "a PortInfoRecord for %s:\n%s", h, out)
				m := dotted(recs[1])
				assert.Equal(t, uint64(lid[h]), num(t, m["EndPortLid"]), h)
				assert.Equal(t, uint64(lid[h]), num(t, m["Lid"]), h)
				assert.Equal(t, uint64(lid["ca4"]), num(t, m["SMLid"]), h)
				assert.Equal(t, "Active", m["LinkState"], h)
			}
		})
	}
	require.NoError(t, osm.Stop())
}

// TestCaptureOpenSMSweep captures the SM's port with `ibfab capture` while
// OpenSM sweeps the default fabric, stops it with SIGINT as Ctrl-C would,
// and has tshark decode the file with no options: SubnGet, SubnSet and
// SubnGetResp SMPs and flow-control packets, none malformed. Then it
// converts a tshark capture of a port (plain Ethernet) to the same format.
func TestCaptureOpenSMSweep(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	f := fabrictest.Up(t, "cap", topologies.Default(), harness.UpOptions{})
	dir := t.TempDir()
	file := filepath.Join(dir, "sweep.pcap")
	var stdout, stderr syncBuf
	done := make(chan int, 1)
	go func() { done <- ibfabcli.Main([]string{"capture", f.Name, "ca4[1]", "-w", file}, &stdout, &stderr) }()
	fabrictest.Wait(t, waitLong, "the capture to start", func() bool {
		select {
		case code := <-done:
			t.Fatalf("ibfab capture exited with %d: %s", code, stderr.String())
		default:
		}
		return strings.Contains(stderr.String(), "capturing")
	})
	fc := func() (uint64, uint64) {
		c := f.Node("ca4").Ports[0].Counters
		return c.FCSent, c.FCReceived
	}
	sent0, rcvd0 := fc()
	configure(t, f, "opensm", "ca4")
	// Flow-control packets both ways after the capture began; idle links
	// send one every few seconds.
	fabrictest.Wait(t, waitLong, "flow control both ways", func() bool {
		s, r := fc()
		return s > sent0 && r > rcvd0
	})
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	select {
	case code := <-done:
		require.Equal(t, harness.ExitOK, code, "stderr: %s", stderr.String())
	case <-time.After(waitLong):
		t.Fatal("ibfab capture did not stop on SIGINT")
	}
	m := regexp.MustCompile(`wrote (\d+) frames`).FindStringSubmatch(stdout.String())
	require.NotNil(t, m, "stdout: %q", stdout.String())

	pkts := tsharktest.DecodeFile(t, file)
	require.Equal(t, m[1], strconv.Itoa(len(pkts)), "frames written vs decoded")
	methods := map[string]int{}
	links := 0
	for i, p := range pkts {
		assert.Empty(t, p.Problems(), "frame %d", i+1)
		if v, ok := p.Get("infiniband.mad.method"); ok {
			methods[v]++
		}
		if _, ok := p.Get("infiniband_link.op"); ok {
			links++
		}
	}
	t.Logf("%d frames: methods %v, %d link packets", len(pkts), methods, links)
	for _, want := range []string{"0x01", "0x02", "0x81"} { // SubnGet, SubnSet, SubnGetResp
		assert.NotZero(t, methods[want], "method %s in %v", want, methods)
	}
	assert.NotZero(t, links, "flow-control packets")

	// tshark -i p1 in ca7's namespace sees the frames arriving at ca7's
	// port; --convert makes them the same ERF capture.
	eth := filepath.Join(dir, "p1.pcap")
	if out, err := f.Exec("ca7", nil, "tshark", "-q", "-i", "p1", "-c", "3", "-F", "pcap", "-w", eth); err != nil {
		t.Fatalf("tshark -i p1: %v\n%s", err, out)
	}
	conv := filepath.Join(dir, "conv.pcap")
	code, out, errOut := run("capture", "--convert", eth, "-w", conv)
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Contains(t, out, "wrote 3 frames")
	cf, err := os.Open(conv)
	require.NoError(t, err)
	defer cf.Close()
	r, err := capture.NewReader(cf)
	require.NoError(t, err)
	n := 0
	for rec, err := r.Next(); err == nil; rec, err = r.Next() {
		n++
		if rec.Type == capture.TypeInfiniBandLink {
			assert.NoError(t, wire.VerifyFlowControl(rec.Data))
		} else {
			assert.NoError(t, wire.Verify(rec.Data))
		}
	}
	assert.Equal(t, 3, n)
	for i, p := range tsharktest.DecodeFile(t, conv) {
		assert.Empty(t, p.Problems(), "converted frame %d", i+1)
	}
}

// syncBuf is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestUMADEnv: exec --umad preloads libumad2sim ahead of what is already
// preloaded and names the attach point; a switch has none.
func TestUMADEnv(t *testing.T) {
	lib := fabrictest.UMAD2Sim(t)
	t.Setenv("LD_PRELOAD", "/lib/other.so")
	env, err := harness.UMADEnv("mysim")
	require.NoError(t, err)
	assert.Equal(t, []string{"LD_PRELOAD=" + lib + ":/lib/other.so", "IBSIM_SOCKNAME=mysim"}, env)
	env, err = harness.UMADEnv("")
	require.NoError(t, err)
	assert.Contains(t, env, "IBSIM_SOCKNAME=sim")

	code, _, stderr := run("exec", "--umad", "nosuchfabric", "ca4", "--", "true")
	assert.Equal(t, harness.ExitFailure, code)
	assert.Contains(t, stderr, "not up")
}
