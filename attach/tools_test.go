package attach_test

// The attach point in front of an in-process fabric, driven by Debian's
// real infiniband-diags through libumad2sim.so and by our own simclient,
// in a throwaway network namespace (the sockets are abstract, so per
// namespace, under the default name "sim").
//
//	smpquery, ibnetdiscover, ─ LD_PRELOAD=libumad2sim.so ─┐
//	opensm                                                │
//	simclient ────────────────────────────────────────────┤ attach.Server ─ ca-a ═ sw1 ═ sw2 ═ ca-b
//	                                                                                ╚═ ca-c

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netns"

	"ibfab/attach"
	"ibfab/hca"
	"ibfab/internal/ibsimrun"
	"ibfab/internal/testsupport/netnstest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/link"
	"ibfab/link/pipe"
	"ibfab/simclient"
	"ibfab/softswitch"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// toolFabric is the model: ca-a (the attach point) on sw1, sw1 to sw2,
// ca-b on sw2, ca-c on sw1.
func toolFabric(t *testing.T) *topologies.Topology {
	t.Helper()
	topo := topologies.New()
	add := func(typ topologies.NodeType, name string, ports int, n int) int {
		i, err := topo.AddNode(topologies.Node{Type: typ, Name: name, Description: "ibf-t " + name, NumPorts: ports, GUID: topologies.GeneratedGUID(n)})
		require.NoError(t, err)
		return i
	}
	a := add(topologies.CA, "ca-a", 1, 1)
	s1 := add(topologies.Switch, "sw1", 4, 2)
	s2 := add(topologies.Switch, "sw2", 4, 3)
	b := add(topologies.CA, "ca-b", 1, 4)
	c := add(topologies.CA, "ca-c", 1, 5)
	for _, l := range [][2]topologies.PortRef{
		{{Node: a, Port: 1}, {Node: s1, Port: 1}},
		{{Node: s1, Port: 2}, {Node: s2, Port: 1}},
		{{Node: s2, Port: 2}, {Node: b, Port: 1}},
		{{Node: s1, Port: 3}, {Node: c, Port: 1}},
	} {
		require.NoError(t, topo.Connect(l[0], l[1], topologies.Width4x, topologies.SpeedSDR))
	}
	return topo
}

// buildFabric brings topo up in process on the real clock, with srv as the
// MAD client of node 0, and returns node 0's HCA.
func buildFabric(t *testing.T, topo *topologies.Topology, srv *attach.Server) *hca.HCA {
	t.Helper()
	ends := map[topologies.PortRef]link.Endpoint{}
	for _, l := range topo.Links() {
		ends[l.A], ends[l.B] = pipe.NewPairWith(pipe.Options{QueueLen: 8192,
			NameA: fmt.Sprintf("%s/%d", topo.Node(l.A.Node).Name, l.A.Port),
			NameB: fmt.Sprintf("%s/%d", topo.Node(l.B.Node).Name, l.B.Port)})
	}
	var home *hca.HCA
	for i, n := range topo.Nodes() {
		eps := make([]link.Endpoint, n.NumPorts+1)
		for p := 1; p <= n.NumPorts; p++ {
			eps[p] = ends[topologies.PortRef{Node: i, Port: p}]
		}
		switch n.Type {
		case topologies.Switch:
			s, err := softswitch.New(softswitch.Config{Name: n.Name, NumPorts: n.NumPorts, NodeGUID: n.GUID, Description: n.Description, Ports: eps})
			require.NoError(t, err, n.Name)
			t.Cleanup(s.Close)
		case topologies.CA:
			cfg := hca.Config{NodeGUID: n.GUID, Description: n.Description, Ports: eps[1:]}
			if i == 0 {
				cfg.MADClient = srv
			}
			h, err := hca.New(cfg)
			require.NoError(t, err, n.Name)
			t.Cleanup(func() { h.Close() })
			if i == 0 {
				home = h
			}
		}
	}
	return home
}

// umad2simLib finds Debian's libumad2sim.so.
func umad2simLib(t *testing.T) string {
	t.Helper()
	return testenv.RequireFile(t, ibsimrun.UMAD2SimPackage, ibsimrun.UMAD2SimGlobs...)
}

// tool runs a diagnostic in namespace ns through umad2sim and returns its
// output.
func tool(t *testing.T, ns string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, "env", "LD_PRELOAD=" + umad2simLib(t)}, args...)...)
	cmd.Dir = t.TempDir() // umad2sim writes its fake sysfs under the working directory
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "%s: %s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}

var nodeGUIDLine = regexp.MustCompile(`(?m)^Guid:\.*0x([0-9a-f]+)$`)

func smpqueryGUID(t *testing.T, out string) uint64 {
	t.Helper()
	m := nodeGUIDLine.FindStringSubmatch(out)
	require.NotNil(t, m, "no Guid line in:\n%s", out)
	var g uint64
	_, err := fmt.Sscanf(m[1], "%x", &g)
	require.NoError(t, err)
	return g
}

// links returns a topology's links by node GUID and port, sorted.
func links(topo *topologies.Topology) []string {
	var out []string
	for _, l := range topo.Links() {
		a := fmt.Sprintf("%016x/%d", topo.Node(l.A.Node).GUID, l.A.Port)
		b := fmt.Sprintf("%016x/%d", topo.Node(l.B.Node).GUID, l.B.Port)
		if b < a {
			a, b = b, a
		}
		out = append(out, a+" "+b)
	}
	slices.Sort(out)
	return out
}

func TestTools(t *testing.T) {
	testenv.RequireRoot(t)
	for _, p := range []struct{ program, pkg string }{
		{"smpquery", "infiniband-diags"}, {"ibnetdiscover", "infiniband-diags"}, {"opensm", "opensm"},
	} {
		testenv.RequireProgram(t, p.program, p.pkg)
	}
	umad2simLib(t)
	topo := toolFabric(t)
	srv, err := attach.New(attach.Config{NodeID: topo.Node(0).Name})
	require.NoError(t, err)
	home := buildFabric(t, topo, srv)
	require.NoError(t, srv.Attach(home))
	name := netnstest.Name("")
	ns := netnstest.NewNS(t, name)
	require.NoError(t, netnstest.Do(ns, srv.Start))
	t.Cleanup(func() { srv.Close() })

	t.Run("smpquery", func(t *testing.T) {
		for _, tt := range []struct {
			path string
			node int
		}{{"0", 0}, {"0,1", 1}, {"0,1,2", 2}, {"0,1,2,2", 3}, {"0,1,3", 4}} {
			out := tool(t, name, "smpquery", "-D", "nodeinfo", tt.path)
			assert.Equal(t, topo.Node(tt.node).GUID, smpqueryGUID(t, out), "smpquery -D nodeinfo %s should reach %s", tt.path, topo.Node(tt.node).Name)
		}
		out := tool(t, name, "smpquery", "-D", "nodedesc", "0,1,2,2")
		assert.Contains(t, out, "ibf-t ca-b")
	})

	t.Run("ibnetdiscover", func(t *testing.T) {
		out := tool(t, name, "ibnetdiscover")
		disc, err := topologies.Parse(strings.NewReader(out), "ibnetdiscover output")
		require.NoError(t, err, out)
		for _, n := range topo.Nodes() {
			j, ok := disc.LookupGUID(n.GUID)
			if assert.True(t, ok, "%s (GUID %#x) not discovered:\n%s", n.Name, n.GUID, out) {
				d := disc.Node(j)
				assert.Equal(t, n.Type, d.Type, n.Name)
				assert.Equal(t, n.NumPorts, d.NumPorts, n.Name)
				assert.Equal(t, n.Description, d.Description, n.Name)
			}
		}
		assert.Equal(t, topo.NumNodes(), disc.NumNodes())
		assert.Equal(t, links(topo), links(disc))
		assert.Contains(t, out, fmt.Sprintf("# Initiated from node %016x", topo.Node(0).GUID))
	})

	t.Run("simclient", func(t *testing.T) {
		c := dialIn(t, ns, simclient.Config{})
		info, err := c.Info()
		require.NoError(t, err)
		assert.Equal(t, topo.Node(0).GUID, info.NodeGUID)
		assert.Equal(t, topo.Node(0).GUID+1, info.PortGUID)
		for _, tt := range []struct {
			path []uint8
			node int
		}{{[]uint8{0, 1, 2}, 2}, {[]uint8{0, 1, 2, 2}, 3}} {
			resp := call(t, c, drGet(t, 0xabcd_0000_0000_0000|uint64(len(tt.path)), mad.AttrNodeInfo, 0, tt.path))
			require.Zero(t, resp.Status)
			ni, err := mad.DecodeNodeInfo(mad.DRSMP(resp.Data).Data())
			require.NoError(t, err)
			assert.Equal(t, topo.Node(tt.node).GUID, ni.NodeGUID, "path %v", tt.path)
		}
		require.NoError(t, c.SetIsSM(true))
		resp := call(t, c, drGet(t, 9, mad.AttrPortInfo, 1, nil))
		pi, err := mad.DecodePortInfo(mad.DRSMP(resp.Data).Data())
		require.NoError(t, err)
		assert.NotZero(t, pi.CapabilityMask&mad.PortCapIsSM)
	})

	t.Run("opensm", func(t *testing.T) {
		// OpenSM brings the fabric up through the attach point: LIDs set,
		// every port Active.
		log := filepath.Join(t.TempDir(), "opensm.log")
		out := tool(t, name, "opensm", "--once", "-f", log)
		assert.Contains(t, out, "Entering MASTER state")
		text, err := os.ReadFile(log)
		require.NoError(t, err)
		assert.Contains(t, string(text), "SUBNET UP")
		assert.NotZero(t, home.LID(1))
		ps := home.Stats().Ports[0]
		assert.Equal(t, "Active", ps.State)
		disc, err := topologies.Parse(strings.NewReader(tool(t, name, "ibnetdiscover")), "ibnetdiscover output")
		require.NoError(t, err)
		for _, n := range disc.Nodes() {
			lid := n.Ports[0].LID // a switch's
			if n.Type == topologies.CA {
				lid = n.Ports[1].LID
			}
			assert.NotZero(t, lid, "%s has no LID after OpenSM", n.Description)
		}
	})

	st := srv.Stats()
	t.Logf("attach point: %+v", st)
	assert.Zero(t, st.BadMessages)
	assert.Zero(t, st.Timeouts)
	assert.Zero(t, st.DropTotal, "%v", st.Drops)
	assert.GreaterOrEqual(t, st.Connects, uint64(8))
}

// dialIn attaches a client inside ns.
func dialIn(t *testing.T, ns netns.NsHandle, cfg simclient.Config) *simclient.Client {
	t.Helper()
	var c *simclient.Client
	err := netnstest.Do(ns, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		var err error
		c, err = simclient.Dial(ctx, cfg)
		return err
	})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}
