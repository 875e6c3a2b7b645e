package topologies

import (
	"cmp"
	"slices"
)

// FatTreeLayout is where the nodes of a fat tree sit, read from its
// cabling alone (names and GUIDs play no part, so a net file that
// ibnetdiscover printed lays out as the generator's topology does): the
// stage of every switch, the leaves in order and the hosts in order. The
// experiments of seed 003 number hosts by it (the static queuing schemes'
// groups, hot spots) and ibsm's dmodk engine orders leaves with the same
// walk (FatTreeLeaves), so the two agree on what host i is.
//
// Leaves are the switches with a CA; a switch's stage is 1 plus its
// distance to the nearest leaf. The leaf order walks the tree down from
// the top: from the top switch with the lowest GUID, through every down
// port in port order, depth first, so that the leaves below one switch
// are consecutive and those below its port p come before those below
// port p+1. On an RLFT that is the generator's order (leaf s1-j is leaf
// j). Leaves no walk from that switch reaches follow, walked from the
// other switches from the top stage down (lowest GUID first). Hosts are
// the CAs in leaf order, by the leaf port they are cabled to.
type FatTreeLayout struct {
	// Stages is the number of switch stages: the top stage.
	Stages int
	// Leaves are the leaf switches (node indexes) in leaf order.
	Leaves []int
	// Hosts are the CAs (node indexes) in host order.
	Hosts []int

	stage []int // per node: a switch's stage, 0 for anything else
	host  []int // per node: a CA's host index, -1 for anything else
	leaf  []int // per host index: its leaf's index
}

// LayoutFatTree lays out t. It fails, wrapping ErrInvalid, on a topology
// that is not a fat tree of single-port hosts: no switch with a CA, a
// switch that reaches no leaf, a link between switches whose stages are
// not adjacent, a CA cabled to a CA, or a CA with more than one cabled
// port. Uncabled CAs are no hosts.
func LayoutFatTree(t *Topology) (*FatTreeLayout, error) {
	n := t.NumNodes()
	l := &FatTreeLayout{stage: make([]int, n), host: make([]int, n)}
	var queue []int
	for i, node := range t.nodes {
		l.host[i] = -1
		switch node.Type {
		case Switch:
			for _, j := range t.Neighbors(i) {
				if t.nodes[j].Type == CA {
					l.stage[i] = 1
					queue = append(queue, i)
					break
				}
			}
		case CA:
			if d := t.Degree(i); d > 1 {
				return nil, invalid("not a fat tree of single-port hosts: CA %s has %d cabled ports", node.Name, d)
			}
			for _, j := range t.Neighbors(i) {
				if t.nodes[j].Type != Switch {
					return nil, invalid("not a fat tree: CA %s is cabled to %s, not to a switch", node.Name, t.nodes[j].Name)
				}
			}
		}
	}
	if len(queue) == 0 {
		return nil, invalid("not a fat tree: no switch has a CA")
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		l.Stages = max(l.Stages, l.stage[u])
		for _, j := range t.Neighbors(u) {
			if t.nodes[j].Type == Switch && l.stage[j] == 0 {
				l.stage[j] = l.stage[u] + 1
				queue = append(queue, j)
			}
		}
	}
	for i, node := range t.nodes {
		if node.Type != Switch {
			continue
		}
		if l.stage[i] == 0 {
			return nil, invalid("not a fat tree: switch %s reaches no leaf switch", node.Name)
		}
		for _, j := range t.Neighbors(i) {
			// BFS stages of neighbours differ by at most one, so only
			// a link within a stage can break the rule.
			if t.nodes[j].Type == Switch && l.stage[j] == l.stage[i] {
				return nil, invalid("not a fat tree: %s (stage %d) is cabled to %s (stage %d)",
					node.Name, l.stage[i], t.nodes[j].Name, l.stage[j])
			}
		}
	}
	l.Leaves = FatTreeLeaves(t, l.stage)
	for li, s := range l.Leaves {
		for p := 1; p <= t.nodes[s].NumPorts; p++ {
			if peer, ok := t.Peer(PortRef{Node: s, Port: p}); ok && t.nodes[peer.Node].Type == CA {
				l.host[peer.Node] = len(l.Hosts)
				l.Hosts = append(l.Hosts, peer.Node)
				l.leaf = append(l.leaf, li)
			}
		}
	}
	return l, nil
}

// FatTreeLeaves returns the leaf switches of fat tree t in leaf order
// (FatTreeLayout's): walking down from the switches of the top stage,
// lowest GUID first, then from the others stage by stage, through every
// port in port order, depth first. stage holds every node's stage: 1 for
// a leaf, one more per stage up, 0 for a node that is no switch. ibsm's
// dmodk orders its destinations by it too, so that the experiments and
// the routing agree on what host i is.
func FatTreeLeaves(t *Topology, stage []int) []int {
	var switches []int
	for i, node := range t.nodes {
		if node.Type == Switch {
			switches = append(switches, i)
		}
	}
	slices.SortStableFunc(switches, func(a, b int) int {
		return cmp.Or(cmp.Compare(stage[b], stage[a]), cmp.Compare(t.nodes[a].GUID, t.nodes[b].GUID))
	})
	var leaves []int
	seen := make([]bool, t.NumNodes())
	var walk func(s int)
	walk = func(s int) {
		seen[s] = true
		if stage[s] == 1 {
			leaves = append(leaves, s)
			return
		}
		for p := 1; p <= t.nodes[s].NumPorts; p++ {
			if peer, ok := t.Peer(PortRef{Node: s, Port: p}); ok && !seen[peer.Node] && stage[peer.Node] == stage[s]-1 {
				walk(peer.Node)
			}
		}
	}
	for _, s := range switches {
		if !seen[s] {
			walk(s)
		}
	}
	return leaves
}

// Stage returns the stage of switch node (1 for a leaf), 0 for a node
// that is no switch or not in the topology.
func (l *FatTreeLayout) Stage(node int) int {
	if node < 0 || node >= len(l.stage) {
		return 0
	}
	return l.stage[node]
}

// HostIndex returns the host index of CA node, 0..len(Hosts)−1; false
// for a node that is no host.
func (l *FatTreeLayout) HostIndex(node int) (int, bool) {
	if node < 0 || node >= len(l.host) || l.host[node] < 0 {
		return 0, false
	}
	return l.host[node], true
}

// Leaf returns the leaf index (into Leaves) of host index host; false
// when there is no such host.
func (l *FatTreeLayout) Leaf(host int) (int, bool) {
	if host < 0 || host >= len(l.leaf) {
		return 0, false
	}
	return l.leaf[host], true
}

// Flow returns the ends of a flow from host index src to host index dst,
// whose LID is dlid, as the static queuing schemes read them; false when
// either is no host.
func (l *FatTreeLayout) Flow(src, dst int, dlid uint16) (FlowEnds, bool) {
	sl, ok1 := l.Leaf(src)
	dl, ok2 := l.Leaf(dst)
	if !ok1 || !ok2 {
		return FlowEnds{}, false
	}
	return FlowEnds{Src: src, Dst: dst, SrcLeaf: sl, DstLeaf: dl, DLID: dlid}, true
}
