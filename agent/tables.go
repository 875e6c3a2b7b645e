package agent

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"ibfab/wire/mad"
)

// tables is the device state the data plane reads on every packet. Each
// piece sits behind an atomic pointer to an immutable value that a Set
// replaces whole (copy on write), so a lookup takes no lock and a reader
// never sees half a block. Writers hold Agent.mu, which serializes them.
type tables struct {
	// lft is the switch's linear forwarding table: one pointer per 64-LID
	// block, up to the highest block set so far (a Set past its end
	// replaces the slice with a longer copy), of the lftBlocks that
	// LinearFDBCap gives. A slice of every block a switch could have was
	// 6 KB per switch (768 pointers) where a 9,200-LID subnet sets 144.
	lft       atomic.Pointer[[]atomic.Pointer[lftBlock]]
	lftBlocks int
	lftTop    atomic.Uint32              // SwitchInfo.LinearFDBTop
	mft       []atomic.Pointer[mftBlock] // switch: one pointer per 32-MLID block
	sl2vl     []atomic.Pointer[sl2vlRow] // switch: per input port; CA: [0] only
	vlarb     []atomic.Pointer[VLArbConfig]
	pkeys     []atomic.Pointer[[]mad.PKey]
	config    []atomic.Pointer[PortConfig]
	nports    uint8
	sw        bool
}

// lftBlock is one LinearForwardingTable block: the output port of 64 LIDs.
type lftBlock [mad.LFTEntriesPerBlock]uint8

// mftBlock is one MulticastForwardingTable block: the ports of 32 MLIDs.
type mftBlock [mad.MFTEntriesPerBlock]PortSet

// sl2vlRow maps (output port, SL) to a VL for one input port.
type sl2vlRow [][mad.NumSLs]uint8

// PortSet is a set of port numbers 0..255, as a multicast forwarding entry
// names them.
type PortSet [4]uint64

// Has reports whether p is in the set.
func (s PortSet) Has(p uint8) bool { return s[p/64]&(1<<(p%64)) != 0 }

// Add adds p to the set.
func (s *PortSet) Add(p uint8) { s[p/64] |= 1 << (p % 64) }

// Len returns the number of ports in the set.
func (s PortSet) Len() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// Ports returns the ports in the set in increasing order.
func (s PortSet) Ports() []uint8 {
	var ps []uint8
	for i := range 256 {
		if s.Has(uint8(i)) {
			ps = append(ps, uint8(i))
		}
	}
	return ps
}

// VLArbConfig is one output port's VL arbitration setup: the high- and
// low-priority tables and the high-priority budget.
type VLArbConfig struct {
	High, Low   [mad.VLArbMaxEntries]mad.VLArbEntry
	HighCap     uint8 // entries of High in use (PortInfo.VLArbitrationHighCap)
	LowCap      uint8
	VLHighLimit uint8 // PortInfo.VLHighLimit, in 4096-byte units
}

func (t *tables) init(a *Agent) {
	n := int(a.cfg.NumPorts) + 1
	t.nports = a.cfg.NumPorts
	t.sw = a.isSwitch()
	if t.sw {
		t.lftBlocks = (int(a.cfg.LinearFDBCap) + mad.LFTEntriesPerBlock - 1) / mad.LFTEntriesPerBlock
		t.mft = make([]atomic.Pointer[mftBlock], (int(a.cfg.MulticastFDBCap)+mad.MFTEntriesPerBlock-1)/mad.MFTEntriesPerBlock)
		t.sl2vl = make([]atomic.Pointer[sl2vlRow], n)
	} else {
		t.sl2vl = make([]atomic.Pointer[sl2vlRow], 1)
	}
	// Every input port starts on the same row (all SLs on VL0), one for
	// every agent with as many ports; a Set copies the row it changes, so
	// they share it until then (a 41-port switch held 41 copies: 27 KB).
	row := resetSL2VL(n)
	for i := range t.sl2vl {
		t.sl2vl[i].Store(row)
	}
	t.vlarb = make([]atomic.Pointer[VLArbConfig], n)
	t.pkeys = make([]atomic.Pointer[[]mad.PKey], n)
	t.config = make([]atomic.Pointer[PortConfig], n)
	// The reset tables and configurations are shared values too, one for
	// every port alike in the fabric (they are immutable: a Set stores a
	// new one); a port's own copy of each was 270 B of 9,200-node plane's
	// heap per port.
	for i := range n {
		info := &a.port[i].info
		t.vlarb[i].Store(resetVLArb(info))
		t.pkeys[i].Store(resetPKeys(a.pkeyCap(uint8(i))))
		t.config[i].Store(sharedConfigs.get(PortConfig{NeighborMTU: info.NeighborMTU, OperationalVLs: info.OperationalVLs,
			HOQLife: info.HOQLife, VLStallCount: info.VLStallCount}))
	}
}

// lftSlot returns the pointer of LFT block, growing the table to it; mu
// held. block must be below lftBlocks.
func (t *tables) lftSlot(block int) *atomic.Pointer[lftBlock] {
	var dir []atomic.Pointer[lftBlock]
	if d := t.lft.Load(); d != nil {
		dir = *d
	}
	if block >= len(dir) {
		// Readers may hold the old slice: copy the pointers, publish the
		// new one. Only Sets grow it, and they hold mu. It grows to
		// LinearFDBTop's block at once when the SM has set that, as it
		// does before the blocks; past it, it doubles, as append does
		// (growing by one block per Set made 80 KB of garbage per switch
		// of a 9,200-LID subnet).
		want := max(block+1, int(t.lftTop.Load())/mad.LFTEntriesPerBlock+1)
		if want == block+1 {
			want = max(want, 2*len(dir))
		}
		grown := make([]atomic.Pointer[lftBlock], min(want, t.lftBlocks))
		for i := range dir {
			grown[i].Store(dir[i].Load())
		}
		t.lft.Store(&grown)
		dir = grown
	}
	return &dir[block]
}

// lftAt returns LFT block i, nil when it was never set.
func (t *tables) lftAt(i int) *lftBlock {
	d := t.lft.Load()
	if d == nil || i >= len(*d) {
		return nil
	}
	return (*d)[i].Load()
}

// DefaultVLArbWeight is the weight, in 64-byte units, of each entry of
// the VL arbitration table after reset: 4 KiB, one packet of the largest
// MTU per turn.
const DefaultVLArbWeight = 64

// resetVLArb returns a port's VL arbitration setup after reset, what its
// arbiter runs until the SM programs it: the low-priority table serves the
// port's data VLs round robin, one entry each of DefaultVLArbWeight; the
// high-priority table is empty and VLHighLimit 0.
func resetVLArb(info *mad.PortInfoFields) *VLArbConfig {
	c := VLArbConfig{HighCap: info.VLArbitrationHighCap, LowCap: info.VLArbitrationLowCap}
	for vl := range min(mad.NumDataVLs(info.VLCap), int(c.LowCap)) {
		c.Low[vl] = mad.VLArbEntry{VL: uint8(vl), Weight: DefaultVLArbWeight}
	}
	return sharedVLArbs.get(c)
}

// resetPKeys returns the P_Key table of size entries after reset: the
// default P_Key at index 0. The table is shared by every port of that
// size: a Set stores a copy.
func resetPKeys(size int) *[]mad.PKey {
	resetPKeyMu.Lock()
	defer resetPKeyMu.Unlock()
	if t, ok := resetPKeyTables[size]; ok {
		return t
	}
	keys := make([]mad.PKey, size)
	if size > 0 {
		keys[0] = mad.DefaultPKey
	}
	resetPKeyTables[size] = &keys
	return &keys
}

// resetSL2VL returns the SLtoVL row of an input port after reset for n
// output ports: every SL on VL0. The row is shared by every agent with n
// ports: a Set stores a copy.
func resetSL2VL(n int) *sl2vlRow {
	resetPKeyMu.Lock()
	defer resetPKeyMu.Unlock()
	if r, ok := resetSL2VLRows[n]; ok {
		return r
	}
	row := make(sl2vlRow, n)
	resetSL2VLRows[n] = &row
	return &row
}

// The shared reset tables, by size (at most 256 each: a size is a port
// count or a P_Key table size from a Config).
var (
	resetPKeyMu     sync.Mutex
	resetPKeyTables = map[int]*[]mad.PKey{}
	resetSL2VLRows  = map[int]*sl2vlRow{}
)

// interner hands out one shared pointer per distinct value, for the
// immutable values the tables hold: ports alike (most of a fabric) then
// share one. Up to max distinct values are kept; past that, get returns
// a fresh copy, so values no port would share cannot grow it without
// bound.
type interner[T comparable] struct {
	mu  sync.Mutex
	m   map[T]*T
	max int
}

func (in *interner[T]) get(v T) *T {
	in.mu.Lock()
	defer in.mu.Unlock()
	if p, ok := in.m[v]; ok {
		return p
	}
	p := &v
	if len(in.m) < in.max {
		if in.m == nil {
			in.m = map[T]*T{}
		}
		in.m[v] = p
	}
	return p
}

// sharedVLArbs and sharedConfigs intern the ports' VL arbitration setups
// and configurations.
var (
	sharedVLArbs  = interner[VLArbConfig]{max: 256}
	sharedConfigs = interner[PortConfig]{max: 4096}
)

// applyVLArbLocked queues handing port's VL arbitration setup to the data
// plane, when it runs arbitration (ArbitrationControl); mu held.
func (a *Agent) applyVLArbLocked(c *smpCtx, port uint8) {
	ac, ok := a.cfg.Ports.(ArbitrationControl)
	if !ok {
		return
	}
	cfg := a.VLArbitration(port)
	c.after = append(c.after, func() { ac.SetVLArbitration(port, cfg) })
}

// pkeyCap returns the P_Key table size of port.
func (a *Agent) pkeyCap(port uint8) int {
	switch {
	case !a.validPort(port):
		return 0
	case a.isSwitch() && port > 0:
		return int(a.cfg.PartitionEnforcementCap)
	}
	return int(a.cfg.PartitionCap)
}

// OutPort returns the output port of the linear forwarding table for the
// unicast dlid, and false when the switch does not route it: no entry
// (mad.LFTNoPort), a LID above LinearFDBTop or beyond LinearFDBCap, a
// multicast LID, or a CA. Port 0 means the switch itself.
func (a *Agent) OutPort(dlid uint16) (uint8, bool) {
	t := &a.tables
	if uint32(dlid) > t.lftTop.Load() {
		return 0, false
	}
	b := t.lftAt(int(dlid) / mad.LFTEntriesPerBlock)
	if b == nil {
		return 0, false
	}
	p := b[dlid%mad.LFTEntriesPerBlock]
	if p > t.nports {
		return 0, false
	}
	return p, true
}

// MulticastPorts returns the ports the multicast forwarding table sends
// mlid to, and false when mlid is not a multicast LID the table covers or
// its entry is empty.
func (a *Agent) MulticastPorts(mlid uint16) (PortSet, bool) {
	block, i, err := mad.MFTBlock(mlid)
	t := &a.tables
	if err != nil || int(block) >= len(t.mft) {
		return PortSet{}, false
	}
	b := t.mft[block].Load()
	if b == nil || b[i] == (PortSet{}) {
		return PortSet{}, false
	}
	return b[i], true
}

// VLFor returns the VL a packet on service level sl takes from input port
// in to output port out, by the SLtoVL table the SM programmed (a CA's
// table depends on out only). VL 15 means the SL is not mapped: data
// packets that get it are dropped. Ports out of range give 15.
func (a *Agent) VLFor(in, out, sl uint8) uint8 {
	t := &a.tables
	if !t.sw {
		in = 0
	}
	if int(in) >= len(t.sl2vl) || sl >= mad.NumSLs {
		return vl15
	}
	row := *t.sl2vl[in].Load()
	if int(out) >= len(row) {
		return vl15
	}
	return row[out][sl]
}

// VLArbitration returns the VL arbitration setup of output port.
func (a *Agent) VLArbitration(port uint8) VLArbConfig {
	t := &a.tables
	if int(port) >= len(t.vlarb) {
		return VLArbConfig{}
	}
	return *t.vlarb[port].Load()
}

// PKeys returns port's P_Key table. The slice is shared: do not modify it.
func (a *Agent) PKeys(port uint8) []mad.PKey {
	t := &a.tables
	if int(port) >= len(t.pkeys) {
		return nil
	}
	return *t.pkeys[port].Load()
}

// PKeyMatch reports whether a packet with P_Key k may pass port: some entry
// of the port's table has k's base, and k or the entry is a full member
// (IBA 10.9.3). Base 0 never matches.
func (a *Agent) PKeyMatch(port uint8, k mad.PKey) bool {
	if k.Base() == 0 {
		return false
	}
	for _, e := range a.PKeys(port) {
		if e.Base() == k.Base() && (e.IsFull() || k.IsFull()) {
			return true
		}
	}
	return false
}

// PartitionMember reports whether a packet with P_Key k may pass a switch
// external port that enforces partitions (IBA 10.9.4): some entry of the
// port's table has k's base. Membership types are not compared, unlike at
// a CA: the SM gives the switch port facing a CA that CA's own keys
// (OpenSM's pkey manager writes a limited entry where the CA is only a
// limited member), so a CA-style match would stop every packet a limited
// member sends, even to full members. Traffic between two limited members
// passes the switch and is the receiving CA's to drop. Base 0 never
// matches.
func (a *Agent) PartitionMember(port uint8, k mad.PKey) bool {
	if k.Base() == 0 {
		return false
	}
	for _, e := range a.PKeys(port) {
		if e.Base() == k.Base() {
			return true
		}
	}
	return false
}

// PortConfig returns what the SM last configured on port (LID, MTU, VLs,
// ...), the values PortControl.Configure was last given.
func (a *Agent) PortConfig(port uint8) PortConfig {
	t := &a.tables
	if int(port) >= len(t.config) {
		return PortConfig{}
	}
	return *t.config[port].Load()
}

// HasLID reports whether dlid addresses the SMA reached through port:
// switch port 0's LID range for a switch, port's own for a CA.
func (a *Agent) HasLID(port uint8, dlid uint16) bool {
	c := a.PortConfig(a.smaPort(port))
	return lidInRange(c.LID, c.LMC, dlid)
}

func lidInRange(base uint16, lmc uint8, lid uint16) bool {
	if base == 0 || lid == 0 {
		return false
	}
	return uint32(lid) >= uint32(base) && uint32(lid) < uint32(base)+1<<(lmc&7)
}
