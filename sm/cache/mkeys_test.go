package cache_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/cache"
	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// owners is a LID table for Target: LID -> port GUID.
type owners map[uint16]uint64

func (o owners) OwnerOf(lid uint16) (uint64, bool) {
	g, ok := o[lid]
	return g, ok
}

// TestMKeysTarget: an SMP carries its target's key, the target found by
// LID, by directed route, or by a LID-routed prefix's switch and the
// directed part after it; an unknown target carries the policy's key.
func TestMKeysTarget(t *testing.T) {
	c := cache.NewMKeys(cache.Policy{Key: 0x100})
	c.MetAt([]uint8{0}, 0xa)       // the SM's own port
	c.MetAt([]uint8{0, 1}, 0xb)    // a switch
	c.MetAt([]uint8{0, 1, 3}, 0xc) // a CA behind it
	c.Set(0xb, &mad.PortInfoFields{MKey: 0xbb})
	c.Set(0xc, &mad.PortInfoFields{MKey: 0xcc})
	lids := owners{5: 0xb, 7: 0xc}
	for _, tt := range []struct {
		name string
		r    txn.Request
		want uint64
	}{
		{"LID", txn.Request{LID: 7}, 0xcc},
		{"directed", txn.Request{DR: true, Path: []uint8{0, 1}}, 0xbb},
		{"prefix to the switch", txn.Request{DR: true, LID: 5, DrSLID: 1, Path: []uint8{0}}, 0xbb},
		{"prefix and a hop", txn.Request{DR: true, LID: 5, DrSLID: 1, Path: []uint8{0, 3}}, 0xcc},
		{"not met", txn.Request{DR: true, Path: []uint8{0, 2}}, 0x100},
		{"unknown LID", txn.Request{LID: 9}, 0x100},
		{"met, no key held", txn.Request{DR: true, Path: []uint8{0}}, 0x100},
	} {
		assert.Equal(t, tt.want, c.SMPKey(&tt.r, lids), tt.name)
	}
	// A route that leads elsewhere now is the new port's.
	c.MetAt([]uint8{0, 1, 3}, 0xd)
	assert.Equal(t, uint64(0xd), c.Target(&txn.Request{LID: 5, DR: true, DrSLID: 1, Path: []uint8{0, 3}}, lids))
}

// TestMKeysRead: a PortInfo read teaches the cache the port's key when it
// shows one; only a key neither held nor wanted is a recovery.
func TestMKeysRead(t *testing.T) {
	c := cache.NewMKeys(cache.Policy{Key: 0x100, Protect: 2, Lease: 9})
	assert.False(t, c.Read(0, &mad.PortInfoFields{MKey: 5}), "no GUID")
	assert.False(t, c.Read(0x1, &mad.PortInfoFields{MKeyProtectBits: 2}), "hidden")
	_, held := c.Held(0x1)
	assert.False(t, held)
	assert.False(t, c.Read(0x1, &mad.PortInfoFields{MKey: 0x100}), "the key wanted")
	assert.True(t, c.Read(0x2, &mad.PortInfoFields{MKey: 0x7}), "another SM's key")
	assert.Equal(t, uint64(0x7), c.Key(0x2))
	assert.False(t, c.Read(0x3, &mad.PortInfoFields{}), "reset: 0 at protection 0")
	k, held := c.Held(0x3)
	assert.True(t, held)
	assert.Zero(t, k)

	var pi mad.PortInfoFields
	c.SetFields(0x2, &pi)
	assert.Equal(t, mad.PortInfoFields{MKey: 0x100, MKeyProtectBits: 2, MKeyLeasePeriod: 9}, pi)
	assert.False(t, c.FieldsOK(0x2, &pi), "the port still holds 0x7 as far as the cache knows")
	c.Set(0x2, &pi)
	assert.True(t, c.FieldsOK(0x2, &pi))
	assert.Equal(t, 3, c.Len())
}

// TestMKeysFile: Save writes only what changed; Load takes the keys, and
// the routes only when they start at the same SM port.
func TestMKeysFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "guid2lid.mkey")
	c := cache.NewMKeys(cache.Policy{Key: 0x100, PerPort: true})
	c.MetAt([]uint8{0, 2}, 0xb)
	c.Set(0xb, &mad.PortInfoFields{MKey: cache.PerPortMKey(0x100, 0xb)})
	require.NoError(t, c.Save(path, 0xa))
	f, err := cache.LoadMKeyCache(path)
	require.NoError(t, err)
	assert.Equal(t, &cache.MKeyCache{SMPort: 0xa, Keys: map[uint64]uint64{0xb: cache.PerPortMKey(0x100, 0xb)},
		Paths: map[uint64]string{0xb: "0,2"}}, f)

	same := cache.NewMKeys(cache.Policy{})
	require.NoError(t, same.Load(path, 0xa))
	assert.Equal(t, cache.PerPortMKey(0x100, 0xb), same.SMPKey(&txn.Request{DR: true, Path: []uint8{0, 2}}, owners{}))
	other := cache.NewMKeys(cache.Policy{})
	require.NoError(t, other.Load(path, 0xe))
	assert.Equal(t, cache.PerPortMKey(0x100, 0xb), other.Key(0xb))
	assert.Zero(t, other.SMPKey(&txn.Request{DR: true, Path: []uint8{0, 2}}, owners{}), "another SM port's route")
	require.NoError(t, os.Remove(path))
	require.NoError(t, c.Save(path, 0xa))
	assert.NoFileExists(t, path, "nothing changed: nothing written")
}
