package memport_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// set sends a directed-route Set (data nil: a Get) from the port and
// returns the answer's data.
func set(t *testing.T, p madport.Port, path []uint8, attr mad.AttrID, mod uint32, data []byte) []byte {
	t.Helper()
	method := mad.MethodSet
	if data == nil {
		method = mad.MethodGet
	}
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: method, AttrID: attr, AttrModifier: mod,
		Path: append([]uint8{0}, path...), Data: data})
	require.NoError(t, err)
	require.NoError(t, p.Send(madport.MAD{LID: mad.PermissiveLID, Data: b}))
	m, err := p.Recv(context.Background())
	require.NoError(t, err)
	require.Equal(t, mad.StatusOK, mad.DRSMP(m.Data).Status())
	return mad.DRSMP(m.Data).Data()
}

// TestChangesTrap: once switch 1 knows the SM (LID 1 on CA 4, which its
// table reaches by port 3), taking a neighbour away makes it send Trap 128,
// which the port receives at once.
func TestChangesTrap(t *testing.T) {
	f, p := newPort(t, 0, 1)
	for _, x := range []struct {
		path []uint8
		port uint32
		lid  uint16
	}{{nil, 1, 1}, {[]uint8{1}, 0, 2}} {
		pi := mad.PortInfo(set(t, p, x.path, mad.AttrPortInfo, x.port, nil)).Fields()
		pi.LID, pi.MasterSMLID = x.lid, 1
		pi.PortState, pi.PortPhysicalState, pi.LinkDownDefaultState = mad.PortStateNoChange, mad.PhysStateNoChange, mad.PhysStateNoChange
		pi.LinkWidthEnabled, pi.LinkSpeedEnabled = mad.LinkWidthNoChange, mad.LinkSpeedNoChange
		set(t, p, x.path, mad.AttrPortInfo, x.port, mad.AppendPortInfo(nil, &pi))
	}
	si := mad.SwitchInfo(set(t, p, []uint8{1}, mad.AttrSwitchInfo, 0, nil)).Fields()
	si.LinearFDBTop, si.PortStateChange = 2, true
	set(t, p, []uint8{1}, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &si))
	block := make([]byte, mad.LFTEntriesPerBlock)
	for i := range block {
		block[i] = mad.LFTNoPort
	}
	block[1], block[2] = 3, 0
	set(t, p, []uint8{1}, mad.AttrLinearFwdTbl, 0, block)
	// The trap of sw1's links coming up, now that it knows the SM.
	m, err := p.Recv(context.Background())
	require.NoError(t, err)
	require.Equal(t, mad.MethodTrap, mad.MAD(m.Data).Method())

	sw2, err := p.Lookup("sw2")
	require.NoError(t, err)
	require.NoError(t, p.PowerOff("sw2"))
	assert.False(t, f.IsOn(sw2))
	sw1, _ := f.Topology().Lookup("sw1")
	assert.True(t, f.Node(sw1).Agent.PortStateChange())
	assert.EqualValues(t, mad.PortStateDown, f.Node(sw1).Ports.Link(1).State)

	require.NoError(t, p.PowerOn("sw2"))
	assert.EqualValues(t, mad.PortStateInit, f.Node(sw1).Ports.Link(1).State)
	require.NoError(t, p.SetLink("sw1", 2, false))
	assert.EqualValues(t, mad.PortStateDown, f.Node(sw1).Ports.Link(2).State)
	idx, err := p.AddPiece(topologies.Thesis8AddPiece())
	require.NoError(t, err)
	assert.Len(t, idx, 3)

	assert.Error(t, p.PowerOff("nosuch"))
	_, err = p.Lookup("nosuch")
	assert.Error(t, err)
	require.NoError(t, p.Close())
	assert.ErrorIs(t, p.PowerOn("sw2"), madport.ErrClosed)
}
