package clab_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/harness/clab"
	"ibfab/internal/ctl"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// The nodes' link timing in the lab: a far node's death over VXLAN is
// seen by the liveness timeout alone.
const (
	liveness  = time.Second
	keepalive = 250 * time.Millisecond
	// goodputLoad is the goodput check's offered load, % of the link: one
	// flow of about 2,300 packets a second, which a 2-core machine that
	// other tests share still moves over five processes.
	goodputLoad = 0.5
)

// lab is a fabric spread over two "hosts" the way containerlab spreads
// one over two machines: each host a network namespace holding one end
// of the underlay veth, each node a namespace of its own (its container)
// with its ports named eth1..ethN, a link inside a host a veth pair, a
// link between hosts a VXLAN device created in its host's namespace on
// the underlay and moved into the node's (containerlab's type vxlan).
type lab struct {
	t      *testing.T
	topo   *topologies.Topology
	host   []int // host of each node
	dir    string
	hostNS [2]netns.NsHandle
	addr   [2]net.IP
	under  [2]string // the underlay veth end in each host
	nodeNS []netns.NsHandle
	procs  []*exec.Cmd
}

func (l *lab) nsName(x string) string { return fmt.Sprintf("clab%d-%s", os.Getpid(), x) }

// newNS makes a namespace deleted in cleanup.
func (l *lab) newNS(name string) netns.NsHandle {
	l.t.Helper()
	_ = netns.DeleteNamed(name)
	h, err := fabricnet.NewNamespace(name)
	require.NoError(l.t, err)
	l.t.Cleanup(func() {
		h.Close()
		if err := netns.DeleteNamed(name); err != nil {
			l.t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	return h
}

func newLab(t *testing.T, topo *topologies.Topology, host []int) *lab {
	l := &lab{t: t, topo: topo, host: host, dir: t.TempDir()}
	require.NoError(t, topologies.WriteFile(filepath.Join(l.dir, clab.TopologyFile), topo))
	for h := range 2 {
		l.hostNS[h] = l.newNS(l.nsName("h" + strconv.Itoa(h+1)))
		l.addr[h] = net.IPv4(10, 77, 1, byte(h+1))
		l.under[h] = "clabu" + strconv.Itoa(h+1)
	}
	require.NoError(t, fabricnet.AddUnderlay(l.hostNS[0], l.under[0], l.addr[0], l.hostNS[1], l.under[1], l.addr[1]))
	l.nodeNS = make([]netns.NsHandle, topo.NumNodes())
	for i, n := range topo.Nodes() {
		l.nodeNS[i] = l.newNS(l.nsName(n.Name))
	}
	t.Cleanup(l.stop)
	return l
}

func (l *lab) socket(node string) string { return filepath.Join(l.dir, node+".sock") }

// start starts every node process in its namespace before any of its
// links exist, as containerlab starts a container before wiring it: the
// nodes wait for their interfaces (--port-wait).
func (l *lab) start() {
	l.t.Helper()
	l.procs = make([]*exec.Cmd, l.topo.NumNodes())
	for i := range l.topo.Nodes() {
		l.startNode(i)
	}
}

func (l *lab) startNode(i int) {
	l.t.Helper()
	n := l.topo.Node(i)
	bin := "ibhca"
	if n.Type == topologies.Switch {
		bin = "ibswitch"
	}
	logf, err := os.Create(filepath.Join(l.dir, n.Name+".log"))
	require.NoError(l.t, err)
	defer logf.Close()
	cmd := exec.Command(fabrictest.Bin(l.t, bin), "--fabric", "clab1", "--node", n.Name,
		"--topology", filepath.Join(l.dir, clab.TopologyFile), "--socket", l.socket(n.Name),
		"--port-names", clab.PortPrefix, "--port-wait", "30s",
		"--liveness", liveness.String(), "--keepalive", keepalive.String())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(l.t, fabricnet.DoIn(l.nodeNS[i], cmd.Start))
	l.procs[i] = cmd
	go cmd.Wait()
}

// stop kills the processes the test started, by their PIDs.
func (l *lab) stop() {
	for _, c := range l.procs {
		if c != nil && c.Process != nil {
			_ = c.Process.Kill()
		}
	}
	for _, c := range l.procs {
		if c != nil && c.Process != nil {
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if syscall.Kill(c.Process.Pid, 0) != nil {
					break
				}
			}
		}
	}
	if l.t.Failed() {
		for _, n := range l.topo.Nodes() {
			if b, err := os.ReadFile(filepath.Join(l.dir, n.Name+".log")); err == nil && len(b) > 0 {
				l.t.Logf("%s's log:\n%s", n.Name, b)
			}
		}
	}
}

// wire creates the links: veth pairs inside a host, VXLAN devices between
// hosts. It returns the links between hosts.
func (l *lab) wire() []topologies.Link {
	l.t.Helper()
	var cut []topologies.Link
	for i, k := range l.topo.Links() {
		a, b := k.A, k.B
		ifA, ifB := clab.PortPrefix+strconv.Itoa(a.Port), clab.PortPrefix+strconv.Itoa(b.Port)
		if l.host[a.Node] == l.host[b.Node] {
			l.veth(a.Node, ifA, b.Node, ifB)
			continue
		}
		cut = append(cut, k)
		vni := clab.DefaultVNIBase + i
		l.vxlan(a.Node, ifA, vni)
		l.vxlan(b.Node, ifB, vni)
	}
	return cut
}

// veth creates the veth pair ifA (in node a) - ifB (in node b) in one
// step, as a container engine does, MTU 9000.
func (l *lab) veth(a int, ifA string, b int, ifB string) {
	l.t.Helper()
	ha, err := netlink.NewHandleAt(l.nodeNS[a])
	require.NoError(l.t, err)
	defer ha.Close()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ifA, MTU: clab.DefaultVethMTU}, PeerName: ifB,
		PeerNamespace: netlink.NsFd(int(l.nodeNS[b]))}
	require.NoError(l.t, ha.LinkAdd(v), "veth %s/%s", ifA, ifB)
}

// vxlan creates node's port ifname as a VXLAN of vni on its host's
// underlay, to the other host, and moves it into the node's namespace:
// what ibfab up --hosts does (fabricnet.AddVXLAN).
func (l *lab) vxlan(node int, ifname string, vni int) {
	l.t.Helper()
	h := l.host[node]
	require.NoError(l.t, fabricnet.AddVXLAN(l.hostNS[h], l.under[h], l.addr[1-h], vni, l.nodeNS[node], ifname), "VXLAN %s", ifname)
}

func (l *lab) status(node string) (nodeproc.Status, error) {
	var st nodeproc.Status
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := ctl.Call(ctx, l.socket(node), "status", nil, &st)
	return st, err
}

// rx returns what node's port 1 received of the generators' packets.
func (l *lab) rx(node string) uint64 {
	st, err := l.status(node)
	if err != nil || len(st.Ports) == 0 || st.Ports[0].Traffic == nil {
		return 0
	}
	return st.Ports[0].Traffic.RxStamped
}

func (l *lab) call(node, op string, args, result any) {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(l.t, ctl.Call(ctx, l.socket(node), op, args, result), "%s %s", node, op)
}

// portState returns the state of node's port p, "" when unknown.
func (l *lab) portState(node string, p int) string {
	st, err := l.status(node)
	if err != nil {
		return ""
	}
	for _, ps := range st.Ports {
		if ps.Port == p {
			return ps.State
		}
	}
	return ""
}

// every reports whether every cabled port of every node is in state.
func (l *lab) every(state string) bool {
	for _, k := range l.topo.Links() {
		for _, p := range []topologies.PortRef{k.A, k.B} {
			if l.portState(l.topo.Node(p.Node).Name, p.Port) != state {
				return false
			}
		}
	}
	return true
}

// TestTwoHostsVXLAN: half of a fat tree on each of two hosts joined by an
// underlay, the links between the halves VXLAN devices: the nodes start
// before their links exist and find them as eth1..N, every link trains,
// an SM (ibsm, then OpenSM on a lab of its own) from an HCA of one host
// brings the whole fabric to Active, UD traffic between every host's CAs
// and a CA on the other host, which crosses the VXLAN links, arrives
// whole with every VXLAN link's credits accounted for, a flow across
// the hosts delivers what one on veth does, and a node killed on one host is seen Down by its neighbours on
// the other within the liveness timeout (the VXLAN keeps its carrier).
func TestTwoHostsVXLAN(t *testing.T) {
	testenv.RequireRoot(t)
	for _, sm := range []string{"ibsm", "opensm"} {
		t.Run(sm, func(t *testing.T) { twoHosts(t, sm) })
	}
}

func twoHosts(t *testing.T, smName string) {
	var smCmd *exec.Cmd
	switch smName {
	case "ibsm":
		smCmd = exec.Command(fabrictest.Bin(t, "ibsm"), "--port", "sim", "--once")
	case "opensm":
		testenv.RequireProgram(t, "opensm", "opensm")
		env, err := harness.UMADEnv("")
		if err != nil {
			testenv.Skip(t, "needs libumad2sim (Debian package libumad2sim0): "+err.Error())
		}
		smCmd = exec.Command("opensm", "--once", "-f", filepath.Join(t.TempDir(), "opensm.log"))
		smCmd.Env = append(os.Environ(), env...)
	}
	topo, err := topologies.FatTree(4, 2, 2)
	require.NoError(t, err)
	host, err := clab.Place(topo, 2, clab.Capacity(topo.NumNodes(), 2))
	require.NoError(t, err)
	l := newLab(t, topo, host)
	l.start()
	cut := l.wire()
	require.NotEmpty(t, cut)
	t.Logf("%d nodes on 2 hosts, %d of %d links over VXLAN", topo.NumNodes(), len(cut), topo.NumLinks())
	fabrictest.Wait(t, 30*time.Second, "every port trained (Init)", func() bool { return l.every("Init") })

	// The SM from a CA of host 1.
	var sm, far []string // CAs of host 1, host 2
	for i, n := range topo.Nodes() {
		if n.Type == topologies.CA {
			if host[i] == 0 {
				sm = append(sm, n.Name)
			} else {
				far = append(far, n.Name)
			}
		}
	}
	smi, _ := topo.Lookup(sm[0])
	smCmd.Dir = t.TempDir()
	began := time.Now()
	out, err := runIn(l.nodeNS[smi], smCmd)
	require.NoError(t, err, "%s:\n%s", smName, out)
	fabrictest.Wait(t, 10*time.Second, "every port Active", func() bool { return l.every("Active") })
	t.Logf("%s from %s: every port Active %v after it started", smName, sm[0], time.Since(began).Round(time.Millisecond))

	// Traffic: host 1's i-th CA and host 2's i-th CA send to each other.
	lid := func(node string) uint16 {
		st, err := l.status(node)
		require.NoError(t, err)
		return st.Ports[0].LID
	}
	pairs := map[string]string{}
	for i := range min(len(sm), len(far)) {
		pairs[sm[i]], pairs[far[i]] = far[i], sm[i]
	}
	for src, dst := range pairs {
		l.call(src, "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 0.2, Payload: 2048, Dests: []uint16{lid(dst)}, Seed: uint64(lid(src))}, nil)
	}
	start := time.Now()
	time.Sleep(3 * time.Second) // the traffic's length, not a wait for a condition
	sent := map[string]uint64{}
	for src := range pairs {
		var gs struct {
			Sent uint64 `json:"sent"`
		}
		l.call(src, "traffic-stop", map[string]any{"port": 1}, &gs)
		sent[pairs[src]] += gs.Sent
	}
	elapsed := time.Since(start)
	received := func() map[string]uint64 {
		rx := map[string]uint64{}
		for dst := range sent {
			if st, err := l.status(dst); err == nil && st.Ports[0].Traffic != nil {
				rx[dst] = st.Ports[0].Traffic.RxStamped
			}
		}
		return rx
	}
	var total uint64
	for _, n := range sent {
		total += n
	}
	require.Positive(t, total)
	fabrictest.Wait(t, 10*time.Second, "every packet sent received", func() bool {
		rx := received()
		for dst, n := range sent {
			if rx[dst] != n {
				return false
			}
		}
		return true
	})
	for dst, n := range received() {
		assert.Equal(t, sent[dst], n, "%s received", dst)
	}
	t.Logf("traffic: %d packets of 2 KiB over VXLAN between %d pairs in %v, none lost", total, len(pairs)/2, elapsed.Round(time.Millisecond))
	for _, n := range topo.Nodes() {
		st, err := l.status(n.Name)
		require.NoError(t, err)
		for _, p := range st.Ports {
			for cause, c := range p.Drops {
				assert.Zero(t, c, "%s port %d dropped %s", n.Name, p.Port, cause)
			}
		}
	}

	// Goodput: one flow across the hosts and one between two CAs of a
	// leaf (veth only), one after the other at the same offered load,
	// each delivers what it offers.
	caOnLeaf := map[string][]string{} // leaf -> its CAs on host 1
	for _, n := range sm {
		i, _ := topo.Lookup(n)
		peer, _ := topo.Peer(topologies.PortRef{Node: i, Port: 1})
		caOnLeaf[topo.Node(peer.Node).Name] = append(caOnLeaf[topo.Node(peer.Node).Name], n)
	}
	var local [2]string
	for _, cas := range caOnLeaf {
		if len(cas) >= 2 {
			local = [2]string{cas[0], cas[1]}
		}
	}
	require.NotEmpty(t, local[0], "two CAs of one leaf on host 1")
	goodput := func(src, dst string) float64 {
		rx0 := l.rx(dst)
		l.call(src, "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: goodputLoad, Payload: 2048, Dests: []uint16{lid(dst)}, Seed: 7}, nil)
		began := time.Now()
		time.Sleep(2 * time.Second) // the measurement's window, not a wait for a condition
		var gs struct {
			Offered uint64 `json:"offered"`
			Sent    uint64 `json:"sent"`
		}
		l.call(src, "traffic-stop", map[string]any{"port": 1}, &gs)
		window := time.Since(began)
		fabrictest.Wait(t, 10*time.Second, "the flow received whole", func() bool { return l.rx(dst)-rx0 == gs.Sent })
		assert.GreaterOrEqual(t, float64(gs.Sent), 0.95*float64(gs.Offered), "%s -> %s sent of offered", src, dst)
		return float64(gs.Sent) / window.Seconds()
	}
	overVXLAN := goodput(sm[0], far[0])
	overVeth := goodput(local[0], local[1])
	t.Logf("goodput at %g %% of 4x SDR, 2 KiB packets: %s -> %s over VXLAN %.0f packets/s, %s -> %s on one leaf %.0f packets/s",
		goodputLoad, sm[0], far[0], overVXLAN, local[0], local[1], overVeth)
	assert.InEpsilon(t, overVeth, overVXLAN, 0.1, "goodput over VXLAN as on veth")

	// Credits intact across every VXLAN link: each end's FCTBS (blocks
	// sent) is the other's ABR (blocks received), VL by VL.
	portOf := func(r topologies.PortRef) nodeproc.PortStatus {
		st, err := l.status(topo.Node(r.Node).Name)
		require.NoError(t, err)
		for _, p := range st.Ports {
			if p.Port == r.Port {
				return p
			}
		}
		t.Fatalf("%s has no port %d", topo.Node(r.Node).Name, r.Port)
		return nodeproc.PortStatus{}
	}
	var blocks uint64
	for _, k := range cut {
		for _, ends := range [][2]topologies.PortRef{{k.A, k.B}, {k.B, k.A}} {
			from, to := portOf(ends[0]), portOf(ends[1])
			require.Len(t, to.Credits, len(from.Credits))
			for vl, c := range from.Credits {
				assert.Equal(t, c.FCTBS, to.Credits[vl].ABR, "%s port %d VL%d FCTBS / peer's ABR",
					topo.Node(ends[0].Node).Name, ends[0].Port, vl)
			}
			blocks += from.Counters.PortXmitData
		}
	}
	require.Positive(t, blocks, "data crossed the VXLAN links")

	// A far death: kill the switch of host 2 with the most VXLAN links.
	links := map[int][]topologies.PortRef{} // node of host 2 -> its peers' ports on host 1
	for _, k := range cut {
		a, b := k.A, k.B
		if host[a.Node] == 0 {
			a, b = b, a
		}
		links[a.Node] = append(links[a.Node], b)
	}
	victim := -1
	for n, ps := range links {
		if topo.Node(n).Type == topologies.Switch && (victim < 0 || len(ps) > len(links[victim])) {
			victim = n
		}
	}
	require.GreaterOrEqual(t, victim, 0)
	require.NoError(t, l.procs[victim].Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	seen := map[topologies.PortRef]time.Duration{}
	deadline := killed.Add(liveness + 2*time.Second)
	for len(seen) < len(links[victim]) && time.Now().Before(deadline) {
		for _, p := range links[victim] {
			if _, ok := seen[p]; !ok && l.portState(topo.Node(p.Node).Name, p.Port) == "Down" {
				seen[p] = time.Since(killed)
			}
		}
		time.Sleep(5 * time.Millisecond) // polling the nodes' status
	}
	require.Len(t, seen, len(links[victim]), "every VXLAN neighbour of %s saw it die", topo.Node(victim).Name)
	for p, d := range seen {
		t.Logf("%s killed: %s port %d Down after %v (liveness %v, keepalive %v)", topo.Node(victim).Name, topo.Node(p.Node).Name, p.Port, d.Round(time.Millisecond), liveness, keepalive)
		// The last link packet came at most a keepalive before the kill,
		// so the timeout fires between liveness-keepalive and liveness
		// after it; more slack above for a loaded machine.
		assert.GreaterOrEqual(t, d, liveness-keepalive-50*time.Millisecond, "seen sooner than liveness allows: not by the timeout")
		assert.LessOrEqual(t, d, liveness+300*time.Millisecond, "seen later than the liveness bound")
	}
}

// runIn runs cmd in namespace ns and returns its output.
func runIn(ns netns.NsHandle, cmd *exec.Cmd) ([]byte, error) {
	var out []byte
	var err error
	if derr := fabricnet.DoIn(ns, func() error {
		out, err = cmd.CombinedOutput()
		return nil
	}); derr != nil {
		return nil, derr
	}
	return out, err
}
