package interop_test

// ibsm's dmodk and OpenSM's ftree on the same real-life fat tree (seed
// 003, issue 20): each SM configures a fresh RLFT(2, 3) soft fabric, the
// forwarding tables are read back from the switches with Debian's
// dump_fts (ibroute for every switch), and both route sets are held to
// the same checks: every pair of hosts routed minimally, and the
// destinations each switch sends out of each port spread evenly.
// infiniband-diags' check_lft_balance judges both dumps too.

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/opensmrun"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

// lftDump is dump_fts's output read back: every switch's table by node,
// and the CA port each LID belongs to.
type lftDump struct {
	table map[int]map[uint16]int          // switch node → LID → output port
	caLID map[uint16]topologies.PortRef   // LID → the CA port that has it
	byCA  map[topologies.PortRef][]uint16 // the CA port → its LIDs
	topo  *topologies.Topology
}

var (
	lftHeader = regexp.MustCompile(`^Unicast lids \[[^\]]*\] of switch .* guid 0x([0-9a-f]+) \(`)
	lftEntry  = regexp.MustCompile(`^0x([0-9a-f]+) ([0-9]+) : \((Channel Adapter|Switch) portguid 0x([0-9a-f]+)`)
)

// parseLFTDump reads dump_fts's output against topo.
func parseLFTDump(t *testing.T, topo *topologies.Topology, out string) *lftDump {
	t.Helper()
	d := &lftDump{table: map[int]map[uint16]int{}, caLID: map[uint16]topologies.PortRef{},
		byCA: map[topologies.PortRef][]uint16{}, topo: topo}
	sw := -1
	for _, line := range strings.Split(out, "\n") {
		if m := lftHeader.FindStringSubmatch(line); m != nil {
			guid, err := strconv.ParseUint(m[1], 16, 64)
			require.NoError(t, err)
			i, ok := topo.LookupGUID(guid)
			require.True(t, ok, "dump_fts names switch GUID %s, not in the fabric", m[1])
			sw = i
			d.table[sw] = map[uint16]int{}
			continue
		}
		m := lftEntry.FindStringSubmatch(line)
		if m == nil || sw < 0 {
			continue
		}
		lid, err := strconv.ParseUint(m[1], 16, 16)
		require.NoError(t, err)
		port, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		d.table[sw][uint16(lid)] = port
		if m[3] == "Channel Adapter" {
			guid, err := strconv.ParseUint(m[4], 16, 64)
			require.NoError(t, err)
			p, ok := topo.LookupPortGUID(guid)
			require.True(t, ok, "dump_fts names CA port GUID %s, not in the fabric", m[4])
			if _, seen := d.caLID[uint16(lid)]; !seen {
				d.caLID[uint16(lid)] = p
				d.byCA[p] = append(d.byCA[p], uint16(lid))
			}
		}
	}
	require.Equal(t, topo.Count(topologies.Switch), len(d.table), "dump_fts dumps every switch:\n%s", out)
	return d
}

// checkMinimal follows the tables from every host's leaf to every other
// host's LIDs: each must arrive in as few links as the topology allows.
// It returns the most host pairs whose routes share one link between
// switches (in one direction): the load of the busiest link under
// all-to-all traffic.
func (d *lftDump) checkMinimal(t *testing.T, sm string) int {
	t.Helper()
	load := map[topologies.PortRef]int{}
	hosts := 0
	for src, n := range d.topo.Nodes() {
		if n.Type != topologies.CA {
			continue
		}
		hosts++
		dist := d.topo.Distances(src)
		leaf, ok := d.topo.Peer(topologies.PortRef{Node: src, Port: 1})
		require.True(t, ok)
		for lid, dst := range d.caLID {
			if dst.Node == src {
				continue
			}
			at, links := leaf.Node, 1
			for d.topo.Node(at).Type == topologies.Switch && links <= d.topo.NumNodes() {
				port, ok := d.table[at][lid]
				require.True(t, ok, "%s: %s has no entry for LID %d", sm, d.topo.Node(at).Name, lid)
				next, ok := d.topo.Peer(topologies.PortRef{Node: at, Port: port})
				require.True(t, ok, "%s: %s sends LID %d out of uncabled port %d", sm, d.topo.Node(at).Name, lid, port)
				if d.topo.Node(next.Node).Type == topologies.Switch {
					load[topologies.PortRef{Node: at, Port: port}]++
				}
				at, links = next.Node, links+1
			}
			require.Equal(t, dst.Node, at, "%s: LID %d from %s", sm, lid, n.Name)
			assert.Equal(t, dist[dst.Node], links, "%s: %s to %s is not minimal", sm, n.Name, d.topo.Node(dst.Node).Name)
		}
	}
	assert.Len(t, d.byCA, hosts, "%s: every host has a LID", sm)
	busiest := 0
	for _, n := range load {
		busiest = max(busiest, n)
	}
	return busiest
}

// spread is the worst per-switch imbalance of a route set: over every
// switch, the largest difference between two up ports (and between two
// down ports to switches) in the number of host LIDs routed out of them.
// Ports toward hosts carry their host alone and are left out, as
// check_lft_balance leaves them out.
type spread struct{ up, down int }

func (d *lftDump) spread(t *testing.T, layout *topologies.FatTreeLayout) spread {
	t.Helper()
	var s spread
	for sw, table := range d.table {
		up, down := map[int]int{}, map[int]int{}
		for p := 1; p <= d.topo.Node(sw).NumPorts; p++ {
			peer, ok := d.topo.Peer(topologies.PortRef{Node: sw, Port: p})
			switch {
			case !ok || d.topo.Node(peer.Node).Type != topologies.Switch:
			case layout.Stage(peer.Node) > layout.Stage(sw):
				up[p] = 0
			default:
				down[p] = 0
			}
		}
		for lid, port := range table {
			if _, isCA := d.caLID[lid]; !isCA {
				continue
			}
			if _, ok := up[port]; ok {
				up[port]++
			} else if _, ok := down[port]; ok {
				down[port]++
			}
		}
		s.up = max(s.up, maxMinusMin(up))
		s.down = max(s.down, maxMinusMin(down))
	}
	return s
}

func maxMinusMin(m map[int]int) int {
	if len(m) == 0 {
		return 0
	}
	lo, hi := -1, 0
	for _, v := range m {
		hi = max(hi, v)
		if lo < 0 || v < lo {
			lo = v
		}
	}
	return hi - lo
}

// lftBalance is what check_lft_balance -v printed: switches reported, and
// those it calls unbalanced.
type lftBalance struct{ switches, unbalanced int }

func parseLFTBalance(out string) lftBalance {
	var b lftBalance
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "Unbalanced Switch Port Usage:"):
			b.unbalanced++
			b.switches++
		case strings.HasPrefix(line, "Switch Port Usage:"):
			b.switches++
		}
	}
	return b
}

// rlftRouted is one SM's route set as the switches hold it.
type rlftRouted struct {
	dump    *lftDump
	spread  spread
	balance lftBalance
	checked string // check_lft_balance's output
	busiest int    // checkMinimal's busiest link
}

// routeRLFT brings topo up as a fresh fabric, has sm configure it from
// h0, and reads the switches' tables back with dump_fts from h5; then
// runs check_lft_balance on that dump and an ibnetdiscover cache.
func routeRLFT(t *testing.T, topo *topologies.Topology, layout *topologies.FatTreeLayout, sm string) rlftRouted {
	f := fabrictest.Up(t, "rl"+sm[:2], topo, harness.UpOptions{})
	dir := t.TempDir()
	switch sm {
	case "dmodk":
		out := f.For(t).MustUMAD("h0", fabrictest.Bin(t, "ibsm"), "--port", "sim", "--once", "--routing", "dmodk")
		require.Contains(t, out, "routing dmodk:", "ibsm:\n%s", out)
		require.Contains(t, out, "deadlock-free true", "ibsm:\n%s", out)
	case "ftree":
		log := filepath.Join(dir, "opensm.log")
		f.For(t).MustUMAD("h0", "env", "OSM_CACHE_DIR="+dir, "opensm", "--once", "-R", "ftree", "-f", log)
		b, err := os.ReadFile(log)
		require.NoError(t, err)
		require.Contains(t, string(b), "SUBNET UP", "opensm log:\n%s", fabrictest.Tail(string(b), 30))
		require.Equal(t, "ftree", opensmrun.RoutedWith(string(b)),
			"OpenSM must route with ftree, not fall back to minhop:\n%s", fabrictest.Tail(string(b), 30))
	}
	out := f.For(t).MustUMAD("h5", "dump_fts")
	lfts := filepath.Join(dir, "lfts.txt")
	require.NoError(t, os.WriteFile(lfts, []byte(out), 0o644))
	cache := filepath.Join(dir, "ibnetdiscover.cache")
	f.For(t).MustUMAD("h5", "ibnetdiscover", "--cache", cache)
	bal := f.For(t).MustUMAD("h5", "check_lft_balance", "-l", lfts, "-i", cache, "-v")
	r := rlftRouted{dump: parseLFTDump(t, topo, out), balance: parseLFTBalance(bal), checked: bal}
	r.spread = r.dump.spread(t, layout)
	return r
}

// TestRLFTDmodKVersusFtree: on RLFT(2, 3) (16 hosts, 20 switches of 4
// ports) ibsm's dmodk and OpenSM's ftree both route every host pair
// minimally, and dmodk is at least as balanced: its worst spread of host
// destinations over a switch's up ports (and over its down ports to
// switches) is no larger than ftree's; on an RLFT it is 0. Both route
// sets go through check_lft_balance, which compares all of a switch's
// ports that do not lead to a host, up and down alike: a stage-2 switch
// sends 6 destinations up each up port and 2 down each down port under
// either SM, so it calls those switches unbalanced for both; dmodk must
// not have more such switches than ftree. Under all-to-all traffic no
// link of dmodk's carries more host pairs than ftree's busiest.
func TestRLFTDmodKVersusFtree(t *testing.T) {
	// Every requirement up front, so that the subtests never skip.
	testenv.RequireRoot(t)
	fabrictest.UMAD2Sim(t)
	testenv.RequireProgram(t, "opensm", "opensm")
	for _, p := range []string{"dump_fts", "ibnetdiscover", "check_lft_balance", "iblinkinfo"} {
		testenv.RequireProgram(t, p, "infiniband-diags")
	}
	topo, err := topologies.RLFT(2, 3)
	require.NoError(t, err)
	layout, err := topologies.LayoutFatTree(topo)
	require.NoError(t, err)
	routed := map[string]rlftRouted{}
	for _, sm := range []string{"dmodk", "ftree"} {
		t.Run(sm, func(t *testing.T) {
			r := routeRLFT(t, topo, layout, sm)
			r.busiest = r.dump.checkMinimal(t, sm)
			assert.Equal(t, topo.Count(topologies.Switch), r.balance.switches, "check_lft_balance -v reports every switch:\n%s", r.checked)
			t.Logf("%s: worst spread: %d over up ports, %d over down ports; check_lft_balance: %d of %d switches unbalanced; busiest link under all-to-all: %d host pairs",
				sm, r.spread.up, r.spread.down, r.balance.unbalanced, r.balance.switches, r.busiest)
			routed[sm] = r
		})
	}
	if t.Failed() {
		return // a subtest said why
	}
	dmodk, ftree := routed["dmodk"], routed["ftree"]
	assert.Zero(t, dmodk.spread.up, "dmodk spreads each switch's destinations evenly over its up ports")
	assert.Zero(t, dmodk.spread.down)
	assert.LessOrEqual(t, dmodk.spread.up, ftree.spread.up, "dmodk is at least as balanced as ftree over up ports")
	assert.LessOrEqual(t, dmodk.spread.down, ftree.spread.down, "dmodk is at least as balanced as ftree over down ports")
	assert.LessOrEqual(t, dmodk.balance.unbalanced, ftree.balance.unbalanced,
		"check_lft_balance: no more unbalanced switches than ftree\ndmodk:\n%s\nftree:\n%s", dmodk.checked, ftree.checked)
	assert.LessOrEqual(t, dmodk.busiest, ftree.busiest, "dmodk's busiest link carries no more host pairs than ftree's")
}
