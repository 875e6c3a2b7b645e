package sm

import (
	"errors"
	"fmt"
	"io"

	"ibfab/internal/enum"
	"ibfab/madport"
	"ibfab/sm/cache"
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
//     GUID (the M_Key cache, KeyCache, package sm/cache), and every SMP to a port carries that port's key: the
//     target is known by the SMP's directed route, through the routes
//     discovery met each GUID on, or by its LID; an SMP to a port not
//     known yet carries Config.MKey, as OpenSM's does. Keys change only
//     once discovery is over (switch port 0 in a round of its own at the
//     start of distribution, CA ports at activation): a port keyed during
//     discovery would not answer an SMP along a route not met yet.
//   - Cache. With Config.LIDFile the keys are kept in the sibling file
//     MKeyFile names (MKeyCache, package sm/cache), written by the master with the LIDs and
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

// PerPortMKey is the key of port guid under base with Config.MKeyPerPort
// (cache.PerPortMKey): the 64-bit FNV-1a hash of base and guid, both
// big-endian, in that order; base itself should the hash be 0 (a key of
// 0 protects nothing). 0 for base 0.
func PerPortMKey(base, guid uint64) uint64 { return cache.PerPortMKey(base, guid) }

// mkeyManager is the M_Key manager's own state beside the M_Key cache
// (s.mk, which holds the keys): its counters, and how many ports the
// last full discovery found protected (Run sweeps again for them).
type mkeyManager struct {
	stats      MKeyStats
	unreadable int
}

// MKeyOf returns the key the SM holds for port guid, and whether it holds
// one.
func (s *SM) MKeyOf(guid uint64) (uint64, bool) { return s.mk.Held(guid) }

// smpKey is the M_Key an SMP carries (the transaction layer's KeyOf):
// its target's key, Config.MKey when the target is not known.
func (s *SM) smpKey(r *txn.Request) uint64 { return s.mk.SMPKey(r, s.lids) }

// readKey takes in the PortInfo of management port guid as a Get read it
// (path, lid: where): a key shown that is not the one the SM holds is
// the port's, and recovered: counted and reported.
func (s *SM) readKey(guid uint64, path []uint8, lid uint16, pi *mad.PortInfoFields) {
	if !s.mk.Read(guid, pi) {
		return
	}
	s.mkm.stats.Recovered++
	s.mkeyEvent(MKeyEvent{Action: MKeyRecovered, GUID: fmt.Sprintf("%#016x", guid), Path: txn.PathString(path), LID: lid,
		MKey: fmt.Sprintf("%#x", pi.MKey), Protect: pi.MKeyProtectBits,
		Reason: "the port shows a key this SM did not hold; it gets this SM's own"})
}

// unreadable reports a port that did not answer through a live link.
func (s *SM) unreadable(path []uint8, err error) {
	s.mkm.unreadable++
	s.mkm.stats.Protected++
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
	s.mkm.unreadable++
	s.mkm.stats.Protected++
	s.mkeyEvent(MKeyEvent{Action: MKeyProtected, Path: txn.PathString(path), Protect: pi.MKeyProtectBits,
		MKey:   fmt.Sprintf("%#x", s.cfg.MKey),
		Reason: fmt.Sprintf("a PortInfo Set went unanswered (%v): protected by an M_Key this SM does not hold", err)})
}

// trap256 handles a Bad M_Key trap: an event naming the port and the
// requester.
func (s *SM) trap256(m madport.MAD, n mad.Notice) {
	s.mkm.stats.Traps256++
	b := n.BadMKey()
	lid := n.IssuerLID()
	e := MKeyEvent{Action: MKeyTrap256, LID: lid, RequesterLID: b.LID, Method: b.Method.String(),
		Attribute: b.AttrID.String(), MKey: fmt.Sprintf("%#x", b.MKey)}
	if g, ok := s.lids.OwnerOf(lid); ok {
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

// saveKeys writes the M_Key cache beside the LID file when keys changed.
func (s *SM) saveKeys() error {
	if s.cfg.LIDFile == "" {
		return nil
	}
	return s.mk.Save(MKeyFile(s.cfg.LIDFile), s.guid)
}

// loadKeys reads the M_Key cache beside the LID file, the keys it holds
// replacing those the SM had for the same ports; the routes too when
// they are this SM's port's.
func (s *SM) loadKeys() error {
	if s.cfg.LIDFile == "" {
		return nil
	}
	return s.mk.Load(MKeyFile(s.cfg.LIDFile), s.guid)
}

// The M_Key cache's file lives in package sm/cache; these are its names
// as sm's callers know them.

// MKeyCache is what the M_Key cache file holds: the key each port holds,
// by port GUID, and the directed route the SM at port SMPort reached it
// by (cache.MKeyCache, which gives the format).
type MKeyCache = cache.MKeyCache

// ErrMKeyFile wraps the errors of reading an M_Key cache file.
var ErrMKeyFile = cache.ErrMKeyFile

// MKeyFile is the M_Key cache kept beside the LID file lidFile.
func MKeyFile(lidFile string) string { return cache.MKeyFile(lidFile) }

// ReadMKeyCache parses an M_Key cache file.
func ReadMKeyCache(r io.Reader) (*MKeyCache, error) { return cache.ReadMKeyCache(r) }

// LoadMKeyCache reads the M_Key file at path; a missing file holds no
// keys.
func LoadMKeyCache(path string) (*MKeyCache, error) { return cache.LoadMKeyCache(path) }
