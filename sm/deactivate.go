package sm

import (
	"context"
	"fmt"
	"slices"
	"time"

	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Deactivation as silicon does it. A port the SM sets Down retrains: once
// its SMA's answer has left, its transmitter goes dark for the retraining
// time, so the far end of the link loses signal as well. Both ends go
// Down (the far end's switch raises Trap 128, and both switches set
// PortStateChange), and both train again and come back in Init, from
// which activation takes them to Armed and Active. While the link is
// dark it carries no SMP: a Set or a read whose directed route crosses it
// is lost. So deactivatePorts
//
//   - sets one end of each link Down (the other goes Down with it), in
//     waves: a port goes once no port still to be set needs its link on
//     its route and its own route crosses no dark link (on the tree of
//     discovery's routes: farthest from the SM first, and no wait);
//   - when no port can go, and at the end, waits for the dark links to
//     train again: it reads their ends, never through a dark link (the
//     nearest end of the nearest dark link first), with a pause that
//     doubles while nothing moves, until each end is back in Init with
//     its link up, as activation needs, or Config.RetrainTimeout has
//     passed;
//   - notes the switches at both ends: their traps and PortStateChange
//     are its own doing, which settleOwnChanges takes back after
//     activation, unless a port there is not as the database says.

// The first pause between reads of ends not back yet, doubled while
// nothing moves up to retrainPauseMax: a wait overshoots the retraining
// by at most as long again, and a slow one (a time-scaled fabric) costs a
// read of each end per second.
const (
	retrainPause    = time.Millisecond
	retrainPauseMax = time.Second
)

// retraining is one deactivation's links: linkOf keys, their ends, those
// dark still, and the ends read back in Init.
type retraining struct {
	links    [][2]int
	ends     map[[2]int][][2]int
	dark     map[[2]int]bool
	ready    map[[2]int]bool
	switches map[int]bool
}

// linkOf names the link at port np by its lesser end (node, then port);
// false when the port has no cable.
func (sn *Subnet) linkOf(np [2]int) ([2]int, bool) {
	peer, ok := sn.Topo.Peer(topologies.PortRef{Node: np[0], Port: np[1]})
	if !ok {
		return np, false
	}
	pp := [2]int{peer.Node, peer.Port}
	if pp[0] < np[0] || (pp[0] == np[0] && pp[1] < np[1]) {
		return pp, true
	}
	return np, true
}

// pathLinks returns the links (linkOf) a directed route from the SM
// crosses.
func (sn *Subnet) pathLinks(path []uint8) [][2]int {
	var out [][2]int
	node := sn.SMNode
	for k := 1; k < len(path); k++ {
		np := [2]int{node, int(path[k])}
		peer, ok := sn.Topo.Peer(topologies.PortRef{Node: np[0], Port: np[1]})
		if !ok {
			break
		}
		l, _ := sn.linkOf(np)
		out = append(out, l)
		node = peer.Node
	}
	return out
}

// crossesDark reports whether the route to port np crosses a link of
// dark.
func (sn *Subnet) crossesDark(np [2]int, dark map[[2]int]bool) bool {
	for _, l := range sn.pathLinks(sn.path(np[0], np[1])) {
		if dark[l] {
			return true
		}
	}
	return false
}

// retrained reports whether a port read after its link went down is back:
// link up, logical state Init. A port read Armed or Active has not gone
// Down yet (its peer's transmitter still drains).
func retrained(pi *mad.PortInfoFields) bool {
	return pi.PortPhysicalState == mad.PhysStateLinkUp && pi.PortState == mad.PortStateInit
}

// deactivatePorts sets every listed port that passes data Down, waits
// for the links to train again, and leaves the PortInfo of both ends of
// each in sn for activation to bring them back.
func (s *SM) deactivatePorts(ctx context.Context, sn *Subnet, ports [][2]int, res *Result) error {
	problem := func(format string, args ...any) { res.Problems = append(res.Problems, fmt.Sprintf(format, args...)) }
	r := &retraining{ends: map[[2]int][][2]int{}, dark: map[[2]int]bool{}, ready: map[[2]int]bool{},
		switches: map[int]bool{}}
	s.ownChanges = r.switches
	var todo [][2]int
	for _, np := range ports {
		if _, ok := sn.linkOf(np); ok && portActive(&sn.PortInfo[np[0]][np[1]]) {
			todo = append(todo, np)
		}
	}
	for len(todo) > 0 {
		wave, rest := r.wave(sn, todo)
		if len(wave) == 0 && len(rest) > 0 {
			if err := s.awaitRetrain(ctx, sn, r, problem); err != nil || len(res.Problems) > 0 {
				return err
			}
			todo = rest
			continue
		}
		for _, np := range wave {
			s.setDown(sn, np, r, res, problem)
		}
		if err := s.tx.Run(ctx); err != nil || len(res.Problems) > 0 {
			return err
		}
		todo = rest
	}
	return s.awaitRetrain(ctx, sn, r, problem)
}

// wave splits todo into the ports that can be set Down now and the rest;
// a port whose link is down already (its peer was set Down) is dropped.
func (r *retraining) wave(sn *Subnet, todo [][2]int) (wave, rest [][2]int) {
	var left [][2]int
	for _, np := range todo {
		if l, _ := sn.linkOf(np); r.ends[l] == nil {
			left = append(left, np)
		}
	}
	need := map[[2]int]int{}
	for _, np := range left {
		for _, l := range sn.pathLinks(sn.path(np[0], np[1])) {
			need[l]++
		}
	}
	taken := map[[2]int]bool{}
	for _, np := range left {
		l, _ := sn.linkOf(np)
		if taken[l] {
			continue // the peer goes in this wave
		}
		own := 0
		if slices.Contains(sn.pathLinks(sn.path(np[0], np[1])), l) {
			own = 1 // a switch's own route in: its answer leaves before the dark
		}
		if need[l] > own || sn.crossesDark(np, r.dark) {
			rest = append(rest, np)
			continue
		}
		wave = append(wave, np)
		taken[l] = true
	}
	if len(wave) == 0 && len(r.dark) == 0 && len(rest) > 0 {
		// Routes that need each other's links: no order helps.
		wave, rest = rest[:1], rest[1:]
	}
	return wave, rest
}

// setDown sets port np Down and notes its link dark and both its ends.
func (s *SM) setDown(sn *Subnet, np [2]int, r *retraining, res *Result, problem func(string, ...any)) {
	i, p := np[0], np[1]
	l, _ := sn.linkOf(np)
	ends := [][2]int{np}
	if peer, ok := sn.Topo.Peer(topologies.PortRef{Node: i, Port: p}); ok && sn.Have[peer.Node][peer.Port] {
		ends = append(ends, [2]int{peer.Node, peer.Port})
	}
	r.links = append(r.links, l)
	r.ends[l] = ends
	r.dark[l] = true
	for _, e := range ends {
		if sn.IsSwitch(e[0]) {
			r.switches[e[0]] = true
		}
	}
	pi := forSet(sn.PortInfo[i][p])
	pi.PortState = mad.PortStateDown
	s.keyFields(sn, i, p, &pi)
	s.tx.Set(txn.Request{DR: true, Path: sn.path(i, p), Attr: mad.AttrPortInfo, Mod: uint32(p),
		Data: mad.AppendPortInfo(nil, &pi)}, func(rsp *txn.Response) {
		if rsp.Err != nil {
			problem("deactivating %s port %d: %v", sn.Topo.Node(i).Name, p, rsp.Err)
			return
		}
		got := mad.PortInfo(rsp.Data).Fields()
		if !sn.IsSwitch(i) {
			s.mk.Set(portGUID(sn, i, p), &got)
		}
		sn.PortInfo[i][p] = got
		r.ready[np] = retrained(&got) // a port that retrains at once
		res.PortsDeactivated++
	})
}

// awaitRetrain reads the ends of r's links not back in Init yet, through
// links up only, until all are back (then no link is dark), or
// Config.RetrainTimeout has passed (a problem).
func (s *SM) awaitRetrain(ctx context.Context, sn *Subnet, r *retraining, problem func(string, ...any)) error {
	deadline := s.clk.Now().Add(s.cfg.RetrainTimeout)
	pause := retrainPause
	for {
		var waiting [][2]int
		for _, l := range r.links {
			up := false
			for _, e := range r.ends[l] {
				up = up || r.ready[e]
				if !r.ready[e] {
					waiting = append(waiting, e)
				}
			}
			if up {
				delete(r.dark, l)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if !s.clk.Now().Before(deadline) {
			for _, e := range waiting {
				problem("%s port %d did not train again: %v, %v", sn.Topo.Node(e[0]).Name, e[1],
					sn.PortInfo[e[0]][e[1]].PortState, sn.PortInfo[e[0]][e[1]].PortPhysicalState)
			}
			return nil
		}
		var now [][2]int
		for _, e := range waiting {
			if !sn.crossesDark(e, r.dark) {
				now = append(now, e)
			}
		}
		if len(now) == 0 {
			now = waiting // routes that are not a tree: read blind, with retries
		}
		moved := false
		for _, e := range now {
			i, p := e[0], e[1]
			s.tx.Get(txn.Request{DR: true, Path: sn.path(i, p), Attr: mad.AttrPortInfo, Mod: uint32(p)}, func(rsp *txn.Response) {
				if rsp.Err != nil {
					return // lost with a link dark still: read again
				}
				got := mad.PortInfo(rsp.Data).Fields()
				sn.PortInfo[i][p] = got
				if retrained(&got) {
					r.ready[e], moved = true, true
				}
			})
		}
		if err := s.tx.Run(ctx); err != nil {
			return err
		}
		if moved {
			pause = retrainPause
			continue
		}
		if err := s.pause(ctx, min(pause, deadline.Sub(s.clk.Now()))); err != nil {
			return err
		}
		pause = min(2*pause, retrainPauseMax)
	}
}

// pause serves traps and SMInfo requests for d on the SM's clock.
func (s *SM) pause(ctx context.Context, d time.Duration) error {
	until := s.clk.Now().Add(d)
	for s.clk.Now().Before(until) {
		if err := s.tx.Wait(ctx, until); err != nil {
			return err
		}
	}
	return nil
}

// settleOwnChanges takes back the traps and PortStateChange that the last
// deactivation caused at the switches it touched. For each, it reads the
// Notice the switch holds outstanding (a Trap 128 it sent while its route
// to the SM was dark is repeated only after TrapRepeatInterval, seconds,
// and covers any change until then), clears PortStateChange, then reads
// every port. When each port is as the database says (Active where there
// is a link, Down where there is none), the switch's traps were the
// deactivation's: they are taken out of the trap set, and the outstanding
// Notice is acknowledged (Set(Notice) with its NoticeCount), after which
// PortStateChange is read again. A change before the clearing shows in the
// ports, one after it in PortStateChange: either keeps the switch in the
// trap set, to be scanned; one after the acknowledgement raises a trap of
// its own.
func (s *SM) settleOwnChanges(ctx context.Context, sn *Subnet, res *Result) error {
	var order []int
	for sw := range s.ownChanges {
		order = append(order, sw)
	}
	s.ownChanges = nil
	slices.Sort(order)
	st := map[int]*settling{}
	for _, sw := range order {
		st[sw] = &settling{clean: true}
		s.settleSwitch(sn, sw, st[sw])
	}
	if err := s.tx.Run(ctx); err != nil {
		return err
	}
	for _, sw := range order {
		if x := st[sw]; x.clean && x.notice != nil {
			s.ackNotice(sn, sw, x)
		}
	}
	if err := s.tx.Run(ctx); err != nil {
		return err
	}
	for _, sw := range order {
		lid := sn.LID[sw][0]
		if lid == 0 {
			continue
		}
		if !st[sw].clean {
			s.trapLIDs[lid] = true // scanned by the next assimilation
			continue
		}
		delete(s.trapLIDs, lid)
		res.OwnTraps++
	}
	return nil
}

// settling is what settleOwnChanges learns of one switch: whether it is
// as the database says, and the Notice it holds outstanding, if any.
type settling struct {
	clean  bool
	notice mad.Notice
}

// settleSwitch reads the outstanding Notice of switch sw, clears its
// PortStateChange, then reads its ports.
func (s *SM) settleSwitch(sn *Subnet, sw int, x *settling) {
	path := sn.Paths[sw]
	n := sn.Topo.Node(sw)
	s.tx.Get(txn.Request{DR: true, Path: path, Attr: mad.AttrNotice}, func(rsp *txn.Response) {
		if rsp.Err != nil {
			return // no Notice to acknowledge: its trap repeats
		}
		if nt := mad.Notice(rsp.Data); nt.IsGeneric() && nt.TrapNumber() == mad.TrapLinkStateChange {
			x.notice = slices.Clone(rsp.Data)
		}
	})
	readPorts := func() {
		for p := 1; p <= n.NumPorts; p++ {
			s.tx.Get(txn.Request{DR: true, Path: path, Attr: mad.AttrPortInfo, Mod: uint32(p)}, func(rsp *txn.Response) {
				if rsp.Err != nil {
					x.clean = false
					return
				}
				st := mad.PortInfo(rsp.Data).Fields().PortState
				_, cabled := sn.Topo.Peer(topologies.PortRef{Node: sw, Port: p})
				if (cabled && st != mad.PortStateActive) || (!cabled && st != mad.PortStateDown) {
					x.clean = false
				}
			})
		}
	}
	s.tx.Get(txn.Request{DR: true, Path: path, Attr: mad.AttrSwitchInfo}, func(rsp *txn.Response) {
		if rsp.Err != nil {
			x.clean = false
			return
		}
		si := mad.SwitchInfo(rsp.Data).Fields()
		sn.Switch[sw] = si
		if !si.PortStateChange {
			readPorts()
			return
		}
		si.PortStateChange = true // writing 1 clears it
		s.tx.Set(txn.Request{DR: true, Path: path, Attr: mad.AttrSwitchInfo, Data: mad.AppendSwitchInfo(nil, &si)},
			func(rsp *txn.Response) {
				if rsp.Err != nil {
					x.clean = false
					return
				}
				sn.Switch[sw] = mad.SwitchInfo(rsp.Data).Fields()
				readPorts()
			})
	})
}

// ackNotice acknowledges the outstanding Notice of switch sw, then reads
// PortStateChange again: set, a change came after the clearing, and the
// switch is not clean.
func (s *SM) ackNotice(sn *Subnet, sw int, x *settling) {
	path := sn.Paths[sw]
	s.tx.Set(txn.Request{DR: true, Path: path, Attr: mad.AttrNotice, Data: x.notice}, func(rsp *txn.Response) {
		if rsp.Err != nil {
			return // not acknowledged: its trap repeats
		}
		s.tx.Get(txn.Request{DR: true, Path: path, Attr: mad.AttrSwitchInfo}, func(rsp *txn.Response) {
			if rsp.Err != nil || mad.SwitchInfo(rsp.Data).Fields().PortStateChange {
				x.clean = false
			}
		})
	})
}
