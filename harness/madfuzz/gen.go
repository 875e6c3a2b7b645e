package madfuzz

import (
	"encoding/binary"
	"math/rand/v2"

	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Shape is the kind of MAD a generator made.
type Shape uint8

//go:generate go tool stringer -type=Shape -linecomment

// The shapes.
const (
	ShapeSMP      Shape = iota + 1 // smp
	ShapeBadRoute                  // bad-route
	ShapeLIDSMP                    // lid-smp
	ShapeGMP                       // gmp
	ShapeVersion                   // version
	ShapeRMPP                      // rmpp
	ShapeMutation                  // mutation
)

// knownAttrs are attributes the fabric's classes serve, picked more often
// than random IDs so that the agents' decoders get exercised.
var knownAttrs = []mad.AttrID{
	mad.AttrNodeInfo, mad.AttrNodeDescription, mad.AttrPortInfo, mad.AttrSwitchInfo, mad.AttrGUIDInfo,
	mad.AttrPKeyTable, mad.AttrSLtoVLMapping, mad.AttrVLArbitration, mad.AttrLinearFwdTbl,
	mad.AttrRandomFwdTbl, mad.AttrMulticastFwdTbl, mad.AttrSMInfo, mad.AttrVendorDiag, mad.AttrLedInfo,
	mad.AttrNotice, mad.AttrClassPortInfo, mad.AttrPortCounters, mad.AttrPortCountersExtended,
	mad.AttrPortSamplesControl, mad.AttrPortVLXmitWaitCounters, mad.AttrCongestionInfo,
	mad.AttrCongestionKeyInfo, mad.AttrCongestionLog, mad.AttrSwitchCongestionSetting,
	mad.AttrSwitchPortCongestionSetting, mad.AttrCACongestionSetting, mad.AttrCongestionControlTable,
	mad.AttrARInfo, mad.AttrARGroupTable, mad.AttrARLIDTable, mad.AttrSAPathRecord, mad.AttrSANodeRecord,
	mad.AttrSAMCMemberRecord, mad.AttrSAServiceRecord, mad.AttrSAInformInfoRecord, mad.AttrSAMultiPathRecord,
}

// gmpClasses are the GMP classes sent: those the fabric serves, then some
// it does not (BM, DevMgt, CM, SNMP, a vendor and an unassigned one).
var gmpClasses = []mad.MgmtClass{
	mad.ClassPerfMgt, mad.ClassCongestion, mad.ClassVendorAR, mad.ClassSubnAdm,
	mad.ClassBM, mad.ClassDevMgt, mad.ClassCM, mad.ClassSNMP, 0x09, 0x30, 0x55,
}

var methods = []mad.Method{mad.MethodGet, mad.MethodSet, mad.MethodSend, mad.MethodTrap, mad.MethodReport,
	mad.MethodTrapRepress, mad.MethodGetTable, mad.MethodDelete, mad.MethodGetResp, 0x14, 0x15}

// target is a node a generator aims at.
type target struct {
	node int
	path []uint8 // directed route from the fuzzer's port; path[0] unused
	lid  uint16  // 0: not known, LID-routed shapes go by directed route
}

// generator makes fuzz MADs from a seeded source.
type generator struct {
	rng     *rand.Rand
	topo    *topologies.Topology
	targets []target
	// smLID is the master SM's LID (0: none known): the SA lives there,
	// so SubnAdm MADs go to it rather than to a random target.
	smLID uint16
	sent  [][]byte // a ring of recent MADs to mutate
	next  int
	// corpus are real MADs (a capture's): a mutation starts from one of
	// them half the time, from one sent before otherwise.
	corpus [][]byte
}

const mutationPool = 64

func newGenerator(seed uint64, t *topologies.Topology, targets []target, smLID uint16) *generator {
	return &generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), topo: t, targets: targets, smLID: smLID}
}

// dest is where a LID-routed GMP m aimed at target t goes: the SM's LID
// for the SA's class when it is known, else t's.
func (g *generator) dest(m []byte, t target) uint16 {
	if g.smLID != 0 && mad.MAD(m).MgmtClass() == mad.ClassSubnAdm {
		return g.smLID
	}
	return t.lid
}

func (g *generator) attr() mad.AttrID {
	if g.rng.IntN(4) == 0 {
		return mad.AttrID(g.rng.Uint32())
	}
	return knownAttrs[g.rng.IntN(len(knownAttrs))]
}

func (g *generator) method() mad.Method {
	if g.rng.IntN(8) == 0 {
		return mad.Method(g.rng.Uint32())
	}
	return methods[g.rng.IntN(len(methods))]
}

// modifier is an attribute modifier: small (a port or block), a value
// with high bits set (block numbers out of range, the extended-speeds
// bit), or random.
func (g *generator) modifier() uint32 {
	switch g.rng.IntN(4) {
	case 0:
		return uint32(g.rng.IntN(64))
	case 1:
		return 0x8000_0000 | uint32(g.rng.IntN(0x10000))
	case 2:
		return uint32(g.rng.IntN(0x10000))
	}
	return g.rng.Uint32()
}

func (g *generator) key() uint64 {
	if g.rng.IntN(2) == 0 {
		return 0
	}
	return g.rng.Uint64()
}

func (g *generator) payload(b []byte) {
	switch g.rng.IntN(3) {
	case 0: // zeros
	case 1:
		for i := range b {
			b[i] = byte(g.rng.Uint32())
		}
	default:
		for i := range b {
			b[i] = 0xff
		}
	}
}

// make returns the next MAD, its shape and where it goes: by directed
// route (lid 0xffff), or to the target's LID.
func (g *generator) make(tid uint64) ([]byte, Shape, uint16) {
	t := g.targets[g.rng.IntN(len(g.targets))]
	shape := Shape(1 + g.rng.IntN(int(ShapeMutation)))
	if (shape == ShapeLIDSMP || shape == ShapeGMP) && t.lid == 0 {
		shape = ShapeSMP
	}
	if shape == ShapeMutation && len(g.sent) == 0 && len(g.corpus) == 0 {
		shape = ShapeSMP
	}
	var m []byte
	lid := uint16(mad.PermissiveLID)
	switch shape {
	case ShapeSMP:
		m = g.smp(tid, t.path)
	case ShapeBadRoute:
		m = g.badRoute(tid, t.path)
	case ShapeLIDSMP:
		m, lid = g.lidSMP(tid), t.lid
	case ShapeGMP:
		m = g.gmp(tid, g.gmpClass())
		lid = g.dest(m, t)
	case ShapeVersion:
		m = g.smp(tid, t.path)
		if g.rng.IntN(2) == 0 {
			mad.MAD(m).SetBaseVersion(uint8(g.rng.Uint32()))
		} else {
			mad.MAD(m).SetClassVersion(uint8(g.rng.Uint32()))
		}
	case ShapeRMPP:
		m = g.rmpp(tid)
		if lid = g.dest(m, t); lid == 0 {
			m, lid, shape = g.smp(tid, t.path), mad.PermissiveLID, ShapeSMP
		}
	case ShapeMutation:
		m, lid = g.mutate(tid)
	}
	g.remember(m)
	return m, shape, lid
}

func (g *generator) gmpClass() mad.MgmtClass { return gmpClasses[g.rng.IntN(len(gmpClasses))] }

func (g *generator) smp(tid uint64, path []uint8) []byte {
	data := make([]byte, mad.SMPDataSize)
	g.payload(data)
	m, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: g.method(), TransactionID: tid, AttrID: g.attr(),
		AttrModifier: g.modifier(), MKey: g.key(), Path: path, Data: data})
	if err != nil { // a method the builder refuses: build a Get, then set the method
		m, _ = mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: tid, AttrID: g.attr(), Path: path})
		mad.MAD(m).SetMethod(g.method())
	}
	return m
}

// badRoute breaks a directed route one way.
func (g *generator) badRoute(tid uint64, path []uint8) []byte {
	m := g.smp(tid, path)
	dr := mad.DRSMP(m)
	switch g.rng.IntN(6) {
	case 0:
		dr.SetHopCount(uint8(64 + g.rng.IntN(192)))
	case 1:
		dr.SetHopPointer(dr.HopCount() + 1 + uint8(g.rng.IntN(8)))
	case 2:
		dr.SetDirection(true)
	case 3: // a loop: out and back over the same link, many times
		n := 2 * (1 + g.rng.IntN(31))
		p := dr.InitialPath()
		for i := 1; i <= n; i++ {
			p[i] = byte(1 + g.rng.IntN(2))
		}
		dr.SetHopCount(uint8(n))
	case 4: // a port no switch has
		if h := int(dr.HopCount()); h > 0 {
			dr.InitialPath()[1+g.rng.IntN(h)] = byte(200 + g.rng.IntN(56))
		} else {
			dr.InitialPath()[1] = 0xff
			dr.SetHopCount(1)
		}
	default: // LID-routed parts with random LIDs
		dr.SetDrSLID(uint16(g.rng.Uint32()))
		dr.SetDrDLID(uint16(g.rng.Uint32()))
	}
	return m
}

func (g *generator) lidSMP(tid uint64) []byte {
	f := mad.SMPFields{Method: g.method(), TransactionID: tid, AttrID: g.attr(), AttrModifier: g.modifier(), MKey: g.key()}
	g.payload(f.Data[:])
	return mad.AppendSMP(nil, &f)
}

func (g *generator) gmp(tid uint64, class mad.MgmtClass) []byte {
	m := make([]byte, mad.MADSize)
	h := mad.MAD(m)
	version := uint8(1)
	switch class {
	case mad.ClassSubnAdm, mad.ClassCongestion:
		version = 2
	}
	h.Encode(&mad.MADFields{BaseVersion: mad.BaseVersion, MgmtClass: class, ClassVersion: version,
		Method: g.method(), TransactionID: tid, AttrID: g.attr(), AttrModifier: g.modifier()})
	g.payload(m[mad.MADHeaderSize:])
	// Keys where the classes keep them: CC_Key and SA's SM_Key at 24,
	// vendor OUI at 37; random or zero.
	binary.BigEndian.PutUint64(m[24:], g.key())
	return m
}

// rmpp is an SA or CC GMP with an RMPP header of random type, flags,
// status, segment number (0 among them) and payload length. Version 1 and
// status Normal come more often than chance would give them, as a
// receiver checks those first: a header that fails them never reaches
// the segment logic behind.
func (g *generator) rmpp(tid uint64) []byte {
	class := mad.ClassSubnAdm
	if g.rng.IntN(3) == 0 {
		class = mad.MgmtClass(gmpClasses[g.rng.IntN(len(gmpClasses))])
	}
	m := g.gmp(tid, class)
	r := mad.RMPP(m)
	r.SetVersion(uint8(g.often(mad.RMPPVersion1, 3)))
	r.SetType(mad.RMPPType(g.rng.IntN(6)))
	r.SetFlags(mad.RMPPFlags(g.rng.Uint32()) | mad.RMPPFlagActive)
	r.SetStatus(mad.RMPPStatus(g.often(uint32(mad.RMPPStatusNormal), 0x100)))
	seg := []uint32{0, 1, 2, g.rng.Uint32()}[g.rng.IntN(4)]
	r.SetSegmentNumber(seg)
	binary.BigEndian.PutUint32(m[32:], []uint32{0, 1, 220, 221, g.rng.Uint32()}[g.rng.IntN(5)])
	return m
}

// often returns v half the time, else a value below n.
func (g *generator) often(v uint32, n int) uint32 {
	if g.rng.IntN(2) == 0 {
		return v
	}
	return uint32(g.rng.IntN(n))
}

// mutate changes a copy of a MAD sent before or of the corpus: some bytes
// flipped, set to an edge value, or copied from elsewhere in it; it goes
// to the permissive LID (the attach point routes a directed-route SMP as
// its path says; a LID-routed one goes nowhere, dropped and counted).
func (g *generator) mutate(tid uint64) ([]byte, uint16) {
	from := g.sent
	if len(g.corpus) > 0 && (len(from) == 0 || g.rng.IntN(2) == 0) {
		from = g.corpus
	}
	m := append([]byte(nil), from[g.rng.IntN(len(from))]...)
	for range 1 + g.rng.IntN(8) {
		i := g.rng.IntN(len(m))
		switch g.rng.IntN(3) {
		case 0:
			m[i] ^= 1 << g.rng.IntN(8)
		case 1:
			m[i] = []byte{0, 1, 0x7f, 0x80, 0xff}[g.rng.IntN(5)]
		default:
			m[i] = m[g.rng.IntN(len(m))]
		}
	}
	mad.MAD(m).SetTransactionID(tid)
	return m, mad.PermissiveLID
}

func (g *generator) remember(m []byte) {
	c := append([]byte(nil), m...)
	if len(g.sent) < mutationPool {
		g.sent = append(g.sent, c)
		return
	}
	g.sent[g.next] = c
	g.next = (g.next + 1) % mutationPool
}
