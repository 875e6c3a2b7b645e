package hca_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// TestGMPThroughClients: an SA query from a's client to b (as saquery asks
// an SA that is not on its own node) reaches b's client, and b's answer,
// a GMP response of a class the HCA does not implement, reaches a's client
// by the wire: before agent.Config.LocalGMP, a's agent dropped it as
// unexpected because a is not the SM's node.
func TestGMPThroughClients(t *testing.T) {
	p := newPair(t)
	p.settle()
	activate(t, p, []uint8{0, 1}, 2)
	activate(t, p, nil, 1)

	const tid = 0x0001_0000_0000_5a5a
	query := mad.AppendMAD(nil, &mad.MADFields{BaseVersion: mad.BaseVersion, MgmtClass: mad.ClassSubnAdm,
		ClassVersion: 2, Method: mad.MethodGetTable, TransactionID: tid, AttrID: 0x11}, nil)
	require.NoError(t, p.a.SendMAD(agent.Request{Port: 1, DLID: 2, DestQP: wire.QP1, MAD: query}))
	p.settle()
	got := p.ib.take()
	require.Len(t, got, 1, "the query at b's client")
	q := got[0]
	assert.Equal(t, uint16(1), q.SLID)
	assert.Equal(t, uint32(wire.QP1), q.SrcQP)
	assert.Equal(t, mad.MethodGetTable, mad.MAD(q.MAD).Method())

	resp := append([]byte(nil), q.MAD...)
	mad.MAD(resp).SetMethod(mad.MethodGetTable | mad.MethodResponse)
	require.NoError(t, p.b.SendMAD(agent.Request{Port: 1, DLID: q.SLID, DestQP: q.SrcQP, MAD: resp}))
	p.settle()
	got = p.ia.take()
	require.Len(t, got, 1, "the answer at a's client")
	r := mad.MAD(got[0].MAD)
	assert.True(t, r.Method().IsResponse())
	assert.Equal(t, mad.ClassSubnAdm, r.MgmtClass())
	assert.Equal(t, uint64(tid), r.TransactionID())
	assert.Equal(t, uint16(2), got[0].SLID)
	assert.Zero(t, p.a.Agent().Stats().Unexpected)
}
