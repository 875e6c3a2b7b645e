package main

// ibsm on Debian's ibsim: for fat trees and irregular networks from the
// topologies generators, up to ibsim's limits (2048 nodes, 256 switches),
// the ibsm binary runs inside the simulator's namespace and brings the
// subnet up; then ibnetdiscover (through libumad2sim) sees every node with
// the LID ibsm gave it, ibroute shows the forwarding tables ibsm dumps
// (`ibsm routes --dump`), line for line, and ibsim's own console command
// Route follows the tables from source to destination: every ordered
// pair of LIDs on the small networks, a fixed sample on the big ones.
// Route walks at most 16 hops at once; longer up*/down* paths of the big
// irregular networks are followed in pieces (ibsimrun.Sim.Trace).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/ibsimrun"
	"ibfab/internal/testsupport/ibsimtest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/sm"
	"ibfab/topologies"
)

// ibsmBinary builds ibsm into the test's temporary directory.
func ibsmBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir, "ibfab/cmd/ibsm").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return filepath.Join(dir, "ibsm")
}

// waitLong bounds one external command on the biggest fabric: a hang
// fails instead of blocking the run; nothing asserts on time.
const waitLong = 10 * time.Minute

type ibsimCase struct {
	name string
	gen  func() (*topologies.Topology, error)
}

var ibsimCases = []ibsimCase{
	{"thesis8", func() (*topologies.Topology, error) { return topologies.Default(), nil }},
	{"fattree-4x2x3", func() (*topologies.Topology, error) { return topologies.FatTree(4, 2, 3) }},
	{"irregular16", func() (*topologies.Topology, error) { return topologies.Irregular(16, 4, 1, 7) }},
	{"fattree432", func() (*topologies.Topology, error) { return topologies.FatTree(18, 12, 24) }},
	{"irregular256", func() (*topologies.Topology, error) { return topologies.Irregular(256, 4, 1, 1) }},
	// At ibsim's limits: 2032 nodes; 256 switches and up to 2048 nodes.
	{"fattree-2032", func() (*topologies.Topology, error) { return topologies.FatTree(32, 16, 62) }},
	{"irregular256x7", func() (*topologies.Topology, error) { return topologies.Irregular(256, 8, 7, 3) }},
}

// Limits of the checks on big networks.
const (
	allPairsMax   = 40  // LIDs up to which Route checks every ordered pair
	routeSamples  = 400 // pairs Route checks beyond
	ibrouteAllMax = 16  // switches up to which every table is compared
	ibrouteSample = 6   // switches compared beyond
)

func TestIbsim(t *testing.T) {
	testenv.RequireRoot(t)
	bin := ibsmBinary(t)
	for _, c := range ibsimCases {
		t.Run(c.name, func(t *testing.T) {
			topo, err := c.gen()
			require.NoError(t, err)
			require.NoError(t, ibsimrun.CheckLimits(topo))
			checkOnIbsim(t, bin, topo)
		})
	}
}

func checkOnIbsim(t *testing.T, bin string, topo *topologies.Topology) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	sim := ibsimtest.StartT(t, topo)
	lidFile := filepath.Join(t.TempDir(), "guid2lid")

	// ibsm --once, inside the namespace.
	var stderr bytes.Buffer
	c := sim.Command(ctx, nil, bin, "--port", "sim", "--once", "--json", "--lid-file", lidFile)
	c.Stderr = &stderr
	out, err := c.Output()
	require.NoError(t, err, "ibsm: %s", stderr.String())
	var res sm.Result
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(out), &res), "%s", out)
	require.True(t, res.SubnetUp, "%s", out)
	assert.Equal(t, topo.Count(topologies.Switch), res.Switches)
	assert.Equal(t, topo.Count(topologies.CA), res.HCAs)
	assert.Equal(t, topo.NumLinks(), res.Links)
	t.Logf("ibsm: %d switches, %d CAs: %.1f ms, %d SMPs (%d retries, %d timeouts)",
		res.Switches, res.HCAs, res.MsTotal, res.SMPsTotal, res.Retries, res.Timeouts)

	lids, err := sm.LoadLIDMap(lidFile)
	require.NoError(t, err)
	lidOf := func(guid uint64) uint16 {
		base, _, ok := lids.Lookup(guid)
		require.True(t, ok, "no LID for GUID %#x", guid)
		return base
	}

	t.Run("ibnetdiscover", func(t *testing.T) {
		out, err := sim.Diag(ctx, "ibnetdiscover")
		require.NoError(t, err)
		got, err := topologies.Parse(bytes.NewReader(out), "ibnetdiscover")
		require.NoError(t, err)
		assert.Equal(t, topo.NumNodes(), got.NumNodes(), "nodes")
		assert.Equal(t, topo.NumLinks(), got.NumLinks(), "links")
		byGUID := map[uint64]*topologies.Node{}
		for _, n := range got.Nodes() {
			byGUID[n.GUID] = n
		}
		bad := 0
		for wi, want := range topo.Nodes() {
			n := byGUID[want.GUID]
			if !assert.NotNil(t, n, "node %s (%#x) not discovered", want.Name, want.GUID) {
				continue
			}
			assert.Equal(t, want.Type, n.Type, want.Name)
			for p := range want.Ports {
				if want.Type != topologies.Switch && p == 0 || want.Type == topologies.Switch && p > 0 {
					continue
				}
				if want.Type != topologies.Switch {
					if _, cabled := topo.LinkAt(topologies.PortRef{Node: wi, Port: p}); !cabled {
						continue
					}
				}
				guid := want.Ports[p].GUID
				if want.Type == topologies.Switch {
					guid = want.GUID
				}
				if n.Ports[p].LID != lidOf(guid) {
					bad++
					if bad <= 5 {
						t.Errorf("%s port %d: ibnetdiscover shows LID %d, ibsm gave %d", want.Name, p, n.Ports[p].LID, lidOf(guid))
					}
				}
			}
		}
		assert.Zero(t, bad, "ports with another LID than ibsm's")
	})

	t.Run("ibroute", func(t *testing.T) {
		var stderr bytes.Buffer
		c := sim.Command(ctx, nil, bin, "routes", "--dump", "--port", "sim", "--lid-file", lidFile)
		c.Stderr = &stderr
		dump, err := c.Output()
		require.NoError(t, err, "ibsm routes --dump: %s", stderr.String())
		sections := splitDump(string(dump))
		switches := topo.Count(topologies.Switch)
		require.Len(t, sections, switches)
		var pick []int
		for i := range switches {
			if switches <= ibrouteAllMax || i%(switches/ibrouteSample) == 0 {
				pick = append(pick, i)
			}
		}
		for _, i := range pick {
			sec := sections[i]
			lid := sectionLID(t, sec)
			out, err := sim.Diag(ctx, "ibroute", strconv.Itoa(int(lid)))
			require.NoError(t, err)
			if d := firstDiff(ibrouteView(t, sec), strings.TrimRight(string(out), "\n")); d != "" {
				t.Errorf("switch LID %d: ibsm routes --dump and ibroute differ:\n%s", lid, d)
			}
		}
		t.Logf("compared the tables of %d of %d switches line for line", len(pick), switches)
	})

	t.Run("Route", func(t *testing.T) {
		var all []uint16
		for i, n := range topo.Nodes() {
			if n.Type == topologies.Switch {
				all = append(all, lidOf(n.GUID))
				continue
			}
			for p := 1; p <= n.NumPorts; p++ {
				if _, cabled := topo.LinkAt(topologies.PortRef{Node: i, Port: p}); cabled {
					all = append(all, lidOf(n.Ports[p].GUID))
				}
			}
		}
		var pairs [][2]uint16
		if len(all) <= allPairsMax {
			for _, a := range all {
				for _, b := range all {
					if a != b {
						pairs = append(pairs, [2]uint16{a, b})
					}
				}
			}
		} else {
			r := rand.New(rand.NewPCG(1, 2))
			for len(pairs) < routeSamples {
				a, b := all[r.IntN(len(all))], all[r.IntN(len(all))]
				if a != b {
					pairs = append(pairs, [2]uint16{a, b})
				}
			}
		}
		lidByName := func(name string, port int) (uint16, bool) {
			i, ok := topo.Lookup(name)
			if !ok {
				return 0, false
			}
			n := topo.Node(i)
			if n.Type == topologies.Switch {
				return lidOf(n.GUID), true
			}
			if port < 1 || port > n.NumPorts {
				return 0, false
			}
			return lidOf(n.Ports[port].GUID), true
		}
		failed, maxHops, long := 0, 0, 0
		for _, p := range pairs {
			r, err := sim.Trace(p[0], p[1], lidByName)
			require.NoError(t, err)
			maxHops = max(maxHops, r.Hops)
			if r.Hops >= ibsimrun.MaxHops {
				long++
			}
			if !r.OK {
				failed++
				if failed <= 5 {
					t.Errorf("Route %d %d:\n%s", p[0], p[1], r.Text)
				}
			}
		}
		assert.Zero(t, failed, "of %d pairs", len(pairs))
		t.Logf("Route reached %d of %d pairs (of %d LIDs), at most %d hops; %d paths of 16 hops or more, followed in pieces",
			len(pairs)-failed, len(pairs), len(all), maxHops, long)
	})
}

// splitDump cuts `ibsm routes --dump` (ibroute's layout) into one section
// per switch, without the trailing newline.
func splitDump(s string) []string {
	var out []string
	for _, part := range strings.SplitAfter(s, "lids dumped \n") {
		if part = strings.TrimRight(part, "\n"); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// ibrouteView is a switch's section of the dump as ibroute shows it:
// ibroute reads ALIGN(top, 64)/64 LFT blocks, so when the top LID is a
// multiple of 64 it never reads the block that holds it, and its dump
// stops one LID short.
func ibrouteView(t *testing.T, sec string) string {
	t.Helper()
	_, rest, ok := strings.Cut(sec, "Unicast lids [0x0-0x")
	require.True(t, ok, sec)
	hex, _, _ := strings.Cut(rest, "]")
	top, err := strconv.ParseUint(hex, 16, 16)
	require.NoError(t, err, sec)
	if top%64 != 0 {
		return sec
	}
	lines := strings.Split(sec, "\n")
	prefix := fmt.Sprintf("0x%04x ", top)
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines = append(lines[:i], lines[i+1:]...)
			last := lines[len(lines)-1]
			n, err := strconv.Atoi(strings.Fields(last)[0])
			require.NoError(t, err, last)
			lines[len(lines)-1] = fmt.Sprintf("%d valid lids dumped ", n-1)
			break
		}
	}
	return strings.Join(lines, "\n")
}

// firstDiff describes where two texts first differ, line by line, or
// returns "" when they are the same.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b || i >= len(w) || i >= len(g) {
			return fmt.Sprintf("line %d of %d/%d:\n  dump:    %q\n  ibroute: %q", i+1, len(w), len(g), a, b)
		}
	}
	return ""
}

// sectionLID reads "… of switch Lid N guid …" from a section's header.
func sectionLID(t *testing.T, sec string) uint16 {
	t.Helper()
	_, rest, ok := strings.Cut(sec, "of switch Lid ")
	require.True(t, ok, sec)
	f := strings.Fields(rest)
	require.NotEmpty(t, f, sec)
	n, err := strconv.ParseUint(f[0], 10, 16)
	require.NoError(t, err, sec)
	return uint16(n)
}
