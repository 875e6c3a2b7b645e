package mad_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestNodeDescriptionRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"switch", "ibfab sw1", "ibfab sw1"},
		{"exactly 64", strings.Repeat("x", 64), strings.Repeat("x", 64)},
		{"too long is cut", strings.Repeat("y", 70), strings.Repeat("y", 64)},
		{"cut keeps UTF-8 whole", strings.Repeat("a", 63) + "é", strings.Repeat("a", 63)},
		{"NUL ends the text", "host\x00junk", "host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mad.AppendNodeDescription(nil, &mad.NodeDescriptionFields{Text: tt.in})
			require.Len(t, b, mad.NodeDescriptionSize)
			got, err := mad.DecodeNodeDescription(b)
			require.NoError(t, err)
			if got.Text != tt.want {
				t.Errorf("DecodeNodeDescription(%x) = %q, want %q", b, got.Text, tt.want)
			}
			assert.True(t, utf8.Valid(b[:len(got.Text)]))
		})
	}
}

// TestNodeDescriptionPadding: the text is NUL-padded over whatever was in
// the buffer, as IBA 14.2.5.2 wants.
func TestNodeDescriptionPadding(t *testing.T) {
	b := mad.NodeDescription([]byte(strings.Repeat("z", 64)))
	b.SetText("ab")
	want := append([]byte("ab"), make([]byte, 62)...)
	assert.Equal(t, want, []byte(b))
	assert.Equal(t, "ab", b.Text())
	b.SetText(strings.Repeat("q", 64))
	assert.Equal(t, strings.Repeat("q", 64), b.Text(), "a full field has no NUL")
}

func TestDecodeNodeDescriptionShort(t *testing.T) {
	_, err := mad.DecodeNodeDescription(make([]byte, 63))
	assert.ErrorIs(t, err, mad.ErrTruncated)
}
