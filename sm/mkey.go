package sm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"ibfab/internal/enum"
	"ibfab/madport"
	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// The M_Key manager (IBA 14.2.4; OpenSM's m_key, m_key_protection_level,
// m_key_lease_period and m_key_per_port options as the reference):
//
//   - Keys. Every management port (a switch's port 0, each CA port) gets
//     Config.MKey, or with Config.MKeyPerPort a key of its own derived
//     from it and the port GUID (PerPortMKey), with the protection bits
//     Config.MKeyProtect and the lease period Config.MKeyLease, in every
//     PortInfo Set the SM sends it; a port holding other values is
//     configured again. The SM keeps the key each port holds, by port
//     GUID (keys), and every SMP to a port carries that port's key: the
//     target is known by the SMP's directed route, through the routes
//     discovery met each GUID on, or by its LID; an SMP to a port not
//     known yet carries Config.MKey, as OpenSM's does. Keys change only
//     once discovery is over (switch port 0 in a round of its own at the
//     start of distribution, CA ports at activation): a port keyed during
//     discovery would not answer an SMP along a route not met yet.
//   - Cache. With Config.LIDFile the keys are kept in the sibling file
//     MKeyFile names (MKeyCache), written by the master with the LIDs and
//     reloaded, as they are, by a restarted SM and by a standby that takes
//     over; the routes to the ports only by an SM on the same port.
//   - Protected ports. A NodeInfo that goes unanswered through a live
//     link in a full discovery (or at the SM's own port), or a PortInfo
//     Set a port at protection 1 leaves unanswered, is a port protected by
//     an M_Key this SM does not hold (or a dead device: the SMA drops an
//     SMP that fails its check silently): an MKeyEvent "protected",
//     counted. The port is left out of the subnet, and Run sweeps again
//     every SweepInterval while such ports remain, so that the SMPs run
//     their lease out and a sweep after that takes them.
//   - Recovery. A port whose lease ran out falls back to protection 0,
//     where a Get shows its key: a PortInfo read showing a key other than
//     the one the SM holds for the port is taken ("recovered"), carried by
//     the next SMPs to the port, and replaced by the SM's own key with the
//     next PortInfo Set.
//   - Trap 256 (Bad M_Key) is repressed, so that its SMA stops repeating
//     it, counted, and reported as an MKeyEvent "trap256" naming the port
//     and the requester.

// MKeyAction is what an MKeyEvent reports; JSON spells it by name.
type MKeyAction uint8

//go:generate go tool stringer -type=MKeyAction -linecomment

// M_Key actions.
const (
	mkeyNone MKeyAction = iota //
	// MKeyProtected: a port did not answer through a live link: protected
	// by a key this SM does not hold (or dead).
	MKeyProtected // protected
	// MKeyRecovered: a port showed a key other than the one the SM held
	// for it (its lease ran out, or another SM set it at protection 0):
	// the SM takes it and sets its own.
	MKeyRecovered // recovered
	// MKeyTrap256: a port reported an SMP that failed its M_Key check.
	MKeyTrap256 // trap256
)

var mkeyActions = enum.New("M_Key action", mkeyNone, MKeyProtected, MKeyRecovered, MKeyTrap256).Wrap(ErrConfig)

// MarshalText implements encoding.TextMarshaler.
func (a MKeyAction) MarshalText() ([]byte, error) { return mkeyActions.Marshal(a) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *MKeyAction) UnmarshalText(text []byte) error { return mkeyActions.Unmarshal(a, text) }

// MKeyEvent is one thing the M_Key manager saw; ibsm prints it as a JSON
// line.
type MKeyEvent struct {
	Event  string     `json:"event"` // "mkey"
	Action MKeyAction `json:"action"`
	// GUID is the port's GUID, when known (0x-prefixed hex); Path the
	// directed route the SM reached it by, LID its LID.
	GUID string `json:"guid,omitempty"`
	Path string `json:"path,omitempty"`
	LID  uint16 `json:"lid,omitempty"`
	// Trap 256: the requester's LID, the method and attribute of the SMP
	// that failed the check, and the key it carried.
	RequesterLID uint16 `json:"requester_lid,omitempty"`
	Method       string `json:"method,omitempty"`
	Attribute    string `json:"attribute,omitempty"`
	MKey         string `json:"mkey,omitempty"`
	// Protect is the port's protection level as read (recovered).
	Protect uint8  `json:"protect,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// MKeyStats are the M_Key manager's counters (Stats.MKey).
type MKeyStats struct {
	Protected uint64 // ports found unreadable (MKeyProtected events)
	Recovered uint64 // keys taken from ports (MKeyRecovered events)
	Traps256  uint64 // Trap 256 received (and repressed)
	Keys      int    // ports whose key the SM holds
}

// MaxMKeyProtect is the highest M_KeyProtectBits level.
const MaxMKeyProtect = 3

// PerPortMKey is the key of port guid under base with Config.MKeyPerPort:
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

// mkeyState is what the M_Key manager keeps.
type mkeyState struct {
	// keys is the M_Key each port holds, by port GUID, as this SM set or
	// read it (or the cache had it).
	keys map[uint64]uint64
	// byPath is the port GUID of the management port each directed route
	// (pathString) led to, and paths the route of each GUID: how an SMP's
	// target is known.
	byPath map[string]uint64
	paths  map[uint64]string
	dirty  bool // keys changed since the cache was written
	stats  MKeyStats
	// unreadable counts the ports the last full discovery found
	// protected (Run sweeps again for them).
	unreadable int
}

func newMKeyState() *mkeyState {
	return &mkeyState{keys: map[uint64]uint64{}, byPath: map[string]uint64{}, paths: map[uint64]string{}}
}

// wantKey is the key port guid is to hold.
func (s *SM) wantKey(guid uint64) uint64 {
	if s.cfg.MKeyPerPort {
		return PerPortMKey(s.cfg.MKey, guid)
	}
	return s.cfg.MKey
}

// portKey is the key an SMP to port guid carries: the one it holds, as
// far as the SM knows, else the one it is to hold.
func (s *SM) portKey(guid uint64) uint64 {
	if k, ok := s.mk.keys[guid]; ok {
		return k
	}
	return s.wantKey(guid)
}

// MKeyOf returns the key the SM holds for port guid, and whether it holds
// one.
func (s *SM) MKeyOf(guid uint64) (uint64, bool) {
	k, ok := s.mk.keys[guid]
	return k, ok
}

// metAt notes that the directed route path leads to management port
// guid. A port met by several routes keeps the first as its own (paths),
// unless that one leads elsewhere now.
func (s *SM) metAt(path []uint8, guid uint64) {
	p := txn.PathString(path)
	if other, ok := s.mk.byPath[p]; ok && other != guid && s.mk.paths[other] == p {
		delete(s.mk.paths, other)
	}
	s.mk.byPath[p] = guid
	if old, ok := s.mk.paths[guid]; !ok || s.mk.byPath[old] != guid {
		s.mk.paths[guid] = p
	}
}

// target returns the port GUID an SMP goes to, 0 when unknown.
func (s *SM) target(r *txn.Request) uint64 {
	switch {
	case !r.DR:
		g, _ := s.lids.ownerOf(r.LID)
		return g
	case r.DrSLID == 0:
		return s.mk.byPath[txn.PathString(r.Path)]
	}
	// A LID-routed prefix to the switch at r.lid, then the directed part.
	sw, ok := s.lids.ownerOf(r.LID)
	if !ok {
		return 0
	}
	p, ok := s.mk.paths[sw]
	if !ok {
		return 0
	}
	if len(r.Path) > 1 {
		p += strings.TrimPrefix(txn.PathString(r.Path), "0")
	}
	return s.mk.byPath[p]
}

// smpKey is the M_Key an SMP carries: its target's key, Config.MKey when
// the target is not known.
func (s *SM) smpKey(r *txn.Request) uint64 {
	if g := s.target(r); g != 0 {
		return s.portKey(g)
	}
	return s.cfg.MKey
}

// setKeyFields writes the M_Key fields port guid is to hold into pi, a
// PortInfo to Set.
func (s *SM) setKeyFields(guid uint64, pi *mad.PortInfoFields) {
	pi.MKey = s.wantKey(guid)
	pi.MKeyProtectBits = s.cfg.MKeyProtect
	pi.MKeyLeasePeriod = s.cfg.MKeyLease
}

// keyFieldsOK reports whether management port guid, whose PortInfo was
// read as pi, holds the M_Key fields the SM wants.
func (s *SM) keyFieldsOK(guid uint64, pi *mad.PortInfoFields) bool {
	want := s.wantKey(guid)
	return pi.MKeyProtectBits == s.cfg.MKeyProtect && pi.MKeyLeasePeriod == s.cfg.MKeyLease &&
		pi.MKey == want && s.portKey(guid) == want
}

// readKey takes in the PortInfo of management port guid as a Get read it
// (path, lid: where): a key shown that is not the one the SM holds is
// the port's (the check showed it: protection 0, or the SMP carried it),
// and recovered; a key 0 at protection 0 is the port's too.
func (s *SM) readKey(guid uint64, path []uint8, lid uint16, pi *mad.PortInfoFields) {
	if guid == 0 {
		return
	}
	held, known := s.mk.keys[guid]
	switch {
	case pi.MKey == 0 && pi.MKeyProtectBits != 0:
		return // hidden, or 0: nothing learnt
	case known && held == pi.MKey:
		return
	case !known && pi.MKey == s.wantKey(guid):
		s.mk.keys[guid], s.mk.dirty = pi.MKey, true
		return
	}
	s.mk.keys[guid], s.mk.dirty = pi.MKey, true
	if pi.MKey == 0 {
		return // a port reset, or never keyed: nothing to recover
	}
	s.mk.stats.Recovered++
	s.mkeyEvent(MKeyEvent{Action: MKeyRecovered, GUID: fmt.Sprintf("%#016x", guid), Path: txn.PathString(path), LID: lid,
		MKey: fmt.Sprintf("%#x", pi.MKey), Protect: pi.MKeyProtectBits,
		Reason: "the port shows a key this SM did not hold; it gets this SM's own"})
}

// setKey notes the key a successful PortInfo Set to management port guid
// left it with: the answer shows it, the SMP having passed the check.
func (s *SM) setKey(guid uint64, got *mad.PortInfoFields) {
	if guid == 0 {
		return
	}
	if k, ok := s.mk.keys[guid]; !ok || k != got.MKey {
		s.mk.keys[guid], s.mk.dirty = got.MKey, true
	}
}

// unreadable reports a port that did not answer through a live link.
func (s *SM) unreadable(path []uint8, err error) {
	s.mk.unreadable++
	s.mk.stats.Protected++
	s.mkeyEvent(MKeyEvent{Action: MKeyProtected, Path: txn.PathString(path), MKey: fmt.Sprintf("%#x", s.cfg.MKey),
		Reason: fmt.Sprintf("no answer through a live link (%v): protected by an M_Key this SM does not hold, or dead", err)})
}

// setRefused reports a PortInfo Set to a management port that went
// unanswered while the port, as read, is protected (level 1: its Gets
// answer, its Sets need its key): a key this SM does not hold.
func (s *SM) setRefused(path []uint8, pi *mad.PortInfoFields, err error) {
	if pi.MKeyProtectBits == 0 || !errors.Is(err, ErrTimeout) {
		return
	}
	s.mk.unreadable++
	s.mk.stats.Protected++
	s.mkeyEvent(MKeyEvent{Action: MKeyProtected, Path: txn.PathString(path), Protect: pi.MKeyProtectBits,
		MKey:   fmt.Sprintf("%#x", s.cfg.MKey),
		Reason: fmt.Sprintf("a PortInfo Set went unanswered (%v): protected by an M_Key this SM does not hold", err)})
}

// trap256 handles a Bad M_Key trap: an event naming the port and the
// requester.
func (s *SM) trap256(m madport.MAD, n mad.Notice) {
	s.mk.stats.Traps256++
	b := n.BadMKey()
	lid := n.IssuerLID()
	e := MKeyEvent{Action: MKeyTrap256, LID: lid, RequesterLID: b.LID, Method: b.Method.String(),
		Attribute: b.AttrID.String(), MKey: fmt.Sprintf("%#x", b.MKey)}
	if g, ok := s.lids.ownerOf(lid); ok {
		e.GUID = fmt.Sprintf("%#016x", g)
	}
	if b.DR {
		e.Reason = fmt.Sprintf("directed route, DrSLID %d, %d hops", b.DRSLID, b.HopCount)
	}
	s.mkeyEvent(e)
}

func (s *SM) mkeyEvent(e MKeyEvent) {
	if s.cfg.OnMKeyEvent == nil {
		return
	}
	e.Event = "mkey"
	s.cfg.OnMKeyEvent(e)
}

// saveKeys writes the cache when keys changed.
func (s *SM) saveKeys() error {
	if s.cfg.LIDFile == "" || !s.mk.dirty {
		return nil
	}
	c := &MKeyCache{SMPort: s.guid, Keys: s.mk.keys, Paths: s.mk.paths}
	if err := c.Save(MKeyFile(s.cfg.LIDFile)); err != nil {
		return err
	}
	s.mk.dirty = false
	return nil
}

// loadKeys reads the cache, the keys it holds replacing those the SM had
// for the same ports; the routes too when they are this SM's port's.
func (s *SM) loadKeys() error {
	if s.cfg.LIDFile == "" {
		return nil
	}
	c, err := LoadMKeyCache(MKeyFile(s.cfg.LIDFile))
	if err != nil {
		return err
	}
	for g, k := range c.Keys {
		s.mk.keys[g] = k
	}
	if c.SMPort == s.guid {
		for g, p := range c.Paths {
			if _, met := s.mk.paths[g]; !met {
				s.mk.byPath[p], s.mk.paths[g] = g, p
			}
		}
	}
	return nil
}

// ErrMKeyFile wraps the errors of reading an M_Key cache file.
var ErrMKeyFile = errors.New("sm: bad M_Key file")

// MKeyFile is the M_Key cache kept beside the LID file lidFile.
func MKeyFile(lidFile string) string { return lidFile + ".mkey" }

// MKeyCache is what the M_Key cache file holds: the key each port holds,
// by port GUID, and the directed route the SM at port SMPort reached it
// by (an SMP to a port not met yet since a restart carries its key).
//
// The file has a line "smport" and the SM's port GUID, then one line per
// port: its GUID, its M_Key, both in hex as OpenSM's guid2mkey file, and
// the route, as ibnetdiscover spells it, when known:
//
//	smport 0x0002fab000000400
//	0x0002fab000000401 0x00000000000c0ffe 0,1,3
//
// Blank lines and lines starting with '#' are ignored. Errors name the
// line.
type MKeyCache struct {
	SMPort uint64
	Keys   map[uint64]uint64
	Paths  map[uint64]string
}

// ReadMKeyCache parses an M_Key cache file.
func ReadMKeyCache(r io.Reader) (*MKeyCache, error) {
	c := &MKeyCache{Keys: map[uint64]uint64{}, Paths: map[uint64]string{}}
	sc := bufio.NewScanner(r)
	line := 0
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrMKeyFile, line, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		fields := strings.Fields(s)
		if fields[0] == "smport" {
			g, err := strconv.ParseUint(fields[len(fields)-1], 0, 64)
			if len(fields) != 2 || err != nil || g == 0 {
				return nil, bad("want smport and the SM's port GUID, got %q", s)
			}
			c.SMPort = g
			continue
		}
		if len(fields) != 2 && len(fields) != 3 {
			return nil, bad("want port GUID, M_Key and maybe a route, got %q", s)
		}
		guid, err := strconv.ParseUint(fields[0], 0, 64)
		if err != nil || guid == 0 {
			return nil, bad("bad GUID %q", fields[0])
		}
		key, err := strconv.ParseUint(fields[1], 0, 64)
		if err != nil {
			return nil, bad("bad M_Key %q", fields[1])
		}
		if _, dup := c.Keys[guid]; dup {
			return nil, bad("GUID %#x listed twice", guid)
		}
		c.Keys[guid] = key
		if len(fields) == 3 {
			path, err := parsePath(fields[2])
			if err != nil {
				return nil, bad("route %q: %v", fields[2], err)
			}
			c.Paths[guid] = txn.PathString(path)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %w", ErrMKeyFile, line+1, err)
	}
	return c, nil
}

// parsePath reads a directed route as pathString spells it: "0", then
// the ports out of which it leaves each switch.
func parsePath(s string) ([]uint8, error) {
	parts := strings.Split(s, ",")
	if parts[0] != "0" {
		return nil, errors.New("a route starts at 0")
	}
	if len(parts)-1 > mad.MaxHopCount {
		return nil, fmt.Errorf("%d hops, at most %d", len(parts)-1, mad.MaxHopCount)
	}
	path := []uint8{0}
	for _, p := range parts[1:] {
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("bad port %q", p)
		}
		path = append(path, uint8(n))
	}
	return path, nil
}

// WriteTo writes c in the file format, sorted by GUID.
func (c *MKeyCache) WriteTo(w io.Writer) (int64, error) {
	guids := slices.Sorted(maps.Keys(c.Keys))
	var b bytes.Buffer
	b.WriteString("# ibsm M_Key cache: port GUID, the M_Key the port holds, the route to it from smport\n")
	if c.SMPort != 0 {
		fmt.Fprintf(&b, "smport 0x%016x\n", c.SMPort)
	}
	for _, g := range guids {
		fmt.Fprintf(&b, "0x%016x 0x%016x", g, c.Keys[g])
		if p, ok := c.Paths[g]; ok {
			b.WriteString(" " + p)
		}
		b.WriteString("\n")
	}
	n, err := w.Write(b.Bytes())
	return int64(n), err
}

// LoadMKeyCache reads the M_Key file at path; a missing file holds no
// keys.
func LoadMKeyCache(path string) (*MKeyCache, error) {
	return loadCache(path, func() *MKeyCache {
		return &MKeyCache{Keys: map[uint64]uint64{}, Paths: map[uint64]string{}}
	}, ReadMKeyCache)
}

// Save writes c to path atomically, readable by its owner only (a
// temporary file's mode): the keys are secrets.
func (c *MKeyCache) Save(path string) error { return saveAtomic(path, c) }
