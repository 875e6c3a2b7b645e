package fabrictest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"ibfab/nodeproc"
)

// PairLoad is the load (% of the link rate) each host of CheckPairs
// offers, up to pairHosts hosts; more share pairHosts times it. Light
// (~1600 packets/s per host): this checks routes, not capacity, and a
// receiver needs only a few packets. At 1 % of the link rate (33k
// packets/s per host, more than the machine moves) buffers filled and
// OpenSM's minhop routes, which are not deadlock-free on an irregular
// fabric, sometimes locked up in a credit loop: no drops, no progress, as
// silicon would. With seven hosts' worth (~11k packets/s, each crossing
// three to five links) a 16-switch fabric on two busy cores moved ~9k:
// every queue filled, and a flow behind the congestion could go 20 s
// without one packet arriving; with two hosts' worth on the 432-host fat
// tree, whose up*/down* routes all crossed one spine process, that spine
// could not keep up on a machine loaded by 468 processes. One host's worth
// (~1600 packets/s in all) still gives each receiver its few packets
// within a fraction of a second.
const (
	PairLoad  = 0.05
	pairHosts = 1
)

// CheckAllPairs runs UD traffic between every ordered pair of hosts.
func (f *Fabric) CheckAllPairs(hosts []string) {
	f.tb.Helper()
	var rounds []int
	for k := 1; k < len(hosts); k++ {
		rounds = append(rounds, k)
	}
	f.CheckPairs(hosts, rounds)
}

// CheckPairs runs light UD traffic in rounds: in round k host i sends to
// host i+k only, so each receiver hears one sender and a broken route
// cannot hide behind another. It stops every host's traffic afterwards.
func (f *Fabric) CheckPairs(hosts []string, rounds []int) {
	tb := f.tb
	tb.Helper()
	lid := map[string]uint16{}
	for _, h := range hosts {
		lid[h] = f.Node(h).Ports[0].LID
	}
	load := PairLoad
	if len(hosts) > pairHosts {
		load = PairLoad * pairHosts / float64(len(hosts))
	}
	for _, k := range rounds {
		rx0 := map[string]uint64{}
		for _, h := range hosts {
			rx0[h] = f.Node(h).Ports[0].Traffic.RxPackets
		}
		for i, h := range hosts {
			dst := hosts[(i+k)%len(hosts)]
			f.MustCall(h, "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: load, Payload: 256,
				Dests: []uint16{lid[dst]}, Seed: uint64(k*1000 + i)}, nil)
		}
		var deaf []string
		report := func() {
			for _, h := range deaf {
				p := f.Node(h).Ports[0]
				i := slices.Index(hosts, h)
				src := hosts[(i-k+len(hosts))%len(hosts)]
				sp := f.Node(src).Ports[0]
				tb.Logf("round %d: %s (LID %d, %s) received %d, drops %v; its sender %s (LID %d, %s) sent %d, generator %+v",
					k, h, p.LID, p.State, p.Traffic.RxPackets-rx0[h], p.Drops, src, sp.LID, sp.State, sp.Traffic.TxPackets, sp.Traffic.Generator)
			}
			f.logPorts()
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			deaf = deaf[:0]
			for _, h := range hosts {
				if f.Node(h).Ports[0].Traffic.RxPackets < rx0[h]+5 {
					deaf = append(deaf, h)
				}
			}
			if len(deaf) == 0 {
				break
			}
			if time.Now().After(deadline) {
				report()
				tb.Fatalf("round %d: every host hears its sender: not after 20s (deaf: %v)", k, deaf)
			}
			time.Sleep(10 * time.Millisecond)
		}
		f.StopTraffic(hosts)
	}
}

// logPorts logs, for a failed CheckPairs, every port's drops and, if it is
// cabled, a state other than Active or a lost link; every host's
// generator; every port holding packets or with its receive buffer at
// least half full; and the port goroutines of up to two switches that
// send nothing while they hold packets they have credit for.
func (f *Fabric) logPorts() {
	tb := f.tb
	tb.Helper()
	// Two snapshots a second apart tell a stalled port (packets
	// queued, nothing sent meanwhile) from a slow one, and a credit
	// wait (no credit for the head packet) from a transmitter that
	// does not run.
	var stalled []string
	t0 := time.Now()
	s0 := f.Status()
	time.Sleep(time.Second)
	sent := map[string]uint64{}
	for _, n := range s0.Nodes {
		for _, p := range n.Ports {
			sent[fmt.Sprintf("%s[%d]", n.Name, p.Port)] = p.Counters.PortXmitPkts
		}
	}
	s1 := f.Status()
	// A status of hundreds of nodes takes a while on a busy
	// machine: the interval is from before the first to after
	// the second.
	span := time.Since(t0).Round(10 * time.Millisecond)
	for _, n := range s1.Nodes {
		for _, p := range n.Ports {
			name := fmt.Sprintf("%s[%d]", n.Name, p.Port)
			if len(p.Drops) > 0 {
				tb.Logf("%s drops %v", name, p.Drops)
			}
			if p.Peer != "" && (p.State != "Active" || p.Counters.LinkDownedCounter > 0) {
				tb.Logf("%s (to %s) %s, link downed %d times", name, p.Peer, p.State, p.Counters.LinkDownedCounter)
			}
			moved := p.Counters.PortXmitPkts - sent[name]
			if p.Traffic != nil && p.Traffic.Generator != nil {
				tb.Logf("%s %s %s sent %d in %v, generator %+v", name, p.Width, p.Speed, moved, span, *p.Traffic.Generator)
			}
			for _, c := range p.Credits {
				if c.Queued > 0 || (c.RxCapacity > 0 && c.RxUsed*2 >= c.RxCapacity) {
					tb.Logf("%s (to %s) VL%d: %d queued, %d blocks of credit, sent %d in %v; receive buffer %d/%d blocks",
						name, p.Peer, c.VL, c.Queued, c.Available, moved, span, c.RxUsed, c.RxCapacity)
				}
				// Credit for a whole packet and nothing sent: the
				// transmitter itself is not running. Where it waits
				// is in its stack.
				if c.Queued > 0 && c.Available >= 64 && moved == 0 && !slices.Contains(stalled, n.Name) {
					stalled = append(stalled, n.Name)
				}
			}
		}
	}
	for _, n := range stalled[:min(len(stalled), 2)] {
		var st nodeproc.Stacks
		if err := f.Call(n, "stacks", nil, &st); err != nil {
			tb.Logf("%s stacks: %v", n, err)
			continue
		}
		tb.Logf("%s holds packets it has credit for and sends none; its port goroutines:\n%s", n, portStacks(st.Goroutines))
	}
}

// StopTraffic stops the traffic generator of every host's port 1.
func (f *Fabric) StopTraffic(hosts []string) {
	f.tb.Helper()
	for _, h := range hosts {
		f.MustCall(h, "traffic-stop", map[string]int{"port": 1}, nil)
	}
}

// portStacks keeps the goroutines of a stack dump that run in the port
// package: the transmitters and deliveries a stalled port is made of.
func portStacks(dump string) string {
	var keep []string
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.Contains(g, "ibfab/port.") {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}
