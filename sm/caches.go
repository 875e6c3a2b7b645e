package sm

import (
	"ibfab/sm/cache"
	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// LIDCache is the LID cache as the SM uses it (cache.LIDMap): one
// discovery's LIDs are given out between two BeginSweeps, a port keeping
// the block it has or held when it can; the M_Key cache and Trap 256
// find a LID's port through it. Always from the SM's goroutine.
type LIDCache interface {
	cache.Owners
	// BeginSweep starts a discovery's assignment; Use marks a block
	// given out already (the ports a partial discovery keeps).
	BeginSweep()
	Use(base uint16, n int)
	// AssignPrefer gives port guid 2^lmc LIDs, the block from cur (the
	// port's own, 0 for none) when it is free.
	AssignPrefer(guid uint64, lmc uint8, cur uint16) (uint16, error)
	// Save writes the cache to the file at path.
	Save(path string) error
}

// KeyCache is the M_Key cache as the SM uses it (cache.MKeys): the key
// each management port holds, by port GUID, and the routes the SM met
// the ports by, so that every SMP carries its target's key (SMPKey, the
// transaction layer's KeyOf). The M_Key manager's events and counters
// stay in the SM (mkey.go). Always from the SM's goroutine.
type KeyCache interface {
	// Held is the key the cache holds for port guid; Key the one an SMP
	// to it carries (held, else the one it is to hold); Len how many
	// ports' keys it holds.
	Held(guid uint64) (uint64, bool)
	Key(guid uint64) uint64
	Len() int
	// MetAt notes that directed route path leads to port guid; SMPKey is
	// the key SMP r carries, its target found through lids or the routes.
	MetAt(path []uint8, guid uint64)
	SMPKey(r *txn.Request, lids cache.Owners) uint64
	// SetFields writes the M_Key fields port guid is to hold into a
	// PortInfo to Set; FieldsOK reports whether pi, read, holds them.
	SetFields(guid uint64, pi *mad.PortInfoFields)
	FieldsOK(guid uint64, pi *mad.PortInfoFields) bool
	// Read takes in a PortInfo read, reporting a key recovered; Set the
	// answer to a PortInfo Set.
	Read(guid uint64, pi *mad.PortInfoFields) (recovered bool)
	Set(guid uint64, got *mad.PortInfoFields)
	// Save writes the file at path when the keys changed, Load merges
	// it in; smPort is the SM's port GUID, where the routes start.
	Save(path string, smPort uint64) error
	Load(path string, smPort uint64) error
}

var (
	_ LIDCache = (*cache.LIDMap)(nil)
	_ KeyCache = (*cache.MKeys)(nil)
)

// newKeyCache is the M_Key cache for cfg's M_Key fields.
func newKeyCache(cfg *Config) *cache.MKeys {
	return cache.NewMKeys(cache.Policy{Key: cfg.MKey, PerPort: cfg.MKeyPerPort, Protect: cfg.MKeyProtect, Lease: cfg.MKeyLease})
}
