package topologies

import "slices"

// Damage is what a fault breaks in a fabric: nodes that died, by name, and
// cables cut.
type Damage struct {
	Dead map[string]bool
	Cut  []Link
}

// IsCut reports whether port p is at either end of a cut cable; a nil
// Damage cuts nothing.
func (d *Damage) IsCut(p PortRef) bool {
	return d != nil && slices.ContainsFunc(d.Cut, func(l Link) bool { return l.A == p || l.B == p })
}

func (d *Damage) isDead(name string) bool { return d != nil && d.Dead[name] }

// Reachable returns the hosts (CAs) connected to node from through live
// nodes and uncut cables, in topology order; nil when from is no node.
func (t *Topology) Reachable(from string, d *Damage) []string {
	start, ok := t.Lookup(from)
	if !ok {
		return nil
	}
	seen := map[int]bool{start: true}
	queue := []int{start}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for p := 1; p <= t.Node(i).NumPorts; p++ {
			ref := PortRef{Node: i, Port: p}
			peer, ok := t.Peer(ref)
			if !ok || seen[peer.Node] || d.isDead(t.Node(peer.Node).Name) || d.IsCut(ref) {
				continue
			}
			seen[peer.Node] = true
			queue = append(queue, peer.Node)
		}
	}
	var hosts []string
	for i, n := range t.Nodes() {
		if seen[i] && n.Type == CA {
			hosts = append(hosts, n.Name)
		}
	}
	return hosts
}

// SwitchOf returns the index of the node host's port 1 is cabled to, or -1.
func (t *Topology) SwitchOf(host string) int {
	i, ok := t.Lookup(host)
	if !ok {
		return -1
	}
	p, ok := t.Peer(PortRef{Node: i, Port: 1})
	if !ok {
		return -1
	}
	return p.Node
}

// SwitchLinks counts the links of node i to switches.
func (t *Topology) SwitchLinks(i int) int {
	k := 0
	for p := 1; p <= t.Node(i).NumPorts; p++ {
		if peer, ok := t.Peer(PortRef{Node: i, Port: p}); ok && t.Node(peer.Node).Type == Switch {
			k++
		}
	}
	return k
}

// HostsOf returns the CAs cabled to switch sw, by port.
func (t *Topology) HostsOf(sw string) []string {
	i, ok := t.Lookup(sw)
	if !ok {
		return nil
	}
	var out []string
	for p := 1; p <= t.Node(i).NumPorts; p++ {
		if peer, ok := t.Peer(PortRef{Node: i, Port: p}); ok && t.Node(peer.Node).Type == CA {
			out = append(out, t.Node(peer.Node).Name)
		}
	}
	return out
}

// CycleLink returns a link between two switches, neither the one host hangs
// off, whose loss disconnects no host from host: a link on a cycle, whose
// loss makes an SM at host move routes rather than lose hosts.
func (t *Topology) CycleLink(host string) (Link, bool) {
	all := len(t.Reachable(host, nil))
	home := t.SwitchOf(host)
	for i, n := range t.Nodes() {
		if n.Type != Switch || i == home {
			continue
		}
		for p := 1; p <= n.NumPorts; p++ {
			a := PortRef{Node: i, Port: p}
			b, ok := t.Peer(a)
			if !ok || b.Node == home || t.Node(b.Node).Type != Switch {
				continue
			}
			l := Link{A: a, B: b}
			if len(t.Reachable(host, &Damage{Cut: []Link{l}})) == all {
				return l, true
			}
		}
	}
	return Link{}, false
}

// Victim returns the switch with hosts, neither the one host hangs off nor
// one at a cable d cuts, whose loss on top of d leaves the most hosts
// connected to host; of those, the one with the most switch links, whose
// loss moves the most routes.
func (t *Topology) Victim(host string, d *Damage) (string, bool) {
	best, most, links := "", -1, 0
	home := t.SwitchOf(host)
	var cut []Link
	if d != nil {
		cut = d.Cut
	}
	for j, n := range t.Nodes() {
		if n.Type != Switch || j == home || len(t.HostsOf(n.Name)) == 0 ||
			slices.ContainsFunc(cut, func(l Link) bool { return l.A.Node == j || l.B.Node == j }) {
			continue
		}
		k := len(t.Reachable(host, &Damage{Dead: map[string]bool{n.Name: true}, Cut: cut}))
		if l := t.SwitchLinks(j); k > most || k == most && l > links {
			best, most, links = n.Name, k, l
		}
	}
	return best, best != ""
}
