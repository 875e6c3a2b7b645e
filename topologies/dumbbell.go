package topologies

// Dumbbell returns the QoS experiment's fabric: switch sw1 with CAs sm0,
// a1, a2 and a3 on ports 1-4, switch sw2 with CAs b1 and b2 on ports 1
// and 2, and two parallel links sw1[5]-sw2[3] and sw1[6]-sw2[4], so that
// b1's link is where traffic from sw1 and b2 meets, and a cut of one
// switch link leaves the other. sm0 comes first, where ibsim attaches its
// SM.
func Dumbbell() *Topology {
	b := newBuilder()
	sm0 := b.node(CA, "sm0", 1)
	sw1 := b.node(Switch, "sw1", 6)
	sw2 := b.node(Switch, "sw2", 4)
	b.link(sw1, 1, sm0, 1)
	for k, name := range []string{"a1", "a2", "a3"} {
		b.link(sw1, k+2, b.node(CA, name, 1), 1)
	}
	for k, name := range []string{"b1", "b2"} {
		b.link(sw2, k+1, b.node(CA, name, 1), 1)
	}
	b.link(sw1, 5, sw2, 3)
	b.link(sw1, 6, sw2, 4)
	return mustBuild(b)
}
