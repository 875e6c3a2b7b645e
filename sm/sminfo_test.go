package sm_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// askSMInfo sends r from CA node from's port 1, lets the SM serve, and
// returns the SMInfo that came back.
func askSMInfo(t *testing.T, b *bench, s *sm.SM, from int, r agent.Request) (mad.SMInfoFields, bool) {
	t.Helper()
	b.f.Send(from, r)
	require.NoError(t, s.Serve(context.Background(), time.Millisecond))
	for _, d := range b.f.Received(from) {
		m := mad.MAD(d.MAD)
		if m.AttrID() != mad.AttrSMInfo || m.Method() != mad.MethodGetResp {
			continue
		}
		if m.MgmtClass() == mad.ClassSubnDirected {
			return mad.SMInfo(mad.DRSMP(d.MAD).Data()).Fields(), true
		}
		return mad.SMInfo(mad.SMP(d.MAD).Data()).Fields(), true
	}
	return mad.SMInfoFields{}, false
}

// TestServeSMInfo asks the master SM for its SMInfo, directed-route and
// LID-routed, with and without its SM_Key.
func TestServeSMInfo(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := b.newSM(t, sm.Config{Priority: 7, SMKey: 0x5ec7})
	require.True(t, b.sweep(t, s).SubnetUp)
	ca7, _ := b.topo.Lookup("ca7")

	dr, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 77, AttrID: mad.AttrSMInfo,
		Path: []uint8{0, 1, 1, 3}}) // ca7 → sw2 → sw1 → ca4
	require.NoError(t, err)
	got, ok := askSMInfo(t, b, s, ca7, agent.Request{Port: 1, MAD: dr})
	require.True(t, ok, "no directed-route answer")
	assert.Equal(t, b.topo.Node(0).Ports[1].GUID, got.GUID)
	assert.Equal(t, mad.SMStateMaster, got.SMState)
	assert.EqualValues(t, 7, got.Priority)
	assert.Zero(t, got.SMKey, "SM_Key only for who knows it")
	assert.Positive(t, got.ActCount)

	lidReq := func(key uint64) agent.Request {
		f := mad.SMPFields{Method: mad.MethodGet, TransactionID: 78, AttrID: mad.AttrSMInfo}
		mad.SMInfo(f.Data[:]).Encode(&mad.SMInfoFields{SMKey: key})
		return agent.Request{Port: 1, DLID: 1, MAD: mad.AppendSMP(nil, &f)}
	}
	got, ok = askSMInfo(t, b, s, ca7, lidReq(0))
	require.True(t, ok, "no LID-routed answer")
	assert.Equal(t, mad.SMStateMaster, got.SMState)
	assert.Zero(t, got.SMKey)
	got, ok = askSMInfo(t, b, s, ca7, lidReq(0x5ec7))
	require.True(t, ok)
	assert.EqualValues(t, 0x5ec7, got.SMKey)
	assert.EqualValues(t, 3, s.Stats().SMInfo)
}

// otherSM is the port of an SM under test that also plays a second SM on
// another CA: after each of its sends it answers, with info, the SMInfo
// requests that reached the other CA.
type otherSM struct {
	*memport.Port
	other  *memport.Port
	info   mad.SMInfoFields
	silent bool
	asked  int
}

func (o *otherSM) Send(m madport.MAD) error {
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
		if mad.MAD(r.Data).AttrID() != mad.AttrSMInfo || o.silent {
			continue
		}
		o.asked++
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

// TestElection runs the SM on CA 15 while CA 4 holds another SM.
func TestElection(t *testing.T) {
	tests := []struct {
		name   string
		prio   uint8
		other  mad.SMInfoFields
		silent bool
		master bool
	}{
		{"other is master", 15, mad.SMInfoFields{GUID: 0x99, Priority: 0, SMState: mad.SMStateMaster}, false, false},
		{"other has higher priority", 3, mad.SMInfoFields{GUID: 0x99, Priority: 9, SMState: mad.SMStateStandby}, false, false},
		{"other has lower priority", 3, mad.SMInfoFields{GUID: 0x1, Priority: 2, SMState: mad.SMStateDiscovering}, false, true},
		{"same priority, lower GUID wins", 3, mad.SMInfoFields{GUID: 0x1, Priority: 3, SMState: mad.SMStateStandby}, false, false},
		{"same priority, higher GUID loses", 3, mad.SMInfoFields{GUID: 1 << 62, Priority: 3, SMState: mad.SMStateStandby}, false, true},
		{"other does not answer", 0, mad.SMInfoFields{}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo := topologies.Thesis8()
			ca15, _ := topo.Lookup("ca15")
			b := newBench(t, topo, ca15, 1)
			require.NoError(t, b.f.Node(0).Agent.SetIsSM(1, true))
			other, err := memport.New(b.f, 0, 1)
			require.NoError(t, err)
			port := &otherSM{Port: b.port, other: other, info: tt.other, silent: tt.silent}
			s, err := sm.New(port, sm.Config{Priority: tt.prio})
			require.NoError(t, err)
			res, err := s.Sweep(context.Background())
			require.NoError(t, err)
			if !tt.silent {
				assert.Equal(t, 1, port.asked)
			}
			if tt.master {
				assert.True(t, res.SubnetUp, res.Reason)
				assert.Equal(t, mad.SMStateMaster, s.State())
				return
			}
			assert.False(t, res.SubnetUp)
			assert.Equal(t, "Standby", res.SMState)
			assert.Contains(t, res.Reason, "standby: SM 0x")
			assert.Contains(t, res.Reason, "wins the election")
			_, done := res.Phase(sm.PhaseRouting)
			assert.False(t, done, "a standby SM does not route")

			// Handed over, it sweeps again and takes the subnet.
			// Directed-route: a standby SM set up no forwarding tables.
			hand, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodSet, AttrID: mad.AttrSMInfo,
				AttrModifier: mad.SMInfoHandover, Path: []uint8{0, 1, 2, 4, 3, 3}}) // ca4 → sw1 → sw3 → sw6 → sw10 → ca15
			require.NoError(t, err)
			b.f.Send(0, agent.Request{Port: 1, MAD: hand})
			require.NoError(t, s.Serve(context.Background(), time.Second))
			assert.True(t, s.Pending())
			assert.Equal(t, mad.SMStateMaster, s.State())
		})
	}
}
