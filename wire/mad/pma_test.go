package mad_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestPMARoundTrip(t *testing.T) {
	var full mad.PMAFields
	full.Method, full.Status, full.TransactionID = mad.MethodGetResp, 0xffff, 0xffffffffffffffff
	full.AttrID, full.AttrModifier = mad.AttrPortCountersExtended, 0xffffffff
	copy(full.Data[:], smpPattern(1, mad.PMADataSize))
	tests := []struct {
		name string
		f    mad.PMAFields
	}{
		{"zero", mad.PMAFields{}},
		{"Get PortCounters", mad.PMAFields{Method: mad.MethodGet, TransactionID: 3, AttrID: mad.AttrPortCounters}},
		{"all fields", full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mad.AppendPMA(nil, &tt.f)
			require.Len(t, b, mad.MADSize)
			got, err := mad.DecodePMA(b)
			require.NoError(t, err)
			if got != tt.f {
				t.Errorf("DecodePMA(AppendPMA(%+v)) = %+v, want the input", tt.f, got)
			}
			h := mad.MAD(b)
			assert.Equal(t, uint8(1), h.BaseVersion())
			assert.Equal(t, mad.ClassPerfMgt, h.MgmtClass())
			assert.Equal(t, uint8(1), h.ClassVersion())
		})
	}
}

// TestPMALayout: IBA 16.1.1 puts 40 reserved bytes between the header and
// the 192-byte data.
func TestPMALayout(t *testing.T) {
	b := make(mad.PMA, mad.MADSize)
	for i := range b[24:64] {
		b[24+i] = 0xee
	}
	mad.PMA(b).Encode(&mad.PMAFields{Data: [192]byte{0: 0x11, 191: 0x22}})
	assert.Equal(t, make([]byte, 40), []byte(b[24:64]), "Encode zeroes the reserved bytes")
	assert.Equal(t, byte(0x11), b[64])
	assert.Equal(t, byte(0x22), b[255])
	assert.True(t, bytes.Equal(b.Data(), b[64:256]))
}

func TestPMAValidate(t *testing.T) {
	b := mad.AppendPMA(nil, &mad.PMAFields{})
	assert.NoError(t, mad.PMA(b).Validate())
	assert.ErrorIs(t, mad.PMA(b[:64]).Validate(), mad.ErrTruncated)
	assert.Error(t, mad.PMA(mad.AppendSMP(nil, &mad.SMPFields{})).Validate())
	_, err := mad.DecodePMA(nil)
	assert.ErrorIs(t, err, mad.ErrTruncated)
}
