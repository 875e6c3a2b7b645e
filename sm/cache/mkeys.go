package cache

import (
	"encoding/binary"
	"hash/fnv"
	"strings"

	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// Policy is the M_Key fields the SM gives every management port
// (sm.MKeyConfig): Key, or with PerPort a key of each port's own derived
// from it (PerPortMKey), with the protection bits Protect and the lease
// period Lease.
type Policy struct {
	Key     uint64
	PerPort bool
	Protect uint8
	Lease   uint16
}

// PerPortMKey is the key of port guid under base with Policy.PerPort:
// the 64-bit FNV-1a hash of base and guid, both big-endian, in that order;
// base itself should the hash be 0 (a key of 0 protects nothing). 0 for
// base 0.
func PerPortMKey(base, guid uint64) uint64 {
	if base == 0 {
		return 0
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], base)
	binary.BigEndian.PutUint64(b[8:], guid)
	h := fnv.New64a()
	h.Write(b[:])
	if k := h.Sum64(); k != 0 {
		return k
	}
	return base
}

// Owners finds the port GUID that holds a LID (LIDMap): an SMP LID-routed
// to a port carries that port's key.
type Owners interface {
	OwnerOf(lid uint16) (uint64, bool)
}

// MKeys is the M_Key cache: the key each management port holds, by port
// GUID, as the SM set or read it (or its file had it), and the directed
// route the SM met each port by, so that every SMP carries its target's
// key. Keys change only through what the ports answered (Read, Set):
// the cache never guesses that a Set it did not see succeed took.
type MKeys struct {
	policy Policy
	keys   map[uint64]uint64
	// byPath is the port GUID of the management port each directed route
	// (txn.PathString) led to, and paths the route of each GUID: how an
	// SMP's target is known.
	byPath map[string]uint64
	paths  map[uint64]string
	dirty  bool // keys changed since the file was written
}

// NewMKeys returns a cache holding no keys, for ports to be given p's.
func NewMKeys(p Policy) *MKeys {
	return &MKeys{policy: p, keys: map[uint64]uint64{}, byPath: map[string]uint64{}, paths: map[uint64]string{}}
}

// Want is the key port guid is to hold.
func (c *MKeys) Want(guid uint64) uint64 {
	if c.policy.PerPort {
		return PerPortMKey(c.policy.Key, guid)
	}
	return c.policy.Key
}

// Key is the key an SMP to port guid carries: the one it holds, as far
// as the cache knows, else the one it is to hold.
func (c *MKeys) Key(guid uint64) uint64 {
	if k, ok := c.keys[guid]; ok {
		return k
	}
	return c.Want(guid)
}

// Held returns the key the cache holds for port guid, and whether it
// holds one.
func (c *MKeys) Held(guid uint64) (uint64, bool) {
	k, ok := c.keys[guid]
	return k, ok
}

// Len is the number of ports whose key the cache holds.
func (c *MKeys) Len() int { return len(c.keys) }

// MetAt notes that the directed route path leads to management port
// guid. A port met by several routes keeps the first as its own (paths),
// unless that one leads elsewhere now.
func (c *MKeys) MetAt(path []uint8, guid uint64) {
	p := txn.PathString(path)
	if other, ok := c.byPath[p]; ok && other != guid && c.paths[other] == p {
		delete(c.paths, other)
	}
	c.byPath[p] = guid
	if old, ok := c.paths[guid]; !ok || c.byPath[old] != guid {
		c.paths[guid] = p
	}
}

// Target returns the port GUID an SMP goes to, 0 when unknown: by its
// LID (lids), its directed route, or the route of the switch its
// LID-routed prefix ends at and the directed part after it.
func (c *MKeys) Target(r *txn.Request, lids Owners) uint64 {
	switch {
	case !r.DR:
		g, _ := lids.OwnerOf(r.LID)
		return g
	case r.DrSLID == 0:
		return c.byPath[txn.PathString(r.Path)]
	}
	sw, ok := lids.OwnerOf(r.LID)
	if !ok {
		return 0
	}
	p, ok := c.paths[sw]
	if !ok {
		return 0
	}
	if len(r.Path) > 1 {
		p += strings.TrimPrefix(txn.PathString(r.Path), "0")
	}
	return c.byPath[p]
}

// SMPKey is the M_Key an SMP carries (the transaction layer's KeyOf):
// its target's key, the policy's Key when the target is not known, as
// OpenSM's SMPs to a port not met yet carry its m_key.
func (c *MKeys) SMPKey(r *txn.Request, lids Owners) uint64 {
	if g := c.Target(r, lids); g != 0 {
		return c.Key(g)
	}
	return c.policy.Key
}

// SetFields writes the M_Key fields port guid is to hold into pi, a
// PortInfo to Set.
func (c *MKeys) SetFields(guid uint64, pi *mad.PortInfoFields) {
	pi.MKey = c.Want(guid)
	pi.MKeyProtectBits = c.policy.Protect
	pi.MKeyLeasePeriod = c.policy.Lease
}

// FieldsOK reports whether management port guid, whose PortInfo was
// read as pi, holds the M_Key fields the policy wants, and the cache
// knows it holds that key.
func (c *MKeys) FieldsOK(guid uint64, pi *mad.PortInfoFields) bool {
	want := c.Want(guid)
	return pi.MKeyProtectBits == c.policy.Protect && pi.MKeyLeasePeriod == c.policy.Lease &&
		pi.MKey == want && c.Key(guid) == want
}

// Read takes in the PortInfo of management port guid as a Get read it: a
// key shown that is not the one the cache holds is the port's (the check
// showed it: protection 0, or the SMP carried it), and a key 0 at
// protection 0 is the port's too. It reports whether the port showed a
// key other than 0 that the cache neither held nor wanted: a key
// recovered, which the SM reports.
func (c *MKeys) Read(guid uint64, pi *mad.PortInfoFields) (recovered bool) {
	if guid == 0 {
		return false
	}
	held, known := c.keys[guid]
	switch {
	case pi.MKey == 0 && pi.MKeyProtectBits != 0:
		return false // hidden, or 0: nothing learnt
	case known && held == pi.MKey:
		return false
	case !known && pi.MKey == c.Want(guid):
		c.keys[guid], c.dirty = pi.MKey, true
		return false
	}
	c.keys[guid], c.dirty = pi.MKey, true
	return pi.MKey != 0 // 0: a port reset, or never keyed: nothing to recover
}

// Set notes the key a successful PortInfo Set to management port guid
// left it with: the answer got shows it, the SMP having passed the check.
func (c *MKeys) Set(guid uint64, got *mad.PortInfoFields) {
	if guid == 0 {
		return
	}
	if k, ok := c.keys[guid]; !ok || k != got.MKey {
		c.keys[guid], c.dirty = got.MKey, true
	}
}

// Save writes the cache to the file at path, with smPort the SM's port
// GUID the routes start at, when the keys changed since it was last
// written: an unchanged subnet's sweeps write nothing.
func (c *MKeys) Save(path string, smPort uint64) error {
	if !c.dirty {
		return nil
	}
	f := &MKeyCache{SMPort: smPort, Keys: c.keys, Paths: c.paths}
	if err := f.Save(path); err != nil {
		return err
	}
	c.dirty = false
	return nil
}

// Load reads the file at path, the keys it holds replacing those the
// cache had for the same ports; the routes too when they start at
// smPort (an SM on another port reaches the ports by other routes), for
// the ports not met yet.
func (c *MKeys) Load(path string, smPort uint64) error {
	f, err := LoadMKeyCache(path)
	if err != nil {
		return err
	}
	for g, k := range f.Keys {
		c.keys[g] = k
	}
	if f.SMPort == smPort {
		for g, p := range f.Paths {
			if _, met := c.paths[g]; !met {
				c.byPath[p], c.paths[g] = g, p
			}
		}
	}
	return nil
}
