package simclient

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"ibfab/wire/mad"
)

// TestOneSegmentLength: a one-segment RMPP answer is sent with the length
// its PayloadLength gives; anything else as a whole MAD (0).
func TestOneSegmentLength(t *testing.T) {
	build := func(class mad.MgmtClass, flags mad.RMPPFlags, typ mad.RMPPType, paylen uint32) []byte {
		b := make([]byte, mad.MADSize)
		mad.MAD(b).SetMgmtClass(class)
		r := mad.RMPP(b)
		r.SetVersion(mad.RMPPVersion1)
		r.SetType(typ)
		r.SetFlags(flags)
		r.SetPayloadLength(paylen)
		return b
	}
	all := mad.RMPPFlagActive | mad.RMPPFlagFirst | mad.RMPPFlagLast
	tests := []struct {
		name string
		b    []byte
		want uint64
	}{
		{"one segment", build(mad.ClassSubnAdm, all, mad.RMPPTypeData, 20+24), 36 + 44},
		{"first of several", build(mad.ClassSubnAdm, mad.RMPPFlagActive|mad.RMPPFlagFirst, mad.RMPPTypeData, 500), 0},
		{"an ACK", build(mad.ClassSubnAdm, all, mad.RMPPTypeAck, 20), 0},
		{"too long", build(mad.ClassSubnAdm, all, mad.RMPPTypeData, 221), 0},
		{"not an RMPP class", build(mad.ClassPerfMgt, all, mad.RMPPTypeData, 20), 0},
		{"short", make([]byte, 10), 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, oneSegmentLength(tt.b), tt.name)
	}
}
