package cache_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/cache"
)

func TestReadLIDMap(t *testing.T) {
	good := "# a comment\n\n0x0002fab000000400 0x0001 0x0001\n0x10 8 11\n  0x11 0x2 0x2  \n"
	m, err := cache.ReadLIDMap(strings.NewReader(good))
	require.NoError(t, err)
	assert.Equal(t, 3, m.Len())
	base, n, ok := m.Lookup(0x10)
	assert.True(t, ok)
	assert.EqualValues(t, 8, base)
	assert.Equal(t, 4, n)

	assert.Equal(t, m, reread(t, m, cache.ReadLIDMap), "round trip")

	tests := []struct{ name, in, want string }{
		{"two fields", "0x10 1\n", "line 1: want GUID"},
		{"bad GUID", "# x\nzz 1 1\n", "line 2: bad GUID"},
		{"zero GUID", "0 1 1\n", "bad GUID"},
		{"LID 0", "0x10 0 0\n", "bad LID range"},
		{"reversed", "0x10 5 4\n", "bad LID range"},
		{"multicast", "0x10 0xc000 0xc000\n", "bad LID range"},
		{"not a power of two", "0x10 4 6\n", "not an aligned block"},
		{"misaligned", "0x10 2 5\n", "not an aligned block"},
		{"GUID twice", "0x10 1 1\n0x10 2 2\n", "line 2: GUID 0x10 listed twice"},
		{"LID twice", "0x10 4 7\n0x11 6 6\n", "line 2: LID 6 already belongs to GUID 0x10"},
		{"long line", strings.Repeat("x", 70000), "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cache.ReadLIDMap(strings.NewReader(tt.in))
			require.ErrorIs(t, err, cache.ErrLIDFile)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func FuzzReadLIDMap(f *testing.F) {
	f.Add("0x0002fab000000400 0x0001 0x0001\n")
	f.Add("# c\n0x10 8 11\n0x11 2 2\n")
	f.Add("0x10 4 7\n0x11 6 6\n")
	f.Add("0x10 0xbfff 0xbfff\n")
	f.Fuzz(func(t *testing.T, in string) {
		m, err := cache.ReadLIDMap(strings.NewReader(in))
		if err != nil {
			return
		}
		if again := reread(t, m, cache.ReadLIDMap); again.Len() != m.Len() {
			t.Fatalf("%d GUIDs, %d after a round trip", m.Len(), again.Len())
		}
	})
}

func TestLoadLIDMap(t *testing.T) {
	dir := t.TempDir()
	m, err := cache.LoadLIDMap(filepath.Join(dir, "missing"))
	require.NoError(t, err)
	assert.Zero(t, m.Len())
	bad := filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(bad, []byte("0x1 2\n"), 0o600))
	_, err = cache.LoadLIDMap(bad)
	assert.ErrorIs(t, err, cache.ErrLIDFile)
	assert.Contains(t, err.Error(), bad)
}

// reread writes c in its file format and reads it back with read, as the
// round trips check: what a cache writes, it reads.
func reread[T io.WriterTo](t *testing.T, c T, read func(io.Reader) (T, error)) T {
	t.Helper()
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	back, err := read(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("reading back what was written: %v\n%s", err, b.String())
	}
	return back
}
