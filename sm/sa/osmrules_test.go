package sa_test

// OpenSM's readings of the spec that osmtest checks (TestOsmtest runs
// osmtest itself): the ServiceGID as osmtest writes it, and leaves that
// keep what is left.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

// TestServiceSwappedPrefix: a ServiceRecord Set whose ServiceGID carries
// the subnet prefix byte-swapped, as osmtest sends it, registers the
// service of the port its interface ID names; an interface ID no port
// has is ReqInvalidGID; no lease is an indefinite one.
func TestServiceSwappedPrefix(t *testing.T) {
	e := newEnv(t)
	l := mad.SAServiceRecordLayout
	g := e.gid(1)
	var swapped mad.GID
	for i := range 8 {
		swapped[i] = g[7-i]
	}
	copy(swapped[8:], g[8:])
	set := mad.ServiceRecordFields{ID: 0x2000, GID: swapped, Name: "osmt"}
	mask := l.Bit("ServiceID") | l.Bit("ServiceGID") | l.Bit("ServiceName")
	r := e.ask(t, 1, mad.MethodSet, mad.AttrSAServiceRecord, mask, mad.AppendServiceRecord(nil, &set))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	f, err := mad.DecodeServiceRecord(r.Payload)
	require.NoError(t, err)
	assert.Equal(t, uint32(mad.ServiceLeaseIndefinite), f.Lease, "no lease given: indefinite")
	assert.Equal(t, uint16(0xffff), f.PKey)
	set.GID = mad.MakeGID(mad.DefaultGIDPrefix, 0xdead)
	r = e.ask(t, 1, mad.MethodSet, mad.AttrSAServiceRecord, mask, mad.AppendServiceRecord(nil, &set))
	assert.Equal(t, mad.StatusSAReqInvalidGID, r.Header.MAD.Status)
}

// TestPartialLeave: a leave must name join states the member has (all
// of them); what is left stays, and the answer carries it (osmtest's
// o15-0.1.14 checks, OpenSM's rule).
func TestPartialLeave(t *testing.T) {
	e := newEnv(t)
	q, mask := join(e, 0, broadcast, mad.JoinFullMember|mad.JoinNonMember)
	r := e.ask(t, 0, mad.MethodSet, mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	q.JoinState = mad.JoinNonMember | mad.JoinSendOnly
	r = e.ask(t, 0, mad.MethodDelete, mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))
	assert.Equal(t, mad.StatusSAReqInvalid, r.Header.MAD.Status, "a state the member lacks")
	q.JoinState = mad.JoinNonMember
	r = e.ask(t, 0, mad.MethodDelete, mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	got, _ := mad.DecodeMCMemberRecord(r.Payload)
	assert.Equal(t, uint8(mad.JoinFullMember), got.JoinState, "full membership left")
	q.JoinState = mad.JoinFullMember
	r = e.ask(t, 0, mad.MethodDelete, mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	got, _ = mad.DecodeMCMemberRecord(r.Payload)
	assert.Zero(t, got.JoinState, "gone")
}
