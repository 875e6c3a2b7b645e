package sm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// smInfoAnswer is an SMInfo GetResp as a requester sees it.
type smInfoAnswer struct {
	info   mad.SMInfoFields
	status mad.Status
}

// askSMInfo sends r from CA node from's port 1, lets the SM serve, and
// returns the SMInfo that came back, if any.
func askSMInfo(t *testing.T, b *bench, s *sm.SM, from int, r agent.Request) (smInfoAnswer, bool) {
	t.Helper()
	b.f.Send(from, r)
	require.NoError(t, s.Serve(context.Background(), time.Millisecond))
	for _, d := range b.f.Received(from) {
		m := mad.MAD(d.MAD)
		if m.AttrID() != mad.AttrSMInfo || m.Method() != mad.MethodGetResp {
			continue
		}
		if m.MgmtClass() == mad.ClassSubnDirected {
			return smInfoAnswer{mad.SMInfo(mad.DRSMP(d.MAD).Data()).Fields(), mad.DRSMP(d.MAD).Status()}, true
		}
		return smInfoAnswer{mad.SMInfo(mad.SMP(d.MAD).Data()).Fields(), m.Status()}, true
	}
	return smInfoAnswer{}, false
}

// lidSMInfo is an SMInfo request LID-routed to dlid, with mkey in its
// M_Key and info in its data.
func lidSMInfo(method mad.Method, mod uint32, dlid uint16, mkey uint64, info mad.SMInfoFields) agent.Request {
	f := mad.SMPFields{Method: method, TransactionID: 78, AttrID: mad.AttrSMInfo, AttrModifier: mod, MKey: mkey}
	mad.SMInfo(f.Data[:]).Encode(&info)
	return agent.Request{Port: 1, DLID: dlid, MAD: mad.AppendSMP(nil, &f)}
}

// protectOwnPort gives the port of CA node i M_Key key with protection
// bits, as an SM would have set them, before any SM runs there.
func protectOwnPort(t *testing.T, f *memfabric.Fabric, i int, key uint64, bits uint8) {
	t.Helper()
	local := func(method mad.Method, data []byte) mad.PortInfoFields {
		b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: method, AttrID: mad.AttrPortInfo, AttrModifier: 1,
			Path: []uint8{0}, Data: data})
		require.NoError(t, err)
		f.Send(i, agent.Request{Port: 1, MAD: b})
		f.Run()
		for _, d := range f.Received(i) {
			if mad.MAD(d.MAD).Method() == mad.MethodGetResp {
				require.Equal(t, mad.StatusOK, mad.DRSMP(d.MAD).Status())
				return mad.PortInfo(mad.DRSMP(d.MAD).Data()).Fields()
			}
		}
		t.Fatal("no PortInfo answer")
		return mad.PortInfoFields{}
	}
	pi := local(mad.MethodGet, nil)
	pi.PortState, pi.PortPhysicalState, pi.LinkDownDefaultState = mad.PortStateNoChange, mad.PhysStateNoChange, mad.PhysStateNoChange
	pi.LinkWidthEnabled, pi.LinkSpeedEnabled = mad.LinkWidthNoChange, mad.LinkSpeedNoChange
	pi.MKey, pi.MKeyProtectBits = key, bits
	got := local(mad.MethodSet, mad.AppendPortInfo(nil, &pi))
	require.Equal(t, bits, got.MKeyProtectBits)
}

// TestServeSMInfo asks the master SM for its SMInfo, directed-route and
// LID-routed, as OpenSM answers it: the SM_Key is hidden only from a
// requester that fails the M_Key check of the SM's port at protection
// level 1; at 2 such a request goes unanswered.
func TestServeSMInfo(t *testing.T) {
	const key, mkey = 0x5ec7, 0xabc
	tests := []struct {
		name      string
		mkey      uint64 // of the SM's port; 0 none
		bits      uint8
		requester uint64 // the M_Key the request carries
		answered  bool
		showsKey  bool
	}{
		{"no M_Key", 0, 0, 0, true, true},
		{"protection 0, wrong M_Key", mkey, 0, 7, true, true},
		{"protection 1, wrong M_Key", mkey, 1, 7, true, false},
		{"protection 1, right M_Key", mkey, 1, mkey, true, true},
		{"protection 2, wrong M_Key", mkey, 2, 7, false, false},
		{"protection 3, right M_Key", mkey, 3, mkey, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBench(t, topologies.Thesis8(), 0, 1)
			if tt.mkey != 0 {
				protectOwnPort(t, b.f, 0, tt.mkey, tt.bits)
			}
			s := b.newSM(t, sm.Config{
				ElectionConfig: sm.ElectionConfig{Priority: 7, SMKey: key},
				MKeyConfig:     sm.MKeyConfig{MKey: tt.mkey, MKeyProtect: tt.bits},
			})
			res := b.sweep(t, s)
			require.True(t, res.SubnetUp, res.Reason)
			ca7, _ := b.topo.Lookup("ca7")
			got, ok := askSMInfo(t, b, s, ca7, lidSMInfo(mad.MethodGet, 0, res.SMLID, tt.requester, mad.SMInfoFields{}))
			require.Equal(t, tt.answered, ok)
			assert.EqualValues(t, boolTo(tt.answered, 1), s.Stats().SMInfo)
			assert.EqualValues(t, boolTo(!tt.answered, 1), s.Stats().MKeyDrops)
			if !ok {
				return
			}
			assert.Equal(t, b.topo.Node(0).Ports[1].GUID, got.info.GUID)
			assert.Equal(t, mad.SMStateMaster, got.info.SMState)
			assert.EqualValues(t, 7, got.info.Priority)
			assert.Positive(t, got.info.ActCount)
			assert.EqualValues(t, boolTo(tt.showsKey, key), got.info.SMKey)
		})
	}
	t.Run("directed route", func(t *testing.T) {
		b := newBench(t, topologies.Thesis8(), 0, 1)
		s := b.newSM(t, sm.Config{ElectionConfig: sm.ElectionConfig{SMKey: key}})
		require.True(t, b.sweep(t, s).SubnetUp)
		ca7, _ := b.topo.Lookup("ca7")
		dr, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 77, AttrID: mad.AttrSMInfo,
			Path: []uint8{0, 1, 1, 3}}) // ca7 → sw2 → sw1 → ca4
		require.NoError(t, err)
		got, ok := askSMInfo(t, b, s, ca7, agent.Request{Port: 1, MAD: dr})
		require.True(t, ok, "no directed-route answer")
		assert.Equal(t, mad.SMStateMaster, got.info.SMState)
		assert.EqualValues(t, key, got.info.SMKey)
	})
}

func boolTo[T ~uint64 | ~int](b bool, v T) T {
	if b {
		return v
	}
	return 0
}

// TestSMInfoSet sends SMInfo Sets to an SM: those that are not legal in
// its state, or from the sender's, and those without its SM_Key, change
// nothing and are answered "invalid field" with SM_Key 0; the legal ones
// move it as IBA 14.4 and OpenSM say, one event each.
func TestSMInfoSet(t *testing.T) {
	const key = 0x77
	master := func(k uint64) mad.SMInfoFields {
		return mad.SMInfoFields{GUID: 0x1234, SMKey: k, Priority: 9, SMState: mad.SMStateMaster}
	}
	standby := func(k uint64) mad.SMInfoFields {
		return mad.SMInfoFields{GUID: 0x1234, SMKey: k, Priority: 9, SMState: mad.SMStateStandby}
	}
	type step struct {
		mod    uint32
		from   mad.SMInfoFields
		ok     bool
		state  mad.SMState // after
		action sm.SMAction // the event, 0 none
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"wrong SM_Key", []step{{mad.SMInfoHandover, master(key + 1), false, mad.SMStateMaster, sm.SMActionRefused}}},
		{"from a standby", []step{{mad.SMInfoHandover, standby(key), false, mad.SMStateMaster, sm.SMActionRefused}}},
		{"DISABLE to a master", []step{{mad.SMInfoDisable, master(key), false, mad.SMStateMaster, sm.SMActionRefused}}},
		{"ACKNOWLEDGE to a master", []step{{mad.SMInfoAcknowledge, standby(key), false, mad.SMStateMaster, sm.SMActionRefused}}},
		{"unknown modifier", []step{{9, master(key), false, mad.SMStateMaster, sm.SMActionRefused}}},
		{"HANDOVER to a master: a sweep decides", []step{{mad.SMInfoHandover, master(key), true, mad.SMStateMaster, sm.SMActionHandover}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBench(t, topologies.Thesis8(), 0, 1)
			var events recorder[sm.SMEvent]
			s := b.newSM(t, sm.Config{ElectionConfig: sm.ElectionConfig{SMKey: key, OnSMEvent: events.add}})
			res := b.sweep(t, s)
			require.True(t, res.SubnetUp)
			ca7, _ := b.topo.Lookup("ca7")
			for i, st := range tt.steps {
				before := len(events.list())
				got, ok := askSMInfo(t, b, s, ca7, lidSMInfo(mad.MethodSet, st.mod, res.SMLID, 0, st.from))
				require.True(t, ok, "step %d: no answer", i)
				if st.ok {
					assert.Equal(t, mad.StatusOK, got.status, "step %d", i)
					assert.EqualValues(t, key, got.info.SMKey, "step %d", i)
				} else {
					assert.Equal(t, mad.StatusInvalidField, got.status, "step %d", i)
					assert.Zero(t, got.info.SMKey, "step %d", i)
				}
				assert.Equal(t, st.state, s.State(), "step %d", i)
				evs := events.list()[before:]
				require.Len(t, evs, 1, "step %d: %+v", i, evs)
				assert.Equal(t, st.action, evs[0].Action)
				assert.Equal(t, "0x0000000000001234", evs[0].Peer.GUID)
			}
		})
	}
}

// otherSM is the port of an SM under test that also plays a second SM on
// another CA: after each of its sends it answers, with info, the SMInfo
// requests that reached the other CA, and records the Sets.
type otherSM struct {
	*memport.Port
	other  *memport.Port
	info   mad.SMInfoFields
	silent bool
	asked  int
	sets   []uint32 // the attribute modifiers of the Sets received
	keys   []uint64 // the SM_Key each carried
	traps  []uint16 // the Trap 144s received: the LID each names
	// lose, when set, says which MADs the SM sends are lost.
	lose func(m []byte) bool
}

// loseSets returns an otherSM.lose that loses the first n Sets of attr
// whose attribute modifier is mod and that go over hops hops (any, when
// hops is negative), and the count of those still to lose.
func loseSets(attr mad.AttrID, mod uint32, hops int, n int) (func([]byte) bool, *int) {
	left := n
	return func(m []byte) bool {
		h := mad.MAD(m)
		if left == 0 || h.Method() != mad.MethodSet || h.AttrID() != attr || h.AttrModifier() != mod ||
			hops >= 0 && (h.MgmtClass() != mad.ClassSubnDirected || int(mad.DRSMP(m).HopCount()) != hops) {
			return false
		}
		left--
		return true
	}, &left
}

func (o *otherSM) Send(m madport.MAD) error {
	if o.lose != nil && o.lose(m.Data) {
		return nil // lost on the way
	}
	if err := o.Port.Send(m); err != nil {
		return err
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		r, err := o.other.Recv(done)
		if err != nil {
			return nil
		}
		h := mad.MAD(r.Data)
		if h.Method() == mad.MethodTrap && h.AttrID() == mad.AttrNotice {
			if n := mad.Notice(mad.SMP(r.Data).Data()); n.TrapNumber() == mad.TrapCapabilityMaskChange {
				o.traps = append(o.traps, n.Trap144LID())
			}
			continue
		}
		if h.AttrID() != mad.AttrSMInfo || o.silent || h.Method().IsResponse() {
			continue
		}
		o.asked++
		if h.Method() == mad.MethodSet {
			o.sets = append(o.sets, h.AttrModifier())
			o.keys = append(o.keys, mad.SMInfo(mad.DRSMP(r.Data).Data()).SMKey())
		}
		resp := append([]byte(nil), r.Data...)
		b := mad.DRSMP(resp)
		b.MAD().SetMethod(mad.MethodGetResp)
		b.SetDirection(true)
		clear(b.Data())
		mad.SMInfo(b.Data()).Encode(&o.info)
		if err := o.other.Send(madport.MAD{LID: r.LID, Data: resp}); err != nil {
			return err
		}
	}
}

// TestElection runs the SM on CA 15 while CA 4 holds another SM, played
// by the test: the SM is Master or Standby as IBA 14.4.1 says, an SM
// with another SM_Key or a GUID not its port's takes no part, and a
// standby SM handed the subnet over sweeps again and takes it.
func TestElection(t *testing.T) {
	topo := topologies.Thesis8()
	ca4, _ := topo.Lookup("ca4")
	ca15, _ := topo.Lookup("ca15")
	theirGUID, ourGUID := topo.Node(ca4).Ports[1].GUID, topo.Node(ca15).Ports[1].GUID
	sameWins := ourGUID < theirGUID // at equal priority
	other := func(prio uint8, state mad.SMState) mad.SMInfoFields {
		return mad.SMInfoFields{GUID: theirGUID, SMKey: 1, Priority: prio, SMState: state}
	}
	tests := []struct {
		name    string
		prio    uint8
		other   mad.SMInfoFields
		silent  bool
		master  bool
		ignored bool
	}{
		{"other is master, lower", 15, other(0, mad.SMStateMaster), false, false, false},
		{"other has higher priority", 3, other(9, mad.SMStateStandby), false, false, false},
		{"other discovering, higher", 3, other(9, mad.SMStateDiscovering), false, false, false},
		{"other has lower priority", 3, other(2, mad.SMStateDiscovering), false, true, false},
		{"same priority, GUID decides", 3, other(3, mad.SMStateStandby), false, sameWins, false},
		{"other is NotActive, higher", 3, other(9, mad.SMStateNotActive), false, true, false},
		{"other has another SM_Key", 3, mad.SMInfoFields{GUID: theirGUID, SMKey: 2, Priority: 9, SMState: mad.SMStateMaster}, false, true, true},
		{"other names another GUID", 3, mad.SMInfoFields{GUID: 0x99, SMKey: 1, Priority: 9, SMState: mad.SMStateMaster}, false, true, false},
		{"other does not answer", 0, mad.SMInfoFields{}, true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, port := besideSM(t, topo, tt.other, tt.silent)
			var events recorder[sm.SMEvent]
			s, err := sm.New(port, sm.Config{
				ElectionConfig: sm.ElectionConfig{Priority: tt.prio, SMKey: 1, OnSMEvent: events.add},
			})
			require.NoError(t, err)
			res, err := s.Sweep(context.Background())
			require.NoError(t, err)
			if !tt.silent {
				assert.Equal(t, 1, port.asked)
			}
			evs := events.list()
			require.NotEmpty(t, evs)
			last := evs[len(evs)-1]
			assert.Equal(t, sm.SMActionElection, last.Action)
			assert.Equal(t, "Discovering", last.Previous)
			if tt.ignored {
				assert.Equal(t, sm.SMActionIgnored, evs[0].Action)
			}
			if tt.master {
				assert.True(t, res.SubnetUp, res.Reason)
				assert.Equal(t, mad.SMStateMaster, s.State())
				assert.Equal(t, "Master", last.State)
				assert.Nil(t, last.Peer)
				return
			}
			assert.False(t, res.SubnetUp)
			assert.Equal(t, "Standby", res.SMState)
			assert.Contains(t, res.Reason, "standby: SM 0x")
			assert.Contains(t, res.Reason, "wins the election")
			assert.Equal(t, "Standby", last.State)
			require.NotNil(t, last.Peer)
			assert.Equal(t, fmt.Sprintf("%#016x", theirGUID), last.Peer.GUID)
			_, done := res.Phase(sm.PhaseRouting)
			assert.False(t, done, "a standby SM does not route")

			// Handed over, it answers, acknowledges once it runs, and
			// sweeps again to take the subnet. Directed-route: a standby
			// SM set up no forwarding tables.
			payload := mad.AppendSMInfo(nil, &mad.SMInfoFields{GUID: theirGUID, SMKey: 1, Priority: tt.other.Priority,
				SMState: mad.SMStateMaster})
			hand, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodSet, AttrID: mad.AttrSMInfo,
				AttrModifier: mad.SMInfoHandover, Path: []uint8{0, 1, 2, 4, 3, 3}, Data: payload}) // ca4 → sw1 → sw3 → sw6 → sw10 → ca15
			require.NoError(t, err)
			b.f.Send(ca4, agent.Request{Port: 1, MAD: hand})
			require.NoError(t, s.Serve(context.Background(), time.Second))
			assert.True(t, s.Pending())
			assert.Equal(t, mad.SMStateMaster, s.State())
			evs = events.list()
			last = evs[len(evs)-1]
			assert.Equal(t, sm.SMActionHandover, last.Action)
			assert.Equal(t, "Standby", last.Previous)
			assert.Equal(t, "Master", last.State)
		})
	}
}

// drRoute returns a directed route (initial path, [0] unused) from CA
// node from to node to through switches, shortest first.
func drRoute(t *testing.T, topo *topologies.Topology, from, to int) []uint8 {
	t.Helper()
	paths := map[int][]uint8{from: {0}}
	queue := []int{from}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == to {
			return paths[n]
		}
		if n != from && topo.Node(n).Type != topologies.Switch {
			continue
		}
		for p := 1; p <= topo.Node(n).NumPorts; p++ {
			peer, ok := topo.Peer(topologies.PortRef{Node: n, Port: p})
			if _, seen := paths[peer.Node]; !ok || seen {
				continue
			}
			paths[peer.Node] = append(append([]uint8(nil), paths[n]...), uint8(p))
			queue = append(queue, peer.Node)
		}
	}
	t.Fatalf("no route from %d to %d", from, to)
	return nil
}

// TestSMInfoSetStandby moves a standby SM through the Sets a master may
// send it (IBA 14.4.1, OpenSM's legality checks): STANDBY is no Set for a
// standby, DISABLE makes it NotActive, where only STANDBY is taken, an
// ACKNOWLEDGE is heard, DISCOVER has it sweep.
func TestSMInfoSetStandby(t *testing.T) {
	const key = 1
	topo := topologies.Thesis8()
	ca4, _ := topo.Lookup("ca4")
	ca7, _ := topo.Lookup("ca7")
	ca15, _ := topo.Lookup("ca15")
	theirs := mad.SMInfoFields{GUID: topo.Node(ca4).Ports[1].GUID, SMKey: key, Priority: 3, SMState: mad.SMStateMaster}
	b, port := besideSM(t, topo, theirs, false)
	var events recorder[sm.SMEvent]
	s, err := sm.New(port, sm.Config{ElectionConfig: sm.ElectionConfig{SMKey: key, OnSMEvent: events.add}})
	require.NoError(t, err)
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	require.Equal(t, "Standby", res.SMState)

	asStandby := theirs
	asStandby.SMState = mad.SMStateStandby
	path := drRoute(t, topo, ca7, ca15)
	for i, st := range []struct {
		mod    uint32
		from   mad.SMInfoFields
		ok     bool
		state  mad.SMState
		action sm.SMAction
	}{
		{mad.SMInfoStandby, theirs, false, mad.SMStateStandby, sm.SMActionRefused},
		{mad.SMInfoDisable, theirs, true, mad.SMStateNotActive, sm.SMActionDisable},
		{mad.SMInfoHandover, theirs, false, mad.SMStateNotActive, sm.SMActionRefused},
		{mad.SMInfoStandby, theirs, true, mad.SMStateStandby, sm.SMActionStandby},
		{mad.SMInfoAcknowledge, asStandby, true, mad.SMStateStandby, sm.SMActionAcknowledge},
		{mad.SMInfoDiscover, theirs, true, mad.SMStateDiscovering, sm.SMActionDiscover},
	} {
		before := len(events.list())
		req, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodSet, AttrID: mad.AttrSMInfo,
			AttrModifier: st.mod, Path: path, Data: mad.AppendSMInfo(nil, &st.from)})
		require.NoError(t, err)
		got, ok := askSMInfo(t, b, s, ca7, agent.Request{Port: 1, MAD: req})
		require.True(t, ok, "step %d: no answer", i)
		assert.Equal(t, st.ok, got.status == mad.StatusOK, "step %d: %v", i, got.status)
		assert.Equal(t, st.state, s.State(), "step %d", i)
		evs := events.list()[before:]
		require.Len(t, evs, 1, "step %d", i)
		assert.Equal(t, st.action, evs[0].Action, "step %d", i)
	}
	assert.True(t, s.Pending(), "DISCOVER asks for a sweep")
	assert.EqualValues(t, 2, s.Stats().Refused)
}

// TestHandoverAtSweep: a master's full sweep finds an SM of higher
// priority (a standby whose priority rose, played by the test) and hands
// the subnet over with SMInfo Set(HANDOVER), carrying its SM_Key, then
// goes Standby; a lower one it leaves alone.
func TestHandoverAtSweep(t *testing.T) {
	topo := topologies.Thesis8()
	ca4, _ := topo.Lookup("ca4")
	guid := topo.Node(ca4).Ports[1].GUID
	_, port := besideSM(t, topo, mad.SMInfoFields{GUID: guid, SMKey: 3, Priority: 2, SMState: mad.SMStateStandby}, false)
	var events recorder[sm.SMEvent]
	s, err := sm.New(port, sm.Config{ElectionConfig: sm.ElectionConfig{Priority: 5, SMKey: 3, OnSMEvent: events.add}})
	require.NoError(t, err)
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	require.True(t, res.SubnetUp)
	res, err = s.Sweep(context.Background())
	require.NoError(t, err)
	require.True(t, res.SubnetUp, "a lower standby changes nothing")
	assert.Empty(t, port.sets)

	port.info.Priority = 9
	res, err = s.Sweep(context.Background())
	require.NoError(t, err)
	assert.False(t, res.SubnetUp)
	assert.Equal(t, "Standby", res.SMState)
	assert.Contains(t, res.Reason, fmt.Sprintf("handed over to SM %#x", guid))
	assert.Equal(t, []uint32{mad.SMInfoHandover}, port.sets)
	assert.Equal(t, []uint64{3}, port.keys)
	assert.Equal(t, mad.SMStateStandby, s.State())
	evs := events.list()
	last := evs[len(evs)-1]
	assert.Equal(t, sm.SMActionHandoverSent, last.Action)
	assert.Equal(t, "Master", last.Previous)
	assert.Equal(t, "Standby", last.State)
	_, routed := res.Phase(sm.PhaseRouting)
	assert.False(t, routed, "the handing-over sweep configures nothing")
}

// TestWaitingMasterSendsTrap144: a master whose sweep finds another
// master of lower priority waits for its handover, and tells it so with
// a Trap 144 at every sweep: that master may not know this one (OpenSM,
// having taken over when its polls went unanswered under SMP loss, asks
// only the SMs it knows and kept the subnet until something else
// changed), and only the trap makes it sweep in full and hand over.
func TestWaitingMasterSendsTrap144(t *testing.T) {
	topo := topologies.Thesis8()
	ca4, _ := topo.Lookup("ca4")
	guid := topo.Node(ca4).Ports[1].GUID
	b, port := besideSM(t, topo, mad.SMInfoFields{GUID: guid, SMKey: 1, Priority: 2, SMState: mad.SMStateMaster}, true)
	s, err := sm.New(port, sm.Config{ElectionConfig: sm.ElectionConfig{Priority: 5, SMKey: 1}})
	require.NoError(t, err)
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	require.True(t, res.SubnetUp, "alone: %s", res.Reason)
	require.Empty(t, port.traps)
	ourLID := agentLIDs(b.f)["ca15"]

	port.silent = false // the other took the subnet over meanwhile
	for i := 1; i <= 2; i++ {
		res, err = s.Sweep(context.Background())
		require.NoError(t, err)
		assert.False(t, res.SubnetUp)
		assert.Contains(t, res.Reason, "waiting for its handover")
		assert.Equal(t, mad.SMStateMaster, s.State())
		assert.Len(t, port.traps, i, "a Trap 144 at every sweep")
	}
	for _, lid := range port.traps {
		assert.Equal(t, ourLID, lid, "the trap names this SM's port")
	}
	assert.EqualValues(t, 2, s.Stats().Traps144)
	assert.Empty(t, port.sets, "no handover to a lower master")
}

// TestBlocksLiftedBesideAnotherSM: an SM alone pre-blocks its cut nodes'
// forbidden turns; once another SM answers, a sweep that sends no tables
// lifts them, and so does a handover, because the SM that takes over may
// never write SLtoVL (OpenSM without QoS) while its routes take those
// turns.
func TestBlocksLiftedBesideAnotherSM(t *testing.T) {
	topo := topologies.Thesis8()
	ca4, _ := topo.Lookup("ca4")
	guid := topo.Node(ca4).Ports[1].GUID
	for _, tc := range []struct {
		name  string
		prio  uint8 // the other SM's, once it answers
		state mad.SMState
	}{
		{"lower standby", 2, mad.SMStateStandby},
		{"handover", 9, mad.SMStateStandby},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, port, _, vl := preBlocked(t, topo, mad.SMInfoFields{GUID: guid, SMKey: 1, Priority: tc.prio, SMState: tc.state})
			port.silent = false
			res, err := s.Sweep(context.Background())
			require.NoError(t, err)
			assert.Empty(t, s.Blocked())
			assert.Equal(t, 4, res.SL2VLSets, "one SLtoVL Set per block")
			assert.NotEqualValues(t, 15, vl(), "the turn carries SL 0 again")
			if tc.prio > 5 {
				assert.Equal(t, mad.SMStateStandby, s.State(), "handed over")
				return
			}
			res, err = s.Sweep(context.Background())
			require.NoError(t, err)
			assert.True(t, res.SubnetUp)
			assert.Empty(t, s.Blocked(), "beside another SM, nothing is pre-blocked again")
			assert.Zero(t, res.SL2VLSets)
		})
	}
}

// besideSM returns a bench at thesis8's ca15 and, at ca4, another SM
// played by the test with info (silent: it does not answer yet).
func besideSM(t *testing.T, topo *topologies.Topology, info mad.SMInfoFields, silent bool) (*bench, *otherSM) {
	t.Helper()
	ca4, _ := topo.Lookup("ca4")
	ca15, _ := topo.Lookup("ca15")
	b := newBench(t, topo, ca15, 1)
	require.NoError(t, b.f.Node(ca4).Agent.SetIsSM(1, true))
	op, err := memport.New(b.f, ca4, 1)
	require.NoError(t, err)
	return b, &otherSM{Port: b.port, other: op, info: info, silent: silent}
}

// preBlocked returns an SM at thesis8's ca15, beside another SM at ca4
// (info, silent until the caller says otherwise), whose first sweep,
// alone, pre-blocked its cut nodes' four forbidden turns: the first of
// them, and what VL it maps SL 0 to (15 while blocked).
func preBlocked(t *testing.T, topo *topologies.Topology, info mad.SMInfoFields) (*sm.SM, *otherSM, [3]uint64, func() uint8) {
	t.Helper()
	b, port := besideSM(t, topo, info, true)
	s, err := sm.New(port, sm.Config{
		RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectSweep, PreBlock: true},
		ElectionConfig:     sm.ElectionConfig{Priority: 5, SMKey: 1},
	})
	require.NoError(t, err)
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	require.True(t, res.SubnetUp, res.Reason)
	require.Len(t, s.Blocked(), 4, "alone, the SM pre-blocks")
	turn := s.Blocked()[0]
	sw, ok := topo.LookupGUID(turn[0])
	require.True(t, ok)
	vl := func() uint8 { return b.f.Node(sw).Agent.VLFor(uint8(turn[1]), uint8(turn[2]), 0) }
	require.EqualValues(t, 15, vl())
	return s, port, turn, vl
}

// TestBlockLiftedUnderLoss: a lifting SLtoVL Set whose every attempt is
// lost is sent again at once, within the same sweep, so that SMP loss
// costs the blocked turn a few timeouts; it used to be given up (a
// problem) and the turn dropped its traffic until the next sweep that
// lifted it (a soak: 4,100 packets over tens of seconds).
func TestBlockLiftedUnderLoss(t *testing.T) {
	topo := topologies.Thesis8()
	ca4, _ := topo.Lookup("ca4")
	s, port, turn, vl := preBlocked(t, topo,
		mad.SMInfoFields{GUID: topo.Node(ca4).Ports[1].GUID, SMKey: 1, Priority: 2, SMState: mad.SMStateStandby})

	// Every attempt of two transactions lost (each the first try and
	// its DefaultRetries resends), and one more.
	mod := mad.SLtoVLModifier{InPort: uint8(turn[1]), OutPort: uint8(turn[2])}.Modifier()
	var left *int
	port.lose, left = loseSets(mad.AttrSLtoVLMapping, mod, -1, 2*(sm.DefaultRetries+1)+1)
	port.silent = false // another SM: the blocks go
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	assert.Zero(t, *left, "every loss planned happened")
	assert.Empty(t, s.Blocked(), "lifted within the sweep")
	assert.NotEqualValues(t, 15, vl(), "the turn carries SL 0 again")
	assert.Equal(t, 2, res.SL2VLRetries, "two Sets more for the turn whose Sets were lost")
	assert.Equal(t, 6, res.SL2VLSets)
	assert.Empty(t, res.Problems)
}

// TestLFTBlockUnderLoss: an LFT block whose Set loses every attempt goes
// again at once, within the sweep: the switch holds every route when the
// subnet is up, and the sweep reports no problem. It used to be given
// up, and the LIDs of that block unroutable at the switch until a later
// sweep (a soak: one destination at four switches for seconds).
func TestLFTBlockUnderLoss(t *testing.T) {
	topo := topologies.Thesis8()
	ca4, _ := topo.Lookup("ca4")
	ca15, _ := topo.Lookup("ca15")
	b := newBench(t, topo, ca15, 1)
	op, err := memport.New(b.f, ca4, 1)
	require.NoError(t, err)
	port := &otherSM{Port: b.port, other: op, silent: true}
	var left *int
	// sw10, ca15's switch, one hop away: block 0 of its LFT, every attempt
	// of two transactions and one more.
	port.lose, left = loseSets(mad.AttrLinearFwdTbl, 0, 1, 2*(sm.DefaultRetries+1)+1)
	s, err := sm.New(port, sm.Config{})
	require.NoError(t, err)
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	assert.Zero(t, *left, "every loss planned happened")
	require.True(t, res.SubnetUp, "%s %v", res.Reason, res.Problems)
	assert.Empty(t, res.Problems)
	lfts := lftSnapshot(b.f, res.MaxLID)
	for lid := 1; lid <= int(res.MaxLID); lid++ {
		assert.NotEqual(t, mad.LFTNoPort, lfts["sw10"][lid], "sw10 routes LID %d", lid)
	}
}

// TestBlocksLiftedAfterAssimilation: beside another SM, the blocks a
// change's assimilation leaves at the new cut nodes are lifted by a
// sweep for changes that finds none, once a sweep interval has passed
// since the change (its packets gone), as a full sweep would lift them:
// an SM that assimilates never sweeps in full again, and an SM that took
// over after it died would route into them.
func TestBlocksLiftedAfterAssimilation(t *testing.T) {
	topo := topologies.Thesis8()
	ca4, _ := topo.Lookup("ca4")
	b, port := besideSM(t, topo, mad.SMInfoFields{GUID: topo.Node(ca4).Ports[1].GUID, SMKey: 1, Priority: 2, SMState: mad.SMStateStandby}, false)
	s, err := sm.New(port, sm.Config{
		RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectSweep, Distribution: sm.DistCutDeps},
		ElectionConfig:     sm.ElectionConfig{Priority: 5, SMKey: 1},
	})
	require.NoError(t, err)
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	require.True(t, res.SubnetUp, res.Reason)
	quiet(t, s)
	require.Empty(t, s.Blocked(), "beside another SM nothing is pre-blocked")

	require.NoError(t, b.port.SetLink("ca13", 1, false)) // the graph keeps its cut nodes
	res = assimilate(t, s, sm.TriggerSweep)
	require.Equal(t, 4, res.SL2VLSets)
	require.Len(t, s.Blocked(), 4, "the change blocks the cut nodes' forbidden turns")
	turn := s.Blocked()[0]
	sw, ok := topo.LookupGUID(turn[0])
	require.True(t, ok)
	vl := func() uint8 { return b.f.Node(sw).Agent.VLFor(uint8(turn[1]), uint8(turn[2]), 0) }
	require.EqualValues(t, 15, vl())

	_, err = s.Assimilate(context.Background(), sm.TriggerSweep)
	require.ErrorIs(t, err, sm.ErrNoChange)
	assert.Len(t, s.Blocked(), 4, "within a sweep interval of the change the blocks stay")

	require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
	_, err = s.Assimilate(context.Background(), sm.TriggerSweep)
	require.ErrorIs(t, err, sm.ErrNoChange)
	assert.Empty(t, s.Blocked(), "a quiet check a sweep interval on lifts them")
	assert.NotEqualValues(t, 15, vl(), "the turn carries SL 0 again")
}

// TestHandoverToMasterRereads: a master handed the subnet by another
// master (one that took over while its polls of this SM were lost) does
// not trust what it wrote before: the other may have rewritten any table
// meanwhile (here sw2's LFT block 0), and the next sweep reads the
// switches back and writes again what differs.
func TestHandoverToMasterRereads(t *testing.T) {
	const key = 0x77
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := b.newSM(t, sm.Config{ElectionConfig: sm.ElectionConfig{SMKey: key}})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp)
	want := lftSnapshot(b.f, res.MaxLID)
	ca7, _ := b.topo.Lookup("ca7")

	// The other master's tables: sw2 sends ca15's LID to ca7 (port 4),
	// which no route set verifies, so this SM must route and write it
	// again; the rest as it was, so that this SM and ca7 still talk.
	var blk [mad.LFTEntriesPerBlock]byte
	copy(blk[:], want["sw2"])
	blk[agentLIDs(b.f)["ca15"]] = 4
	set, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodSet, AttrID: mad.AttrLinearFwdTbl,
		Path: []uint8{0, 1}, Data: blk[:]}) // ca7 → sw2
	require.NoError(t, err)
	b.f.Send(ca7, agent.Request{Port: 1, MAD: set})
	b.f.Run()
	b.f.Received(ca7) // the answer
	require.NotEqual(t, want["sw2"], lftSnapshot(b.f, res.MaxLID)["sw2"], "the other master's LFT is in")

	other := mad.SMInfoFields{GUID: 0x1234, SMKey: key, Priority: 9, SMState: mad.SMStateMaster}
	got, ok := askSMInfo(t, b, s, ca7, lidSMInfo(mad.MethodSet, mad.SMInfoHandover, res.SMLID, 0, other))
	require.True(t, ok)
	require.Equal(t, mad.StatusOK, got.status)
	res = b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, want["sw2"], lftSnapshot(b.f, res.MaxLID)["sw2"], "sw2's LFT written again")
}

// TestTablesRewrittenUnderMaster: a master whose routes stop working for
// most switches at once, while directed probes reach them (another SM
// rewrote the tables while this one was cut off: here sw1 sends the
// SM's own LID nowhere), does not assimilate the same silence at every
// sweep: it reads the tables back in a full sweep and writes them again.
func TestTablesRewrittenUnderMaster(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1) // the SM at ca4, on sw1's port 3
	s := upAndQuiet(t, b, sm.Config{})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp)
	want := lftSnapshot(b.f, res.MaxLID)
	lid := agentLIDs(b.f)["ca4"]
	var blk [mad.LFTEntriesPerBlock]byte
	copy(blk[:], want["sw1"][int(lid)/mad.LFTEntriesPerBlock*mad.LFTEntriesPerBlock:])
	blk[int(lid)%mad.LFTEntriesPerBlock] = 4 // sw1's port 4 has no cable
	set, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodSet, AttrID: mad.AttrLinearFwdTbl,
		AttrModifier: uint32(lid) / mad.LFTEntriesPerBlock, Path: []uint8{0, 1, 1}, Data: blk[:]}) // ca7 → sw2 → sw1
	require.NoError(t, err)
	ca7, _ := b.topo.Lookup("ca7")
	b.f.Send(ca7, agent.Request{Port: 1, MAD: set})
	b.f.Run()
	b.f.Received(ca7)
	require.NotEqual(t, want["sw1"], lftSnapshot(b.f, res.MaxLID)["sw1"])

	a, err := s.Assimilate(context.Background(), sm.TriggerSweep)
	require.NoError(t, err)
	require.NotNil(t, a)
	assert.True(t, s.Pending(), "a full sweep is asked for: %v", a.Warnings)
	res = b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, want["sw1"], lftSnapshot(b.f, res.MaxLID)["sw1"], "sw1's LFT written again")
}
