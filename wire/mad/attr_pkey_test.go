package mad_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestPKeyTableRoundTrip(t *testing.T) {
	var full mad.PKeyTableFields
	for i := range full.PKeys {
		full.PKeys[i] = mad.PKey(0x8001 + i*0x0401)
	}
	tests := []struct {
		name string
		f    mad.PKeyTableFields
	}{
		{"zero", mad.PKeyTableFields{}},
		{"default only", mad.PKeyTableFields{PKeys: [32]mad.PKey{mad.DefaultPKey}}},
		{"limited and full", mad.PKeyTableFields{PKeys: [32]mad.PKey{0x7fff, 0x8001, 31: 0x0002}}},
		{"every entry", full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mad.AppendPKeyTable(nil, &tt.f)
			require.Len(t, b, mad.PKeyTableSize)
			got, err := mad.DecodePKeyTable(b)
			require.NoError(t, err)
			if got != tt.f {
				t.Errorf("DecodePKeyTable(%x) = %+v, want %+v", b, got, tt.f)
			}
		})
	}
}

// TestPKeyTableLayout: IBA 14.2.5.7 packs 32 big-endian 16-bit entries,
// membership bit on top.
func TestPKeyTableLayout(t *testing.T) {
	b := make(mad.PKeyTable, mad.PKeyTableSize)
	b.SetPKey(0, 0xffff)
	b.SetPKey(1, 0x1234)
	b.SetPKey(31, 0x8002)
	want := make([]byte, 64)
	copy(want, []byte{0xff, 0xff, 0x12, 0x34})
	copy(want[62:], []byte{0x80, 0x02})
	assert.Equal(t, want, []byte(b))
	_, err := mad.DecodePKeyTable(make([]byte, 10))
	assert.ErrorIs(t, err, mad.ErrTruncated)
}

func TestPKey(t *testing.T) {
	tests := []struct {
		name     string
		k        mad.PKey
		wantBase mad.PKey
		wantFull bool
	}{
		{"default", mad.DefaultPKey, 0x7fff, true},
		{"limited default", 0x7fff, 0x7fff, false},
		{"full 1", 0x8001, 1, true},
		{"invalid", mad.InvalidPKey, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantBase, tt.k.Base())
			assert.Equal(t, tt.wantFull, tt.k.IsFull())
		})
	}
	assert.Equal(t, uint32(0x00050002), mad.PKeyTableModifier(5, 2))
}
