package harness_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/topologies"
)

// openSM is OpenSM as a daemon at an HCA (fabrictest.OpenSM).
type openSM struct{ *fabrictest.OpenSM }

func startOpenSM(t *testing.T, f *fabrictest.Fabric, node string) *openSM {
	return &openSM{f.For(t).StartOpenSM(node)}
}

func (o *openSM) waitLog(t *testing.T, timeout time.Duration, from int, want ...string) int {
	t.Helper()
	return o.WaitLog(t, timeout, from, want...)
}

func (o *openSM) guid2lid(t *testing.T) map[uint64]uint16 { return o.GUID2LID(t) }

// checkOpenSMLIDs checks that every port of every node in alive holds the
// LID OpenSM assigned to it (a switch's ports share port 0's).
func checkOpenSMLIDs(t *testing.T, f *fabrictest.Fabric, lids map[uint64]uint16, alive func(string) bool) {
	t.Helper()
	byName := map[string]uint16{}
	for g, lid := range lids {
		p, ok := f.Topo.LookupPortGUID(g)
		require.True(t, ok, "OpenSM has LID %d for port GUID %#x, not in the fabric", lid, g)
		byName[fmt.Sprintf("%s/%d", f.Topo.Node(p.Node).Name, p.Port)] = lid
	}
	for i, n := range f.Status().Nodes {
		if !alive(n.Name) {
			continue
		}
		for _, p := range n.Ports {
			key := fmt.Sprintf("%s/%d", n.Name, p.Port)
			if f.Topo.Node(i).Type == topologies.Switch {
				key = n.Name + "/0"
			}
			if _, cabled := f.Topo.Peer(topologies.PortRef{Node: i, Port: p.Port}); !cabled {
				continue
			}
			want, ok := byName[key]
			require.True(t, ok, "OpenSM assigned no LID to %s", key)
			require.Equal(t, want, p.LID, "%s[%d] LID", n.Name, p.Port)
		}
	}
}

// checkAllPairs runs UD traffic between every ordered pair of hosts.
func checkAllPairs(t *testing.T, f *fabrictest.Fabric, hosts []string) {
	t.Helper()
	f.For(t).CheckAllPairs(hosts)
}

// checkPairs runs light UD traffic in rounds (fabrictest.Fabric.CheckPairs).
func checkPairs(t *testing.T, f *fabrictest.Fabric, hosts []string, rounds []int) {
	t.Helper()
	f.For(t).CheckPairs(hosts, rounds)
}

// reachable returns the hosts still connected to from once the nodes in
// dead are gone.
func reachable(topo *topologies.Topology, from string, dead map[string]bool) []string {
	return topo.Reachable(from, &topologies.Damage{Dead: dead})
}

// victim picks the switch whose loss leaves the most hosts connected to
// the SM's, among those not next to it.
func victim(topo *topologies.Topology, sm string) string {
	best, most := "", -1
	i, _ := topo.Lookup(sm)
	smSwitch, _ := topo.Peer(topologies.PortRef{Node: i, Port: 1})
	for j, n := range topo.Nodes() {
		if n.Type != topologies.Switch || j == smSwitch.Node {
			continue
		}
		if k := len(reachable(topo, sm, map[string]bool{n.Name: true})); k > most {
			best, most = n.Name, k
		}
	}
	return best
}

// TestOpenSMDaemon runs unmodified OpenSM as a daemon at an HCA of the
// default fabric: SUBNET UP with every port Active at the LID OpenSM
// assigned, UD traffic between every pair of hosts; then a switch is
// killed, OpenSM gets Trap 128, sweeps again and the surviving hosts all
// reach each other.
func TestOpenSMDaemon(t *testing.T) {
	const sm = "ca4"
	f := fabrictest.Up(t, "osmd", topologies.Default(), harness.UpOptions{})
	o := startOpenSM(t, f, sm)
	at := o.waitLog(t, 30*time.Second, 0, "SUBNET UP")
	fabrictest.Wait(t, 10*time.Second, "every port Active", func() bool {
		for _, n := range f.Status().Nodes {
			for _, p := range n.Ports {
				if p.Peer != "" && p.State != "Active" {
					return false
				}
			}
		}
		return true
	})
	checkPorts(t, f, "Active")
	checkOpenSMLIDs(t, f, o.guid2lid(t), func(string) bool { return true })
	checkAllPairs(t, f, f.Hosts())

	dead := victim(f.Topo, sm)
	survivors := reachable(f.Topo, sm, map[string]bool{dead: true})
	t.Logf("killing %s; %d hosts stay connected to %s: %v", dead, len(survivors), sm, survivors)
	require.NoError(t, harness.Kill(f.Name, dead))
	o.waitLog(t, 30*time.Second, at, "num:128 (Link state change)", "SUBNET UP")

	checkAllPairs(t, f, survivors)
	alive := map[string]bool{}
	for _, h := range survivors {
		alive[h] = true
	}
	for i, n := range f.Status().Nodes {
		if n.Name == dead {
			require.False(t, n.Alive)
			continue
		}
		for _, p := range n.Ports {
			peer, cabled := f.Topo.Peer(topologies.PortRef{Node: i, Port: p.Port})
			if !cabled {
				continue
			}
			want := "Active"
			if f.Topo.Node(peer.Node).Name == dead {
				want = "Down"
			}
			require.Equal(t, want, p.State, "%s[%d] (peer %s)", n.Name, p.Port, p.Peer)
		}
	}
}

// TestOpenSMFatTree432: OpenSM --once brings a 432-host two-level fat tree
// (24 leaves of 18 hosts, 12 spines: 468 processes) up; every port is
// Active with a unique LID, and UD traffic flows between sampled pairs.
func TestOpenSMFatTree432(t *testing.T) {
	topo, err := topologies.FatTree(24, 12, 18)
	require.NoError(t, err)
	// OpenSM's own retries do not reach the attach point (libumad2sim
	// drops them), so the SM's HCA resends, as in the bench: 468 processes
	// on two cores leave an SMP unanswered past 200 ms now and then, and
	// one lost PortInfo Set fails --once.
	smNode := firstHost(topo)
	f := fabrictest.Up(t, "osm432", topo, harness.UpOptions{Timeout: 5 * time.Minute,
		NodeArgsFor: map[string][]string{smNode: {"--sim-retries", fmt.Sprint(opensmRetries)}}})
	hosts := f.Hosts()
	require.Len(t, hosts, 432)
	log := filepath.Join(t.TempDir(), "opensm.log")
	require.Equal(t, smNode, hosts[0])
	f.MustUMAD(smNode, "opensm", "--once", "-f", log)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Contains(t, string(b), "SUBNET UP", "opensm log:\n%s", tail(string(b), 30))
	checkPorts(t, f, "Active")
	seen := map[uint16]string{}
	for _, n := range f.Status().Nodes {
		if n.Type != "hca" {
			continue
		}
		lid := n.Ports[0].LID
		require.NotZero(t, lid, n.Name)
		require.Empty(t, seen[lid], "LID %d of both %s and %s", lid, seen[lid], n.Name)
		seen[lid] = n.Name
	}
	// One host per leaf, each sending to the host of the next leaf and of
	// the leaf half-way round: every leaf and spine carries traffic.
	var sample []string
	for i := 0; i < len(hosts); i += 18 {
		sample = append(sample, hosts[i])
	}
	checkPairs(t, f, sample, []int{1, len(sample) / 2})
}

// opensmRetries is OpenSM's default transaction_retries, which
// libumad2sim does not pass on: the SM's HCA resends (--sim-retries).
const opensmRetries = 3

// firstHost returns the name of topo's first CA, the host Fabric.Hosts
// lists first, or "" if it has none.
func firstHost(topo *topologies.Topology) string {
	for _, n := range topo.Nodes() {
		if n.Type == topologies.CA {
			return n.Name
		}
	}
	return ""
}
