package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"ibfab/wire/mad"
)

// ErrLIDFile wraps the errors of reading a GUID→LID file.
var ErrLIDFile = errors.New("sm: bad LID file")

// ErrNoLIDs is returned when the unicast LID range is used up.
var ErrNoLIDs = errors.New("sm: no free LIDs")

// LIDMap keeps the LIDs the SM gave each port GUID, so that a port keeps
// its LIDs across sweeps and, through a file, across SM restarts. A LID a
// GUID holds stays reserved for it while the port is away: new ports get
// the lowest free aligned block that no GUID holds.
//
// The file has one line per port GUID, in hex, as OpenSM's guid2lid file:
//
//	0x0002fab000000400 0x0001 0x0001
//
// the GUID, the first and the last LID of its block. Blank lines and
// lines starting with '#' are ignored.
type LIDMap struct {
	byGUID map[uint64]lidBlock
	owner  map[uint16]uint64 // every LID held -> its GUID
	// inUse marks the LIDs given out in the current sweep.
	inUse map[uint16]bool
	// from[n]: every aligned block of n LIDs below it is taken for the
	// rest of the sweep (held or in use), so new blocks are looked for
	// from there on.
	from map[int]int
}

type lidBlock struct {
	base uint16
	n    int // 2^LMC
}

// NewLIDMap returns an empty map.
func NewLIDMap() *LIDMap {
	return &LIDMap{byGUID: map[uint64]lidBlock{}, owner: map[uint16]uint64{}, inUse: map[uint16]bool{}, from: map[int]int{}}
}

// ReadLIDMap parses a GUID→LID file. Errors name the line.
func ReadLIDMap(r io.Reader) (*LIDMap, error) {
	m := NewLIDMap()
	if err := readLines(r, ErrLIDFile, m.readLine); err != nil {
		return nil, err
	}
	return m, nil
}

// readLine takes in a line of a GUID→LID file, s split into fields: a
// GUID and the aligned block it holds, which no GUID before it holds
// part of.
func (m *LIDMap) readLine(s string, fields []string) error {
	if len(fields) != 3 {
		return fmt.Errorf("want GUID, first LID and last LID, got %q", s)
	}
	guid, err := strconv.ParseUint(fields[0], 0, 64)
	if err != nil || guid == 0 {
		return fmt.Errorf("bad GUID %q", fields[0])
	}
	lo, err1 := strconv.ParseUint(fields[1], 0, 16)
	hi, err2 := strconv.ParseUint(fields[2], 0, 16)
	if err1 != nil || err2 != nil || lo == 0 || hi < lo || hi >= mad.MulticastLIDBase {
		return fmt.Errorf("bad LID range %s-%s", fields[1], fields[2])
	}
	n := int(hi-lo) + 1
	if n&(n-1) != 0 || n > 128 || int(lo)%n != 0 {
		return fmt.Errorf("LIDs %d-%d are not an aligned block of 2^LMC", lo, hi)
	}
	if _, dup := m.byGUID[guid]; dup {
		return fmt.Errorf("GUID %#x listed twice", guid)
	}
	for l := lo; l <= hi; l++ {
		if o, taken := m.owner[uint16(l)]; taken {
			return fmt.Errorf("LID %d already belongs to GUID %#x", l, o)
		}
	}
	m.hold(guid, lidBlock{uint16(lo), n})
	return nil
}

// LoadLIDMap reads the file at path; a missing file is an empty map.
func LoadLIDMap(path string) (*LIDMap, error) { return load(path, NewLIDMap, ReadLIDMap) }

// WriteTo writes the map in the file format, sorted by GUID.
func (m *LIDMap) WriteTo(w io.Writer) (int64, error) {
	guids := slices.Sorted(maps.Keys(m.byGUID))
	var b bytes.Buffer
	b.WriteString("# ibsm GUID to LID map: port GUID, first LID, last LID\n")
	for _, g := range guids {
		blk := m.byGUID[g]
		fmt.Fprintf(&b, "0x%016x 0x%04x 0x%04x\n", g, blk.base, int(blk.base)+blk.n-1)
	}
	n, err := w.Write(b.Bytes())
	return int64(n), err
}

// Save writes the map to path atomically (a temporary file renamed over
// it), so a crash never leaves half a file.
func (m *LIDMap) Save(path string) error { return saveAtomic(path, m) }

// Lookup returns the base LID and LID count held by guid.
func (m *LIDMap) Lookup(guid uint64) (base uint16, n int, ok bool) {
	b, ok := m.byGUID[guid]
	return b.base, b.n, ok
}

// OwnerOf returns the GUID that holds lid.
func (m *LIDMap) OwnerOf(lid uint16) (uint64, bool) {
	g, ok := m.owner[lid]
	return g, ok
}

// Len returns the number of GUIDs in the map.
func (m *LIDMap) Len() int { return len(m.byGUID) }

// hold gives guid the block b, taking it from any GUID that held part of
// it (which loses its whole block).
func (m *LIDMap) hold(guid uint64, b lidBlock) {
	m.release(guid)
	for k := range b.n {
		if o, ok := m.owner[b.base+uint16(k)]; ok {
			m.release(o)
		}
	}
	m.byGUID[guid] = b
	for k := range b.n {
		m.owner[b.base+uint16(k)] = guid
	}
}

func (m *LIDMap) release(guid uint64) {
	if old, ok := m.byGUID[guid]; ok {
		for k := range old.n {
			delete(m.owner, old.base+uint16(k))
		}
		delete(m.byGUID, guid)
	}
}

// BeginSweep forgets which LIDs the last sweep gave out; the map itself
// stays.
func (m *LIDMap) BeginSweep() {
	clear(m.inUse)
	clear(m.from)
}

// AssignPrefer gives port guid a block of 2^lmc LIDs aligned to its size:
// the one starting at cur (the port's LIDs as the fabric has them, 0 for
// none) when it is aligned and no other port took it in this sweep, even
// from another GUID that held it; else as assign.
func (m *LIDMap) AssignPrefer(guid uint64, lmc uint8, cur uint16) (uint16, error) {
	n := 1 << lmc
	if cur != 0 && int(cur)%n == 0 && int(cur)+n-1 < mad.MulticastLIDBase {
		free := true
		for k := range n {
			free = free && !m.inUse[cur+uint16(k)]
		}
		if free {
			m.hold(guid, lidBlock{cur, n})
			m.Use(cur, n)
			return cur, nil
		}
	}
	return m.assign(guid, lmc)
}

// assign gives port guid a block of 2^lmc LIDs aligned to its size: the
// block it holds when it is still free in this sweep, else the lowest
// aligned block no GUID holds and no port uses.
func (m *LIDMap) assign(guid uint64, lmc uint8) (uint16, error) {
	n := 1 << lmc
	if b, ok := m.byGUID[guid]; ok && b.n == n && m.freeFor(guid, b.base, n) {
		m.Use(b.base, n)
		return b.base, nil
	}
	base := max(m.from[n], n)
	for ; base+n-1 < mad.MulticastLIDBase; base += n {
		if m.freeFor(0, uint16(base), n) {
			m.from[n] = base + n
			m.hold(guid, lidBlock{uint16(base), n})
			m.Use(uint16(base), n)
			return uint16(base), nil
		}
	}
	m.from[n] = base
	return 0, fmt.Errorf("%w for %d more (GUID %#x)", ErrNoLIDs, n, guid)
}

func (m *LIDMap) freeFor(guid uint64, base uint16, n int) bool {
	for k := range n {
		l := base + uint16(k)
		if o, held := m.owner[l]; m.inUse[l] || (held && o != guid) {
			return false
		}
	}
	return true
}

// Use marks the block of n LIDs from base given out in this sweep, as
// assign does, so that no other port gets them until the next
// BeginSweep: a partial discovery keeps the LIDs the ports it does not
// meet again have.
func (m *LIDMap) Use(base uint16, n int) {
	for k := range n {
		m.inUse[base+uint16(k)] = true
	}
}
