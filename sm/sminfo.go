package sm

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"ibfab/internal/enum"
	"ibfab/madport"
	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// SMInfo and the SM's state (IBA 14.4), with OpenSM's behaviour where it
// decides what the spec leaves open (osm_sminfo_rcv.c, osm_sm_state_mgr.c,
// osm_state_mgr.c):
//
//   - Election. After discovery the SM asks every other port with the IsSM
//     capability for its SMInfo, carrying its own (its SM_Key included).
//     An SM whose answer shows another SM_Key takes no part (unless ours
//     is 0). A Discovering SM that finds a Master, or an SM of higher
//     priority (then lower GUID), goes Standby and polls it; else it is
//     Master. A Master that finds a higher SM, whatever its state but
//     NotActive, hands the subnet over to it; one that finds a lower
//     Master waits for that one's handover and configures nothing
//     meanwhile.
//   - Standby (standby.go). A standby polls the master's SMInfo every
//     Config.PollInterval, and neither sweeps nor configures. Once
//     Config.PollRetries+1 polls in a row went unanswered it becomes
//     Discovering and sweeps: it keeps the LIDs the ports hold, reloads
//     Config.LIDFile (the master's cache when the path is shared), reads
//     the forwarding tables back before writing any, and so sends only
//     the blocks its routes change. A standby of higher priority than
//     the master it polls sends it Trap 144 (SM priority changed) at
//     every poll, as OpenSM does, so that the master hands over.
//   - Handover. A master sends SMInfo Set(HANDOVER) with its SM_Key; the
//     standby answers, sends Set(ACKNOWLEDGE) back (its SMInfo still
//     Standby, which is what OpenSM's legality check wants of an
//     ACKNOWLEDGE), becomes Master and sweeps; the old master goes
//     Standby once its HANDOVER is answered.
//   - Trap 144 from another port is repressed, and its SM's SMInfo read:
//     a master hands over to it when it is higher.
//   - SMInfo Get and Set as the SM serves them: the M_Key check of the
//     SM's own port first, as OpenSM does (the key the port holds, with its
//     protection bits as discovery read them): a Get that fails it at
//     protection 1 sees SM_Key 0, at 2 and 3 goes unanswered, a Set that
//     fails it goes unanswered. A Set whose SM_Key is not ours (when ours
//     is not 0), or that is not legal from the sender's state or in ours,
//     changes nothing and is answered with status "invalid field" and
//     SM_Key 0.
//
// Every change of state and every HANDOVER, ACKNOWLEDGE, DISCOVER,
// DISABLE and STANDBY sent or received is an SMEvent (Config.OnSMEvent).

// SMEvent is a change of the SM's state, or an SMInfo exchange with
// another SM; ibsm prints it as a JSON line.
type SMEvent struct {
	Event    string   `json:"event"` // "sm"
	Action   SMAction `json:"action"`
	State    string   `json:"state"` // this SM's state after it
	Previous string   `json:"previous,omitempty"`
	Peer     *SMPeer  `json:"peer,omitempty"` // the other SM
	Reason   string   `json:"reason,omitempty"`
}

// SMPeer is another SM as an SMEvent names it.
type SMPeer struct {
	GUID     string `json:"guid"` // port GUID, 0x-prefixed hex
	LID      uint16 `json:"lid,omitempty"`
	Priority uint8  `json:"priority"`
	State    string `json:"state"`
}

// SMAction is what an SMEvent reports; JSON spells it by name.
type SMAction uint8

//go:generate go tool stringer -type=SMAction -linecomment

// The actions of an SMEvent.
const (
	smActionNone SMAction = iota //
	// SMActionElection: discovery is done and the SM is Master, or
	// Standby under the SM that Peer names.
	SMActionElection // election
	// SMActionHandoverSent: this master handed the subnet to Peer, a
	// higher SM, and went Standby (with Reason: the handover failed, and
	// it stays Master).
	SMActionHandoverSent // handover-sent
	// SMActionHandover: Peer, the master, handed the subnet to this SM.
	SMActionHandover // handover
	// SMActionAcknowledgeSent: this SM acknowledged Peer's handover.
	SMActionAcknowledgeSent // acknowledge-sent
	// SMActionAcknowledge: Peer acknowledged this SM's handover.
	SMActionAcknowledge // acknowledge
	// SMActionDiscover, SMActionDisable, SMActionStandby: Peer, the
	// master, set this SM Discovering, NotActive, Standby.
	SMActionDiscover // discover
	SMActionDisable  // disable
	SMActionStandby  // standby
	// SMActionPollingTimeout: the master stopped answering this standby's
	// polls, which takes the subnet over.
	SMActionPollingTimeout // polling-timeout
	// SMActionTrap144: Peer's port reported a change of its capabilities
	// or of its SM's priority (Trap 144).
	SMActionTrap144 // trap144
	// SMActionRefused: an SMInfo Set of Peer's changed nothing (Reason
	// says why).
	SMActionRefused // refused
	// SMActionIgnored: Peer shows another SM_Key and takes no part in the
	// election.
	SMActionIgnored // ignored
)

var smActions = enum.New("SM action", smActionNone, SMActionElection, SMActionHandoverSent, SMActionHandover, SMActionAcknowledgeSent, SMActionAcknowledge, SMActionDiscover, SMActionDisable, SMActionStandby, SMActionPollingTimeout, SMActionTrap144, SMActionRefused, SMActionIgnored).Wrap(ErrConfig)

// MarshalText implements encoding.TextMarshaler.
func (a SMAction) MarshalText() ([]byte, error) { return smActions.Marshal(a) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *SMAction) UnmarshalText(text []byte) error { return smActions.Unmarshal(a, text) }

// remoteSM is another SM of the subnet, as it last answered.
type remoteSM struct {
	info mad.SMInfoFields
	lid  uint16  // its port's base LID, 0 when unknown
	path []uint8 // directed route to its port, nil when unknown
}

func (r *remoteSM) peer() *SMPeer {
	return &SMPeer{GUID: fmt.Sprintf("%#016x", r.info.GUID), LID: r.lid, Priority: r.info.Priority,
		State: r.info.SMState.String()}
}

// smInfoSet is an SMInfo Set waiting to be sent (an ACKNOWLEDGE).
type smInfoSet struct {
	to   uint64 // the port GUID of the SM it goes to
	lid  uint16 // where it goes when that SM is not known
	mod  uint32
	info mad.SMInfoFields
}

// mySMInfo returns this SM's SMInfo, its SM_Key only when showKey.
func (s *SM) mySMInfo(showKey bool) mad.SMInfoFields {
	f := mad.SMInfoFields{GUID: s.guid, ActCount: s.actCount, Priority: s.cfg.Priority, SMState: s.state}
	if showKey {
		f.SMKey = s.cfg.SMKey
	}
	return f
}

// higher reports whether SM a has precedence over SM b: a higher
// priority, or the same and a lower GUID.
func higher(a, b mad.SMInfoFields) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return a.GUID < b.GUID
}

// keyOK reports whether another SM showing key takes part in the
// election: it has our key, or ours is 0.
func (s *SM) keyOK(key uint64) bool { return s.cfg.SMKey == 0 || key == s.cfg.SMKey }

// emit reports an event to Config.OnSMEvent.
func (s *SM) emit(action SMAction, prev mad.SMState, peer *SMPeer, reason string) {
	if s.cfg.OnSMEvent == nil {
		return
	}
	e := SMEvent{Event: "sm", Action: action, State: s.state.String(), Peer: peer, Reason: reason}
	if prev != s.state {
		e.Previous = prev.String()
	}
	s.cfg.OnSMEvent(e)
}

// setState moves the SM to st and reports it.
func (s *SM) setState(st mad.SMState, action SMAction, peer *SMPeer, reason string) {
	prev := s.state
	s.state = st
	s.emit(action, prev, peer, reason)
}

// becomeStandby makes the SM Standby, polling r.
func (s *SM) becomeStandby(r *remoteSM, action SMAction, reason string) {
	s.master, s.misses = r.info.GUID, 0
	s.setState(mad.SMStateStandby, action, r.peer(), reason)
}

// smPorts returns the end ports of sn with the IsSM capability, but the
// SM's own.
func smPorts(sn *Subnet) [][2]int {
	var out [][2]int
	for i := range sn.Topo.NumNodes() {
		for p, pi := range sn.PortInfo[i] {
			if !sn.Have[i][p] || pi.CapabilityMask&mad.PortCapIsSM == 0 || (i == sn.SMNode && p == sn.SMPort) {
				continue
			}
			if sn.IsSwitch(i) && p != 0 {
				continue
			}
			out = append(out, [2]int{i, p})
		}
	}
	return out
}

// portGUID returns the GUID of end port p of node i of sn.
func portGUID(sn *Subnet, i, p int) uint64 {
	if sn.IsSwitch(i) {
		return sn.Topo.Node(i).GUID
	}
	return sn.Topo.Node(i).Ports[p].GUID
}

// askSM queues a Get of the SMInfo of the SM at port p of node i, carrying
// ours; done hears of a valid answer (from the port's GUID), fail of
// anything else. once sends it one time only.
func (s *SM) askSM(sn *Subnet, i, p int, once bool, done func(*remoteSM), fail func(error)) {
	r := &remoteSM{lid: sn.LID[i][p], path: sn.path(i, p)}
	s.askRemote(r, portGUID(sn, i, p), false, once, done, fail)
}

// askRemote queues a Get of the SMInfo of the SM at r, whose port GUID is
// guid: LID-routed when poll says so and both ends have LIDs, else
// directed; a poll, and a request once, are sent one time only.
func (s *SM) askRemote(r *remoteSM, guid uint64, poll, once bool, done func(*remoteSM), fail func(error)) {
	me := s.mySMInfo(true)
	req := txn.Request{DR: true, Path: r.path, Attr: mad.AttrSMInfo, Data: mad.AppendSMInfo(nil, &me), Once: poll || once}
	if (poll && r.lid != 0 && s.subnet != nil && s.subnet.SMLID != 0) || r.path == nil {
		req.DR, req.Path, req.LID = false, nil, r.lid
	}
	if req.LID == 0 && req.Path == nil {
		fail(fmt.Errorf("no route to SM %#x", guid))
		return
	}
	s.tx.Get(req, func(resp *txn.Response) {
		if resp.Err != nil {
			fail(resp.Err)
			return
		}
		f := mad.SMInfo(resp.Data).Fields()
		switch {
		case f.GUID != guid:
			fail(fmt.Errorf("SMInfo names port %#x, not %#x", f.GUID, guid))
		case !s.keyOK(f.SMKey):
			got := &remoteSM{info: f, lid: r.lid, path: r.path}
			s.emit(SMActionIgnored, s.state, got.peer(), fmt.Sprintf("SM_Key %#x is not ours", f.SMKey))
			fail(fmt.Errorf("SM %#x shows another SM_Key", guid))
		default:
			done(&remoteSM{info: f, lid: r.lid, path: r.path})
		}
	})
}

// querySMs asks every other SM port of sn for its SMInfo and keeps the
// answers as the subnet's other SMs.
func (s *SM) querySMs(ctx context.Context, sn *Subnet, res *Result) error {
	found := map[uint64]*remoteSM{}
	for _, ip := range smPorts(sn) {
		i, p := ip[0], ip[1]
		s.askSM(sn, i, p, false, func(r *remoteSM) { found[r.info.GUID] = r }, func(err error) {
			res.Warnings = append(res.Warnings, fmt.Sprintf("SM at %s port %d: %v", sn.Topo.Node(i).Name, p, err))
		})
	}
	if err := s.tx.Run(ctx); err != nil {
		return err
	}
	s.remotes = found
	return nil
}

// highest returns the other SM, not NotActive, with precedence over this
// one and every other; nil when this SM has it.
func (s *SM) highest() *remoteSM {
	best := s.mySMInfo(false)
	var out *remoteSM
	for _, g := range s.remoteGUIDs() {
		r := s.remotes[g]
		if r.info.SMState != mad.SMStateNotActive && higher(r.info, best) {
			best, out = r.info, r
		}
	}
	return out
}

// remoteMaster returns another SM that is Master, if any.
func (s *SM) remoteMaster() *remoteSM {
	for _, g := range s.remoteGUIDs() {
		if r := s.remotes[g]; r.info.SMState == mad.SMStateMaster {
			return r
		}
	}
	return nil
}

// remoteGUIDs returns the other SMs' GUIDs, sorted: decisions do not
// depend on map order.
func (s *SM) remoteGUIDs() []uint64 {
	out := make([]uint64, 0, len(s.remotes))
	for g := range s.remotes {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// elect holds the election once discovery has found sn: see the top of
// the file.
func (s *SM) elect(ctx context.Context, sn *Subnet, res *Result) error {
	s.waitHandover = false
	if err := s.querySMs(ctx, sn, res); err != nil {
		return err
	}
	if s.state == mad.SMStateMaster {
		if h := s.highest(); h != nil {
			return s.handOver(ctx, h, res)
		}
		if m := s.remoteMaster(); m != nil {
			// IBA C14-60.2.1: the other master hands over, and this one
			// configures nothing meanwhile.
			s.waitHandover = true
			res.Reason = fmt.Sprintf("SM %#x (priority %d) is master too: waiting for its handover", m.info.GUID, m.info.Priority)
			// The lower master may not know this SM: one that took the
			// subnet over because its polls of this one went unanswered
			// (SMP loss) forgets it, and a master's light sweeps ask only
			// the SMs it knows. Only a Trap 144 makes it sweep in full and
			// find this one; OpenSM's waiting master sends one at every
			// look at the other, and so does this one, at every sweep,
			// or both stay Master until some other change (a soak saw
			// OpenSM keep the subnet for minutes after 20 % SMP loss).
			s.sendTrap144(m)
		}
		return nil
	}
	if m := s.remoteMaster(); m != nil {
		res.Reason = fmt.Sprintf("SM %#x (priority %d, Master) wins the election", m.info.GUID, m.info.Priority)
		s.becomeStandby(m, SMActionElection, "a master runs the subnet")
		return nil
	}
	if h := s.highest(); h != nil {
		res.Reason = fmt.Sprintf("SM %#x (priority %d, %v) wins the election", h.info.GUID, h.info.Priority, h.info.SMState)
		s.becomeStandby(h, SMActionElection, "an SM of higher priority")
		return nil
	}
	s.setState(mad.SMStateMaster, SMActionElection, nil, "")
	return nil
}

// handOver sends Set(HANDOVER) to r and goes Standby under it once it
// answers; when it does not, this SM stays Master (res, if any, and the
// event say why).
func (s *SM) handOver(ctx context.Context, r *remoteSM, res *Result) error {
	if sn := s.subnet; sn != nil && len(s.blocked) > 0 {
		// The new master may not undo them (see liftBlocks).
		lifted := res
		if lifted == nil {
			lifted = &Result{}
		}
		if err := s.liftBlocks(ctx, sn, lifted); err != nil {
			return err
		}
	}
	me := s.mySMInfo(true)
	failed := fmt.Errorf("no route to it")
	if r.path != nil || r.lid != 0 {
		req := txn.Request{DR: r.path != nil, Path: r.path, LID: r.lid, Attr: mad.AttrSMInfo, Mod: mad.SMInfoHandover,
			Data: mad.AppendSMInfo(nil, &me)}
		s.tx.Set(req, func(resp *txn.Response) { failed = resp.Err })
		if err := s.tx.Run(ctx); err != nil {
			return err
		}
	}
	if failed != nil {
		reason := fmt.Sprintf("handover to SM %#x failed: %v", r.info.GUID, failed)
		if res != nil {
			res.Warnings = append(res.Warnings, reason)
		}
		s.emit(SMActionHandoverSent, s.state, r.peer(), reason)
		return nil
	}
	if res != nil {
		res.Reason = fmt.Sprintf("handed over to SM %#x (priority %d)", r.info.GUID, r.info.Priority)
	}
	s.installed = false
	s.becomeStandby(r, SMActionHandoverSent, "")
	return nil
}

// reviewSMs asks the SMs of the subnet for their SMInfo again, those at
// the LIDs of lids only when lids is not nil (the ports whose Trap 144
// came in), and hands over to a higher one. Only a master does.
func (s *SM) reviewSMs(ctx context.Context, lids map[uint16]bool) error {
	sn := s.subnet
	if sn == nil || s.state != mad.SMStateMaster {
		return nil
	}
	var ports [][2]int
	if lids == nil {
		ports = smPorts(sn)
	} else {
		for _, e := range sn.Ends() {
			if lids[e.LID] {
				ports = append(ports, [2]int{e.Node, e.Port})
			}
		}
	}
	for _, ip := range ports {
		// Once: a sweep for changes does not wait on an SM that is gone,
		// which is forgotten until it answers again.
		guid := portGUID(sn, ip[0], ip[1])
		s.askSM(sn, ip[0], ip[1], true, func(r *remoteSM) { s.remotes[r.info.GUID] = r },
			func(error) { delete(s.remotes, guid) })
	}
	if err := s.tx.Run(ctx); err != nil {
		return err
	}
	if h := s.highest(); h != nil {
		return s.handOver(ctx, h, nil)
	}
	return nil
}

// unsolicited handles a request or trap that reached the SM.
func (s *SM) unsolicited(m madport.MAD) {
	h := mad.MAD(m.Data)
	switch {
	case h.AttrID() == mad.AttrSMInfo && (h.Method() == mad.MethodGet || h.Method() == mad.MethodSet):
		s.answerSMInfo(m)
	case h.Method() == mad.MethodTrap && h.AttrID() == mad.AttrNotice && h.MgmtClass() == mad.ClassSubnLID:
		s.repress(m)
	case h.Method() == mad.MethodTrapRepress && h.AttrID() == mad.AttrNotice:
		s.repressed++ // of a Trap 144 of ours
	default:
		s.tx.CountUnexpected()
	}
}

// smpMKeyOffset is where both SMP formats carry the M_Key.
const smpMKeyOffset = 24

// mkeyCheck applies the M_Key check of the SM's own port to an SMInfo
// request, as OpenSM does: whether to answer it, and whether the answer
// may show the SM_Key.
func (s *SM) mkeyCheck(m []byte, get bool) (answer, showKey bool) {
	mine := s.mk.Key(s.guid)
	if mine == 0 || binary.BigEndian.Uint64(m[smpMKeyOffset:]) == mine {
		return true, true
	}
	var bits uint8
	if sn := s.subnet; sn != nil && sn.Have[sn.SMNode][sn.SMPort] {
		bits = sn.PortInfo[sn.SMNode][sn.SMPort].MKeyProtectBits
	}
	switch {
	case !get || bits > 1:
		return false, false
	case bits == 1:
		return true, false
	}
	return true, true
}

// answerSMInfo answers SMInfo Get and Set (see the top of the file).
func (s *SM) answerSMInfo(m madport.MAD) {
	h := mad.MAD(m.Data)
	dr := h.MgmtClass() == mad.ClassSubnDirected
	var data []byte
	if dr {
		data = mad.DRSMP(m.Data).Data()
	} else {
		data = mad.SMP(m.Data).Data()
	}
	theirs := mad.SMInfo(data).Fields()
	get := h.Method() == mad.MethodGet
	answer, show := s.mkeyCheck(m.Data, get)
	if !answer {
		s.mkeyDrops++
		return
	}
	status := mad.StatusOK
	var after func()
	if !get {
		after, status = s.serveSet(m, h.AttrModifier(), theirs)
		show = status == mad.StatusOK
	}
	resp := append([]byte(nil), m.Data...)
	mine := s.mySMInfo(show)
	rh := mad.MAD(resp)
	rh.SetMethod(mad.MethodGetResp)
	if dr {
		b := mad.DRSMP(resp)
		b.SetDirection(true)
		b.SetStatus(status)
		clear(b.Data())
		mad.SMInfo(b.Data()).Encode(&mine)
	} else {
		rh.SetStatus(status)
		b := mad.SMP(resp)
		clear(b.Data())
		mad.SMInfo(b.Data()).Encode(&mine)
	}
	s.smInfos++
	s.tx.PhaseStats(PhaseWatch).SMPs++
	_ = s.port.Send(madport.MAD{LID: m.LID, QP: wire.QP0, SL: m.SL, Data: resp})
	if after != nil {
		after() // the state changes once the answer, in the old state, is out
	}
}

// serveSet decides an SMInfo Set whose attribute modifier is mod, from an
// SM whose SMInfo is theirs: the status to answer with, and what to do
// once the answer is sent.
func (s *SM) serveSet(m madport.MAD, mod uint32, theirs mad.SMInfoFields) (func(), mad.Status) {
	from := &remoteSM{info: theirs}
	if r := s.remotes[theirs.GUID]; r != nil {
		from.lid, from.path = r.lid, r.path
	}
	refuse := func(format string, args ...any) (func(), mad.Status) {
		s.refused++
		s.emit(SMActionRefused, s.state, from.peer(), fmt.Sprintf("%s: ", smInfoModName(mod))+fmt.Sprintf(format, args...))
		return nil, mad.StatusInvalidField
	}
	if s.cfg.SMKey != 0 && theirs.SMKey != s.cfg.SMKey {
		return refuse("SM_Key %#x is not ours", theirs.SMKey)
	}
	switch mod {
	case mad.SMInfoAcknowledge:
		if theirs.SMState != mad.SMStateStandby && theirs.SMState != mad.SMStateMaster {
			return refuse("from an SM in state %v", theirs.SMState)
		}
		if s.state != mad.SMStateStandby {
			return refuse("this SM is %v", s.state)
		}
		return func() { s.emit(SMActionAcknowledge, s.state, from.peer(), "") }, mad.StatusOK
	case mad.SMInfoHandover, mad.SMInfoDisable, mad.SMInfoStandby, mad.SMInfoDiscover:
		if theirs.SMState != mad.SMStateMaster {
			return refuse("from an SM in state %v, not Master", theirs.SMState)
		}
	default:
		return refuse("unknown attribute modifier")
	}
	switch {
	case mod == mad.SMInfoHandover && s.state == mad.SMStateStandby:
		return func() {
			// The ACKNOWLEDGE carries this SM's SMInfo as it was when
			// handed the subnet: Standby.
			s.toSend = append(s.toSend, smInfoSet{to: theirs.GUID, lid: m.LID, mod: mad.SMInfoAcknowledge,
				info: s.mySMInfo(true)})
			s.remember(from)
			s.comingOut, s.dirty, s.master = true, true, 0
			s.setState(mad.SMStateMaster, SMActionHandover, from.peer(), "")
		}, mad.StatusOK
	case mod == mad.SMInfoHandover && (s.state == mad.SMStateDiscovering || s.state == mad.SMStateMaster):
		// A sweep (going on, or the next) decides, as OpenSM does. The
		// sender mastered the subnet meanwhile (it took over when its
		// polls of this SM went unanswered, a link on the way down), and
		// may have written any table: the sweep forgets what this SM
		// wrote and reads the devices back, as one out of standby does.
		// A soak saw OpenSM master the subnet for half a second and hand
		// it back: its LFTs took turns this SM's cut-node blocks still
		// closed, and the data on them was dropped until ibsm died.
		return func() {
			s.comingOut, s.dirty = true, true
			s.emit(SMActionHandover, s.state, from.peer(), "a sweep decides")
		}, mad.StatusOK
	case mod == mad.SMInfoDiscover && s.state == mad.SMStateStandby:
		return func() {
			s.comingOut, s.dirty, s.master = true, true, 0
			s.setState(mad.SMStateDiscovering, SMActionDiscover, from.peer(), "")
		}, mad.StatusOK
	case mod == mad.SMInfoDisable && s.state == mad.SMStateStandby:
		return func() { s.setState(mad.SMStateNotActive, SMActionDisable, from.peer(), "") }, mad.StatusOK
	case mod == mad.SMInfoStandby && s.state == mad.SMStateNotActive:
		return func() {
			s.remember(from)
			s.master, s.misses = theirs.GUID, 0
			s.setState(mad.SMStateStandby, SMActionStandby, from.peer(), "")
		}, mad.StatusOK
	}
	return refuse("not legal while this SM is %v", s.state)
}

// remember keeps r among the subnet's other SMs, with the route known.
func (s *SM) remember(r *remoteSM) {
	if old := s.remotes[r.info.GUID]; old != nil {
		old.info = r.info
		return
	}
	s.remotes[r.info.GUID] = r
}

// smInfoModName names an SMInfo Set's attribute modifier.
func smInfoModName(mod uint32) string {
	switch mod {
	case mad.SMInfoHandover:
		return "HANDOVER"
	case mad.SMInfoAcknowledge:
		return "ACKNOWLEDGE"
	case mad.SMInfoDisable:
		return "DISABLE"
	case mad.SMInfoStandby:
		return "STANDBY"
	case mad.SMInfoDiscover:
		return "DISCOVER"
	}
	return fmt.Sprintf("modifier %d", mod)
}

// sendPending sends the SMInfo Sets that wait (ACKNOWLEDGE), each to its
// SM by the route the SM knows, else LID-routed to where its request came
// from.
func (s *SM) sendPending(ctx context.Context) error {
	if len(s.toSend) == 0 {
		return nil
	}
	for _, x := range s.toSend {
		r := &remoteSM{info: mad.SMInfoFields{GUID: x.to}, lid: x.lid}
		if known := s.remotes[x.to]; known != nil {
			r = known
		}
		req := txn.Request{DR: r.path != nil, Path: r.path, LID: r.lid, Attr: mad.AttrSMInfo, Mod: x.mod,
			Data: mad.AppendSMInfo(nil, &x.info)}
		if !req.DR && (req.LID == 0 || req.LID >= mad.MulticastLIDBase) {
			s.emit(SMActionAcknowledgeSent, s.state, r.peer(), "no route to the SM")
			continue
		}
		s.tx.Set(req, func(resp *txn.Response) {
			reason := ""
			if resp.Err != nil {
				reason = resp.Err.Error()
			}
			s.emit(SMActionAcknowledgeSent, s.state, r.peer(), reason)
		})
	}
	s.toSend = nil
	s.tx.SetPhase(PhaseWatch)
	return s.tx.Run(ctx)
}

// sendTrap144 announces this SM to r, a master it outranks (the one it
// polls as a standby, or the one whose handover it waits for as a
// master): a Trap 144 with the SM-priority change, LID-routed to its
// LID, as OpenSM sends it.
func (s *SM) sendTrap144(r *remoteSM) {
	sn := s.subnet
	if sn == nil || r.lid == 0 {
		return
	}
	info, err := s.port.Info()
	if err != nil || info.LID == 0 {
		return
	}
	capMask := mad.PortCapIsSM
	if sn.Have[sn.SMNode][sn.SMPort] {
		capMask |= sn.PortInfo[sn.SMNode][sn.SMPort].CapabilityMask
	}
	producer := mad.NodeTypeCA
	if sn.IsSwitch(sn.SMNode) {
		producer = mad.NodeTypeSwitch
	} else if sn.Topo.Node(sn.SMNode).Type == topologies.Router {
		producer = mad.NodeTypeRouter
	}
	n := mad.Trap144(producer, info.LID, capMask, mad.Trap144SMPriority)
	s.trapSeq++
	f := mad.SMPFields{Method: mad.MethodTrap, TransactionID: s.tx.TIDHigh() | 0x8000_0000 | uint64(s.trapSeq&0x7fff_ffff),
		AttrID: mad.AttrNotice, MKey: s.mk.Key(s.guid)}
	mad.Notice(f.Data[:]).Encode(&n)
	s.traps144++
	s.tx.PhaseStats(PhaseWatch).SMPs++
	_ = s.port.Send(madport.MAD{LID: r.lid, QP: wire.QP0, Data: mad.AppendSMP(nil, &f)})
}

// repress answers a trap with TrapRepress, so that its sender stops
// repeating it, and notes it: a Trap 128 for Check and assimilation, a
// Trap 144 for reviewSMs.
func (s *SM) repress(m madport.MAD) {
	was := s.trapped
	s.trapped = true
	if n, ok := badMKeyTrap(m.Data); ok {
		s.trapped = was // no link changed
		defer s.trap256(m, n)
	}
	switch lid, kind := trapLID(m.Data); kind {
	case mad.TrapLinkStateChange:
		s.trapLIDs[lid] = true
		if s.onTrap != nil {
			defer s.onTrap() // after the TrapRepress
		}
	case mad.TrapCapabilityMaskChange:
		s.trapped = false // no link changed
		s.smTraps[lid] = true
		n := mad.Notice(mad.SMP(m.Data).Data())
		peer := &SMPeer{GUID: "unknown", LID: lid}
		for _, g := range s.remoteGUIDs() {
			if r := s.remotes[g]; r.lid == lid {
				peer = r.peer()
			}
		}
		reason := fmt.Sprintf("capability mask %#x, change flags %#x", n.Trap144CapabilityMask(), n.Trap144ChangeFlags())
		defer s.emit(SMActionTrap144, s.state, peer, reason)
	default:
		if _, ok := badMKeyTrap(m.Data); !ok {
			s.badTraps++
		}
	}
	b := append([]byte(nil), m.Data...)
	mad.MAD(b).SetMethod(mad.MethodTrapRepress)
	s.represses++
	s.tx.PhaseStats(PhaseWatch).SMPs++
	_ = s.port.Send(madport.MAD{LID: m.LID, QP: wire.QP0, SL: m.SL, Data: b})
}

// trapLID returns what a trap the SM handles carries (a LID-routed
// SubnTrap of Notice, generic): the switch LID of a Trap 128, the port
// LID of a Trap 144, with the trap number; 0 for any other.
func trapLID(b []byte) (uint16, uint16) {
	if len(b) < mad.MADSize || mad.MAD(b).MgmtClass() != mad.ClassSubnLID {
		return 0, 0
	}
	n := mad.Notice(mad.SMP(b).Data())
	if !n.IsValid() || !n.IsGeneric() {
		return 0, 0
	}
	var lid uint16
	switch n.TrapNumber() {
	case mad.TrapLinkStateChange:
		lid = n.Trap128LID()
	case mad.TrapCapabilityMaskChange:
		lid = n.Trap144LID()
		if lid == 0 {
			lid = n.IssuerLID()
		}
	default:
		return 0, 0
	}
	if lid == 0 || lid >= mad.MulticastLIDBase {
		return 0, 0
	}
	return lid, n.TrapNumber()
}

// badMKeyTrap returns the notice of a Trap 256 (Bad M_Key): a LID-routed
// SubnTrap of a generic Notice with that number.
func badMKeyTrap(b []byte) (mad.Notice, bool) {
	if len(b) < mad.MADSize || mad.MAD(b).MgmtClass() != mad.ClassSubnLID {
		return nil, false
	}
	n := mad.Notice(mad.SMP(b).Data())
	if !n.IsValid() || !n.IsGeneric() || n.TrapNumber() != mad.TrapBadMKey {
		return nil, false
	}
	return n, true
}
