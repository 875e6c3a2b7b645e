package topologies_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

// TestNeighbourhood: a node's neighbourhood has the node and its peers as
// the fabric has them and exactly the node's links, and survives a net
// file's round trip (what the node process reads).
func TestNeighbourhood(t *testing.T) {
	ft, err := topologies.FatTree(4, 2, 3)
	require.NoError(t, err)
	loop := topologies.New()
	_, err = loop.AddNode(topologies.Node{Type: topologies.Switch, Name: "sw", NumPorts: 4, GUID: 0x10})
	require.NoError(t, err)
	_, err = loop.AddNode(topologies.Node{Type: topologies.CA, Name: "ca", NumPorts: 2, GUID: 0x20})
	require.NoError(t, err)
	require.NoError(t, loop.Connect(topologies.PortRef{Node: 0, Port: 1}, topologies.PortRef{Node: 0, Port: 3}, topologies.Width4x, topologies.SpeedNDR))
	require.NoError(t, loop.Connect(topologies.PortRef{Node: 0, Port: 2}, topologies.PortRef{Node: 1, Port: 2}, topologies.Width2x, topologies.SpeedHDR))

	for name, topo := range map[string]*topologies.Topology{"thesis8": topologies.Default(), "fat tree": ft, "loop": loop} {
		for i, n := range topo.Nodes() {
			u, err := topo.Neighbourhood(i)
			require.NoError(t, err, "%s %s", name, n.Name)
			j, ok := u.Lookup(n.Name)
			require.True(t, ok)
			assert.Equal(t, *n, *u.Node(j), "%s %s: the node as the fabric has it", name, n.Name)
			peers := map[string]bool{n.Name: true}
			links := 0
			for p := 1; p <= n.NumPorts; p++ {
				l, cabled := topo.LinkAt(topologies.PortRef{Node: i, Port: p})
				m, has := u.LinkAt(topologies.PortRef{Node: j, Port: p})
				require.Equal(t, cabled, has, "%s %s port %d", name, n.Name, p)
				if !cabled {
					continue
				}
				links++
				assert.Equal(t, l.Width, m.Width)
				assert.Equal(t, l.Speed, m.Speed)
				peer, _ := topo.Peer(topologies.PortRef{Node: i, Port: p})
				upeer, _ := u.Peer(topologies.PortRef{Node: j, Port: p})
				pn := topo.Node(peer.Node)
				assert.Equal(t, *pn, *u.Node(upeer.Node), "%s %s port %d: the peer as the fabric has it", name, n.Name, p)
				assert.Equal(t, peer.Port, upeer.Port)
				peers[pn.Name] = true
			}
			assert.Equal(t, len(peers), u.NumNodes(), "%s %s: the node and its peers only", name, n.Name)
			loops := 0
			for _, l := range u.Links() {
				if l.A.Node == l.B.Node {
					loops++
				}
			}
			assert.Equal(t, links-loops, u.NumLinks(), "%s %s: its links only (a loop counted once)", name, n.Name)

			var b bytes.Buffer
			require.NoError(t, topologies.Write(&b, u))
			text := b.String()
			back, err := topologies.Parse(&b, "neighbourhood.net")
			require.NoError(t, err, "%s %s", name, n.Name)
			var again bytes.Buffer
			require.NoError(t, topologies.Write(&again, back))
			assert.Equal(t, text, again.String(), "%s %s: the net file round trip", name, n.Name)
			j, _ = back.Lookup(n.Name)
			assert.Equal(t, *n, *back.Node(j), "%s %s: the node read back", name, n.Name)
		}
	}
}
