package mad_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestSMInfoRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		f    mad.SMInfoFields
	}{
		{"zero", mad.SMInfoFields{}},
		{"master", mad.SMInfoFields{GUID: 0x0002c90300000001, SMKey: 0x1, ActCount: 1234, Priority: 15,
			SMState: mad.SMStateMaster}},
		{"standby", mad.SMInfoFields{GUID: 2, Priority: 0, SMState: mad.SMStateStandby}},
		{"all ones", mad.SMInfoFields{GUID: ^uint64(0), SMKey: ^uint64(0), ActCount: 0xffffffff, Priority: 15,
			SMState: 15}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mad.AppendSMInfo(nil, &tt.f)
			require.Len(t, b, mad.SMInfoSize)
			got, err := mad.DecodeSMInfo(b)
			require.NoError(t, err)
			if got != tt.f {
				t.Errorf("DecodeSMInfo(%x) = %+v, want %+v", b, got, tt.f)
			}
		})
	}
}

// TestSMInfoLayout checks IBA 14.2.5.13: GUID, SM_Key, ActCount, then
// Priority and SMState sharing byte 20.
func TestSMInfoLayout(t *testing.T) {
	tests := []struct {
		name string
		set  func(mad.SMInfo)
		off  int
		want []byte
	}{
		{"GUID", func(s mad.SMInfo) { s.SetGUID(0x0102030405060708) }, 0, smpPattern(1, 8)},
		{"SMKey", func(s mad.SMInfo) { s.SetSMKey(0x1112131415161718) }, 8, smpPattern(0x11, 8)},
		{"ActCount", func(s mad.SMInfo) { s.SetActCount(0x21222324) }, 16, smpPattern(0x21, 4)},
		{"Priority", func(s mad.SMInfo) { s.SetPriority(0xfa) }, 20, []byte{0xa0}},
		{"SMState", func(s mad.SMInfo) { s.SetSMState(0xf3) }, 20, []byte{0x03}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make(mad.SMInfo, mad.SMPDataSize)
			tt.set(b)
			want := make([]byte, mad.SMPDataSize)
			copy(want[tt.off:], tt.want)
			if !bytes.Equal(b, want) {
				t.Errorf("after Set%s: %x, want %x at %d and zeros elsewhere", tt.name, []byte(b), tt.want, tt.off)
			}
		})
	}
	b := mad.SMInfo(make([]byte, mad.SMInfoSize))
	b.SetPriority(9)
	b.SetSMState(mad.SMStateDiscovering)
	b.SetPriority(7)
	assert.Equal(t, mad.SMStateDiscovering, b.SMState(), "SetPriority keeps the state")
	_, err := mad.DecodeSMInfo(make([]byte, mad.SMInfoSize-1))
	assert.ErrorIs(t, err, mad.ErrTruncated)
}
