package mad_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestGUIDInfoRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		f    mad.GUIDInfoFields
	}{
		{"zero", mad.GUIDInfoFields{}},
		{"port GUID only", mad.GUIDInfoFields{GUIDs: [8]uint64{0x0002c90300001001}}},
		{"all set", mad.GUIDInfoFields{GUIDs: [8]uint64{1, 2, 3, 4, 5, 6, 7, ^uint64(0)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mad.AppendGUIDInfo(nil, &tt.f)
			require.Len(t, b, mad.GUIDInfoSize)
			got, err := mad.DecodeGUIDInfo(b)
			require.NoError(t, err)
			if got != tt.f {
				t.Errorf("DecodeGUIDInfo(%x) = %+v, want %+v", b, got, tt.f)
			}
		})
	}
}

// TestGUIDInfoLayout: IBA 14.2.5.5 packs 8 big-endian GUIDs back to back.
func TestGUIDInfoLayout(t *testing.T) {
	b := make(mad.GUIDInfo, mad.GUIDInfoSize)
	b.SetGUID(0, 0x0102030405060708)
	b.SetGUID(7, 0xa1a2a3a4a5a6a7a8)
	want := make([]byte, 64)
	copy(want, smpPattern(1, 8))
	copy(want[56:], smpPattern(0xa1, 8))
	assert.Equal(t, want, []byte(b))
	_, err := mad.DecodeGUIDInfo(make([]byte, 63))
	assert.ErrorIs(t, err, mad.ErrTruncated)
}
