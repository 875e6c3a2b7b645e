package sm

import (
	"context"
	"fmt"
	"time"

	"ibfab/sm/routing"
	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// A standby SM (IBA 14.4.1, OpenSM's osm_sm_state_mgr.c): it polls the
// master's SMInfo every Config.PollInterval and counts the polls that go
// unanswered in a row; when the Config.PollRetries+1-th times out, it
// gives the master up, becomes Discovering and sweeps (Run). OpenSM gives
// up at its next poll after those; ibsm does not wait for it, so it sees
// a master gone within (PollRetries+1) × PollInterval + Config.Timeout of
// the master's last answer, a poll's timeout less than OpenSM's bound
// (PollingBound). An answer counts when the SM polled is Master, or Standby
// of higher precedence (handing over to another); if it is a Master of
// lower precedence, the poll also sends it a Trap 144 so that it hands
// over. A standby sends nothing else: no sweep, no light sweep.
//
// A NotActive SM (DISABLE) only answers SMInfo until a master sets it
// Standby.

// PollingBound returns the longest the SM, as a standby, takes to see its
// master gone (see the function PollingBound).
func (s *SM) PollingBound() time.Duration { return PollingBound(s.cfg.PollInterval, s.cfg.PollRetries) }

// standby polls the master until the SM's state changes: a polling
// timeout makes it Discovering, an SMInfo Set Master, Discovering or
// NotActive.
func (s *SM) standby(ctx context.Context) error {
	s.misses = 0
	next := s.clk.Now()
	for s.state == mad.SMStateStandby {
		if now := s.clk.Now(); !now.Before(next) {
			s.misses++
			if err := s.poll(ctx); err != nil {
				return err
			}
			if s.state == mad.SMStateStandby && s.misses > s.cfg.PollRetries {
				var peer *SMPeer
				if r := s.remotes[s.master]; r != nil {
					peer = r.peer()
				}
				missed := s.misses
				s.comingOut, s.dirty, s.master = true, true, 0
				s.setState(mad.SMStateDiscovering, SMActionPollingTimeout, peer,
					fmt.Sprintf("%d polls unanswered", missed))
				return nil
			}
			next = next.Add(s.cfg.PollInterval)
			if n := s.clk.Now(); next.Before(n) {
				next = n // a poll that took longer than the interval
			}
			continue
		}
		if err := s.serveUntil(ctx, next); err != nil {
			return err
		}
		if err := s.sendPending(ctx); err != nil {
			return err
		}
	}
	return nil
}

// poll asks the master for its SMInfo once; an answer that shows it
// alive resets the misses.
func (s *SM) poll(ctx context.Context) error {
	r := s.remotes[s.master]
	if r == nil {
		return nil // nothing to poll: the misses run out
	}
	s.polls++
	s.tx.SetPhase(PhaseWatch)
	s.askRemote(r, r.info.GUID, true, true, func(got *remoteSM) {
		r.info = got.info
		me := s.mySMInfo(false)
		switch {
		case got.info.SMState == mad.SMStateMaster:
			s.misses = 0
			if higher(me, got.info) {
				s.sendTrap144(r)
			}
		case got.info.SMState == mad.SMStateStandby && higher(got.info, me):
			s.misses = 0 // handing over to another, or waiting to be handed over to
		}
	}, func(error) {})
	return s.tx.Run(ctx)
}

// notActive answers SMInfo until a master sets the SM Standby.
func (s *SM) notActive(ctx context.Context) error {
	for s.state == mad.SMStateNotActive {
		if err := s.serveUntil(ctx, s.clk.Now().Add(s.cfg.PollInterval)); err != nil {
			return err
		}
	}
	return nil
}

// serveUntil answers SMInfo requests and traps until until, or until the
// SM's state changes or it has an SMInfo Set to send.
func (s *SM) serveUntil(ctx context.Context, until time.Time) error {
	s.tx.SetPhase(PhaseWatch)
	st := s.state
	for s.state == st && len(s.toSend) == 0 && s.clk.Now().Before(until) {
		if err := s.waitServing(ctx, until); err != nil {
			return err
		}
	}
	return nil
}

// forgetWritten forgets what the SM wrote to the devices: out of standby,
// another master may have written anything since. Every manager forgets
// its records too, so that the first sweep reads the devices again: the
// partition manager its P_Key tables, congestion control and adaptive
// routing their targets (read again as new ones). The QoS manager's VL
// arbitration tables are in the shadow.
func (s *SM) forgetWritten() {
	clear(s.shadow)
	clear(s.blocked)
	clear(s.kept)
	if s.part != nil {
		s.part.ForgetAll()
	}
	if s.cc != nil {
		s.cc.Forget()
	}
	if s.ar != nil {
		s.ar.Forget()
	}
}

// keptRoutes is the first routing out of standby (a takeover or a
// handover): it reads back the LFT blocks every switch of sn holds, up
// to the top LID of sn, into the shadow, and when those tables verify on
// sn (every pair of end ports connected, no credit loop; switch LIDs
// exempt, as management traffic to them rides VL15) they are the route
// set, kept as the old master left them: nothing is rewritten, and no
// flow moves. Else nil, and the engine routes, distribution then sending
// only the blocks that differ from what the switches hold.
func (s *SM) keptRoutes(ctx context.Context, sn *Subnet, res *Result) (*routing.Routes, *routing.Report, error) {
	top := sn.MaxLID()
	rt := &routing.Routes{Engine: KeptRoutes, MaxLID: top, LFT: make([][]uint8, sn.Topo.NumNodes()), SwitchLIDsExempt: true}
	read := true
	for _, sw := range sn.Switches() {
		lft := make([]uint8, int(top)+1)
		for i := range lft {
			lft[i] = mad.LFTNoPort
		}
		rt.LFT[sw] = lft
		held := int(sn.Switch[sw].LinearFDBTop)
		if held == 0 {
			read = false // a switch no SM has set up
			continue
		}
		guid, name := sn.Topo.Node(sw).GUID, sn.Topo.Node(sw).Name
		for b := 0; b <= int(top)/mad.LFTEntriesPerBlock; b++ {
			k := shadowKey{guid, 0, mad.AttrLinearFwdTbl, uint32(b)}
			s.tx.Get(txn.Request{DR: true, Path: sn.Paths[sw], Attr: mad.AttrLinearFwdTbl, Mod: uint32(b)}, func(r *txn.Response) {
				if r.Err != nil {
					read = false
					res.Warnings = append(res.Warnings, fmt.Sprintf("reading LFT block %d of %s: %v", b, name, r.Err))
					return
				}
				blk := append([]byte(nil), r.Data[:mad.LFTEntriesPerBlock]...)
				s.shadow[k] = blk
				for j, port := range blk {
					if lid := b*mad.LFTEntriesPerBlock + j; lid <= int(top) && lid <= held {
						lft[lid] = port
					}
				}
			})
		}
	}
	if err := s.tx.Run(ctx); err != nil || !read {
		return nil, nil, err
	}
	rep := routing.Verify(&sn.Fabric, rt)
	if !rep.Connected() || !rep.DeadlockFree() {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the forwarding tables found do not do: %v; routing anew", rep.Err()))
		return nil, nil, nil
	}
	return rt, rep, nil
}

// KeptRoutes names the route set of a takeover that keeps the tables the
// switches hold (keptRoutes).
const KeptRoutes = "kept"
