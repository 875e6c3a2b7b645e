package wire_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire"
)

// TestBTHAdapted: the adapted bit is resv8a's 0x20 alone, set and cleared
// without touching FECN and BECN, outside Fields, and masked by the ICRC:
// a switch that sets it reseals only the VCRC.
func TestBTHAdapted(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fecn, becn bool
	}{
		{"alone", false, false},
		{"with FECN and BECN", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := make(wire.BTH, wire.BTHSize)
			f := wire.BTHFields{OpCode: wire.UDSendOnly, PKey: 0xffff, DestQP: 0x123456, FECN: tc.fecn, BECN: tc.becn, PSN: 7}
			b.Encode(&f)
			assert.False(t, b.Adapted())
			b.SetAdapted(true)
			assert.True(t, b.Adapted())
			assert.Equal(t, byte(0x20), b[4]&^0xc0, "resv8a without FECN and BECN")
			assert.Equal(t, f, b.Fields(), "the other fields stand")
			assert.Equal(t, uint32(0x123456), b.DestQP())
			b.SetAdapted(false)
			assert.False(t, b.Adapted())
			assert.Equal(t, f, b.Fields())
		})
	}

	pkt := wire.AppendUD(nil, &wire.UDFields{DLID: 2, SLID: 1, PKey: 0xffff, DestQP: 2, QKey: 1, SrcQP: 2, Payload: make([]byte, 64)})
	orig := bytes.Clone(pkt)
	bth, ok := wire.PacketBTH(pkt)
	require.True(t, ok)
	bth.SetAdapted(true)
	require.NoError(t, wire.SealVCRC(pkt))
	require.NoError(t, wire.Verify(pkt), "the ICRC masks the bit")
	n := len(pkt) - wire.VCRCSize
	assert.Equal(t, orig[n-wire.ICRCSize:n], pkt[n-wire.ICRCSize:n], "ICRC unchanged")
}
