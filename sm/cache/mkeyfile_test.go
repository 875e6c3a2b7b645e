package cache_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/cache"
)

// TestPerPortMKey: the derivation is fixed, differs by port and by base,
// and gives no key without a base.
func TestPerPortMKey(t *testing.T) {
	a, b := cache.PerPortMKey(1, 0x10), cache.PerPortMKey(1, 0x11)
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, a, cache.PerPortMKey(2, 0x10))
	assert.Equal(t, a, cache.PerPortMKey(1, 0x10))
	assert.NotZero(t, a)
	assert.Zero(t, cache.PerPortMKey(0, 0x10))
}

// TestMKeyCacheFile: the file's round trip, and its errors.
func TestMKeyCacheFile(t *testing.T) {
	c := &cache.MKeyCache{SMPort: 0x10, Keys: map[uint64]uint64{0x12: 0xabc, 0x11: 0}, Paths: map[uint64]string{0x12: "0,1,3"}}
	var b bytes.Buffer
	_, err := c.WriteTo(&b)
	require.NoError(t, err)
	assert.Equal(t, "# ibsm M_Key cache: port GUID, the M_Key the port holds, the route to it from smport\n"+
		"smport 0x0000000000000010\n0x0000000000000011 0x0000000000000000\n0x0000000000000012 0x0000000000000abc 0,1,3\n", b.String())
	back, err := cache.ReadMKeyCache(&b)
	require.NoError(t, err)
	assert.Equal(t, c, back)
	for _, bad := range []string{
		"0x12", "0x12 0xabc 0,1 x", "0 0x1", "0x12 zz", "0x12 1\n0x12 2", "0x12 1 1,2", "0x12 1 0,0", "0x12 1 0,256",
		"smport", "smport 0", "0x12 1 0" + strings.Repeat(",1", 64),
	} {
		_, err := cache.ReadMKeyCache(strings.NewReader(bad))
		assert.ErrorIs(t, err, cache.ErrMKeyFile, "%q", bad)
	}
	got, err := cache.LoadMKeyCache(filepath.Join(t.TempDir(), "none"))
	require.NoError(t, err)
	assert.Empty(t, got.Keys)
}

// FuzzReadMKeyCache: any input parses or fails with ErrMKeyFile, never a
// panic; what parses writes back to a file that parses to the same.
func FuzzReadMKeyCache(f *testing.F) {
	f.Add("smport 0x10\n0x11 0xabc 0,1,3\n# c\n\n0x12 0\n")
	f.Add("0x12 1 0,0")
	f.Add("smport")
	f.Add("0x12 1 0," + strings.Repeat("1,", 70) + "1")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := cache.ReadMKeyCache(strings.NewReader(text))
		if err != nil {
			if !errors.Is(err, cache.ErrMKeyFile) {
				t.Fatalf("error %v is no ErrMKeyFile", err)
			}
			return
		}
		back := reread(t, c, cache.ReadMKeyCache)
		assert.Equal(t, c.Keys, back.Keys)
		assert.Equal(t, c.Paths, back.Paths)
		assert.Equal(t, c.SMPort, back.SMPort)
	})
}
