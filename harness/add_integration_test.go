package harness_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TestAddSwitch hot-adds the thesis's switch with two hosts to the running,
// Active default fabric, cabled to free ports of sw8 and sw9: the new links
// train to Init without disturbing the old ones, sw8 and sw9 report the
// change (PortStateChange, Trap 128 to the SM), ibsm --once then makes
// every port Active and UD traffic flows between new and old hosts. A
// piece whose node cannot start is undone completely first; bad pieces and
// bad cable requests are refused; a host added by the command line is
// watched by its switch like any neighbour; down leaves nothing behind.
func TestAddSwitch(t *testing.T) {
	fabrictest.BuildBinaries(t) // not part of the steps' times
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	f := fabrictest.Up(t, "add", topologies.Default(), harness.UpOptions{})
	step("up")
	ibsmOnce(t, f)
	checkPorts(t, f, "Active")
	step("ibsm --once: Active")
	sm := f.NewSM("ca4")
	piece := topologies.Thesis8AddPiece()

	// A piece whose switch cannot start (a bad flag) is undone: no
	// namespace, no veth in sw8's namespace, the recorded topology and
	// state as before.
	_, err := harness.Add(f.Name, piece, harness.AddOptions{NodeArgsFor: map[string][]string{"sw16": {"--no-such-flag"}}})
	require.ErrorContains(t, err, "sw16")
	require.ErrorContains(t, err, "the fabric is as it was")
	left, err := fabricnet.Namespaces(f.Name)
	require.NoError(t, err)
	assert.Len(t, left, f.Topo.NumNodes(), "namespaces after the undone add")
	require.NoError(t, fabricnet.Do(fabricnet.Namespace(f.Name, "sw8"), func() error {
		_, err := netlink.LinkByName("p3")
		assert.Error(t, err, "sw8's p3 left behind")
		return nil
	}))
	checkPorts(t, f, "Active")
	step("failed add undone")

	// The traps of the bring-up are answered and sw8's and sw9's
	// PortStateChange cleared, so that what follows is the add's.
	after, err := sm.DrainTraps(300 * time.Millisecond)
	require.NoError(t, err)
	for _, sw := range []string{"sw8", "sw9"} {
		d, err := sm.DR(mad.MethodGet, mad.AttrSwitchInfo, 0, nil, f.Index(sw))
		require.NoError(t, err)
		si, err := mad.DecodeSwitchInfo(d)
		require.NoError(t, err)
		si.PortStateChange = true // writing 1 clears it
		_, err = sm.DR(mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &si), f.Index(sw))
		require.NoError(t, err)
		require.False(t, portStateChange(t, sm, f.Index(sw)), "%s: PortStateChange not cleared", sw)
	}

	oldTopo := f.Topo
	step("traps drained")
	f.Add(piece, harness.AddOptions{})
	step("added")
	require.Equal(t, 18, f.Topo.NumNodes())
	// The new links are trained and wait for the SM; the old ones are
	// still Active.
	s := f.Status()
	require.Len(t, s.Nodes, f.Topo.NumNodes())
	for i, n := range s.Nodes {
		require.Equal(t, f.Topo.Node(i).Name, n.Name, "status order")
		assert.True(t, n.Alive, n.Name)
		for _, p := range n.Ports {
			peer, cabled := f.Topo.Peer(topologies.PortRef{Node: i, Port: p.Port})
			if !cabled {
				continue
			}
			want := "Active"
			if _, old := oldTopo.Peer(topologies.PortRef{Node: i, Port: p.Port}); !old || i >= oldTopo.NumNodes() {
				want = "Init"
			}
			assert.Equal(t, fabrictest.PortName(f.Topo, peer), p.Peer, "%s[%d] peer", n.Name, p.Port)
			assert.Equal(t, "LinkUp", p.Phys, "%s[%d]", n.Name, p.Port)
			assert.Equal(t, want, p.State, "%s[%d]", n.Name, p.Port)
		}
	}
	// Both switches the piece is cabled to tell the SM.
	want := map[uint16]string{f.Node("sw8").Ports[0].LID: "sw8", f.Node("sw9").Ports[0].LID: "sw9"}
	got := map[string]bool{}
	fabrictest.Wait(t, 10*time.Second, "Trap 128 from sw8 and sw9", func() bool {
		traps, err := sm.Traps(after, 100)
		require.NoError(t, err)
		for _, m := range traps {
			if lid, ok := fabrictest.TrapLID(m.MAD); ok && want[lid] != "" {
				got[want[lid]] = true
			}
		}
		return len(got) == 2
	})
	for _, sw := range []string{"sw8", "sw9"} {
		assert.True(t, portStateChange(t, sm, f.Index(sw)), "%s: PortStateChange not set", sw)
	}
	assert.False(t, portStateChange(t, sm, f.Index("sw2")), "sw2's PortStateChange set, though nothing changed there")

	step("traps seen")
	// The SM takes the new nodes in; new and old hosts talk.
	ibsmOnce(t, f)
	checkPorts(t, f, "Active")
	step("ibsm --once: Active")
	checkPairs(t, f, []string{"ca17", "ca13", "ca18", "ca4", "ca15"}, []int{1, 2, 3, 4})

	step("traffic between new and old hosts")
	// The same piece again, by the command line: refused, nothing changes.
	dir := t.TempDir()
	file := filepath.Join(dir, "piece.net")
	code, _, errOut := run("topo", "thesis8-piece", "-o", file)
	require.Equal(t, harness.ExitOK, code, errOut)
	code, _, errOut = run("add", f.Name, "-f", file)
	assert.Equal(t, harness.ExitFailure, code)
	assert.Contains(t, errOut, `bad piece: node "sw16" is in the fabric already`)
	// A switch takes a cable only on a free port no faster than its
	// silicon (its fastest link at start); an HCA never does.
	for _, c := range []struct {
		node string
		args nodeproc.CableArgs
		want string
	}{
		{"ca4", nodeproc.CableArgs{Port: 1}, "is an HCA"},
		{"sw8", nodeproc.CableArgs{Port: 3}, "port is cabled"},
		{"sw10", nodeproc.CableArgs{Port: 9}, "sw10 has ports 1-4"},
		{"sw10", nodeproc.CableArgs{Port: 4, Speed: topologies.SpeedQDR}, "faster than the node's silicon"},
		{"sw10", nodeproc.CableArgs{Port: 4}, "p4"}, // no veth end there
	} {
		err := f.Call(c.node, "cable", c.args, nil)
		assert.ErrorContains(t, err, c.want, "%s cable %+v", c.node, c.args)
	}

	// A host written by hand, added by the command line to sw5's free
	// port: sw5 watches its process like any neighbour's, so killing it
	// takes sw5[4] Down at once (the liveness timeout is 6 s).
	hand := "# one more host\ncaguid=0x2fab00000001300\nCa\t1 \"ca19\"\n[1]\t\"sw5\"[4]\n"
	require.NoError(t, os.WriteFile(file, []byte(hand), 0o644))
	code, out, errOut := run("add", f.Name, "-f", file)
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Contains(t, out, "1 to the fabric (ca19[1]-sw5[4]), trained (Init); the fabric has 19 nodes")
	p, err := topologies.ParsePieceFile(file)
	require.NoError(t, err)
	f.Topo, err = f.Topo.Extend(p)
	require.NoError(t, err)
	waitPort(t, f, "sw5", 4, "Init")
	code, out, errOut = run("status", "--name", f.Name)
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Regexp(t, `ca19 +hca +\d+ +1 +LinkUp +Init .* sw5\[4\]`, out)
	require.NoError(t, harness.Kill(f.Name, "ca19"))
	fabrictest.Within(t, f.PeerLossBound(), "sw5[4] Down after ca19 was killed", func() bool {
		_, st := portState(f, "sw5", 4)
		return st == "Down"
	})
	// Killed and restarted, the added switch trains with sw8 again.
	require.NoError(t, harness.Kill(f.Name, "sw16"))
	fabrictest.Within(t, f.PeerLossBound(), "sw8[3] Down after sw16 was killed", func() bool {
		_, st := portState(f, "sw8", 3)
		return st == "Down"
	})
	_, _, err = harness.Restart(f.Name, "sw16", 0)
	require.NoError(t, err)
	waitPort(t, f, "sw8", 3, "Init")

	step("host added, killed; switch killed, restarted")

	// Two adds at once both land: each extends the topology the other
	// recorded.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k, c := range []struct {
		host string
		at   string
	}{{"ca20", "sw10"}, {"ca21", "sw1"}} {
		hp := pieceOf(t, []topologies.Node{{Type: topologies.CA, Name: c.host, NumPorts: 1, GUID: topologies.GeneratedGUID(20 + k)}}, nil,
			topologies.Attachment{Node: c.host, Port: 1, BaseNode: c.at, BasePort: 4})
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[k] = harness.Add(f.Name, hp, harness.AddOptions{})
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	s = f.Status()
	require.Len(t, s.Nodes, 21)
	for _, n := range s.Nodes[19:] {
		require.Len(t, n.Ports, 1, n.Name)
		assert.Equal(t, "Init", n.Ports[0].State, n.Name)
	}
	assert.ElementsMatch(t, []string{"ca20", "ca21"}, []string{s.Nodes[19].Name, s.Nodes[20].Name})
	step("two hosts added at once")
	// Down removes the new nodes' namespaces and processes with the rest.
	var namespaces []string
	for _, n := range s.Nodes {
		namespaces = append(namespaces, fabricnet.Namespace(f.Name, n.Name))
	}
	code, _, errOut = run("down", "--name", f.Name)
	require.Equal(t, harness.ExitOK, code, errOut)
	left, err = fabricnet.Namespaces(f.Name)
	require.NoError(t, err)
	assert.Empty(t, left)
	pids, err := fabricnet.Processes(namespaces)
	require.NoError(t, err)
	assert.Empty(t, pids)
	_, err = os.Stat(filepath.Join(harness.RunDir, f.Name))
	assert.True(t, os.IsNotExist(err), "run directory left: %v", err)
}

// ibsmOnce runs ibsm --once from ca4 until it reports the subnet up, at
// most three times: on a loaded machine a sweep can run out of retries, and
// the next one starts from what the last one set, as a daemon's would.
func ibsmOnce(t *testing.T, f *fabrictest.Fabric) {
	t.Helper()
	var out []byte
	for try := 1; try <= 3; try++ {
		var err error
		out, err = f.Exec("ca4", nil, fabrictest.Bin(t, "ibsm"), "--port", "sim", "--once")
		if err == nil && regexp.MustCompile(`(?m)^sweep \d+: subnet up`).Match(out) {
			return
		}
		t.Logf("ibsm --once, try %d: %v\n%s", try, err, out)
	}
	t.Fatalf("ibsm --once did not bring the subnet up in 3 tries")
}

// portStateChange reads switch i's SwitchInfo.PortStateChange.
func portStateChange(t *testing.T, sm *fabrictest.SM, i int) bool {
	t.Helper()
	d, err := sm.DR(mad.MethodGet, mad.AttrSwitchInfo, 0, nil, i)
	require.NoError(t, err)
	return mad.SwitchInfo(d).PortStateChange()
}
