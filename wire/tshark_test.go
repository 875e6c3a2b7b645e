package wire_test

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/internal/testsupport/tsharktest"
	"ibfab/wire"
)

// want is one expected tshark field value.
type want struct {
	field string
	value uint64
}

// checkFields asserts that tshark shows every field in ws with its value.
func checkFields(t *testing.T, p tsharktest.Packet, ws []want) {
	t.Helper()
	for _, w := range ws {
		assert.Equal(t, w.value, p.Uint(t, w.field), "tshark field %s", w.field)
	}
}

func boolVal(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// trailerWants returns what tshark must show for the ICRC and VCRC of pkt:
// the last six bytes, which tshark reads as big-endian numbers. tshark does
// not validate them; this proves it found them where we put them.
func trailerWants(pkt []byte) []want {
	n := len(pkt)
	return []want{
		{"infiniband.invariant.crc", uint64(binary.BigEndian.Uint32(pkt[n-6:]))},
		{"infiniband.variant.crc", uint64(binary.BigEndian.Uint16(pkt[n-2:]))},
	}
}

func TestTsharkUD(t *testing.T) {
	tests := []struct {
		name    string
		f       wire.UDFields
		madWant []want // MAD header fields tshark must show
		// crcOptional: tshark 4.0 stops before the CRCs after dissecting a
		// PerfMgt attribute, so they are checked only when it shows them.
		crcOptional bool
	}{
		{
			name: "QP0 directed-route SMP",
			f: wire.UDFields{VL: 15, SL: 0, DLID: 0xffff, SLID: 0xffff, PKey: 0xffff,
				DestQP: 0, PSN: 0x123456, QKey: 0, SrcQP: 0, Payload: nodeInfoSMP(0x81, 0x1122334455667788)},
			madWant: []want{{"infiniband.mad.mgmtclass", 0x81}, {"infiniband.mad.method", 1},
				{"infiniband.mad.attributeid", 0x11}, {"infiniband.mad.transactionid", 0x1122334455667788}},
		},
		{
			name: "QP0 LID-routed SMP",
			f: wire.UDFields{VL: 15, SL: 3, DLID: 0x0004, SLID: 0x0001, PKey: 0xffff,
				DestQP: 0, PSN: 1, Payload: nodeInfoSMP(0x01, 42)},
			madWant: []want{{"infiniband.mad.mgmtclass", 0x01}, {"infiniband.mad.attributeid", 0x11}},
		},
		{
			name: "QP1 PerfMgt GMP",
			f: wire.UDFields{VL: 0, SL: 5, DLID: 0x0010, SLID: 0x0002, PKey: 0x7fff,
				DestQP: 1, PSN: 0xabcdef, QKey: wire.QP1QKey, SrcQP: 1, Payload: portCountersGMP(7)},
			madWant:     []want{{"infiniband.mad.mgmtclass", 0x04}, {"infiniband.mad.attributeid", 0x12}},
			crcOptional: true,
		},
		{
			name: "data QP, unaligned payload",
			f: wire.UDFields{VL: 7, SL: 15, DLID: 0xc001, SLID: 0x0bad, PKey: 0x8001,
				DestQP: 0xfedcba, PSN: 0xffffff, QKey: 0xdeadbeef, SrcQP: 0x00abcd,
				Payload: []byte("seven b")},
		},
		{
			name: "global QP1",
			f: wire.UDFields{VL: 2, SL: 9, DLID: 0x0020, SLID: 0x0021, PKey: 0xffff,
				GRH: &wire.GRHFields{TClass: 0xa5, FlowLabel: 0xbcdef, HopLmt: 0x40,
					SGID: gid(0x0002c90300001234), DGID: gid(0x0002c9030000abcd)},
				DestQP: 1, PSN: 99, QKey: wire.QP1QKey, SrcQP: 1, Payload: portCountersGMP(8)},
			madWant:     []want{{"infiniband.mad.mgmtclass", 0x04}},
			crcOptional: true,
		},
	}
	var recs []capture.Record
	var pkts [][]byte
	for _, tt := range tests {
		pkt := wire.AppendUD(nil, &tt.f)
		require.NoError(t, wire.Verify(pkt), "Verify(AppendUD(%s))", tt.name)
		pkts = append(pkts, pkt)
		recs = append(recs, capture.Record{Type: capture.TypeInfiniBand, Data: pkt})
	}
	got := tsharktest.Decode(t, recs)
	require.Len(t, got, len(tests))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, pkt, f := got[i], pkts[i], tt.f
			assert.Empty(t, p.Problems())
			pad := -len(f.Payload) & 3
			lnh := uint64(wire.LNHLocal)
			hdr := wire.LRHSize + wire.BTHSize + wire.DETHSize
			if f.GRH != nil {
				lnh = uint64(wire.LNHGlobal)
				hdr += wire.GRHSize
			}
			// PktLen from the spec's definition, independent of Seal:
			// LRH through ICRC, in words.
			pktLen := uint64(hdr+len(f.Payload)+pad+wire.ICRCSize) / 4
			require.Equal(t, len(pkt), int(pktLen)*4+wire.VCRCSize)
			ws := []want{
				{"infiniband.lrh.vl", uint64(f.VL)}, {"infiniband.lrh.lver", 0},
				{"infiniband.lrh.sl", uint64(f.SL)}, {"infiniband.lrh.lnh", lnh},
				{"infiniband.lrh.dlid", uint64(f.DLID)}, {"infiniband.lrh.pktlen", pktLen},
				{"infiniband.lrh.slid", uint64(f.SLID)},
				{"infiniband.bth.opcode", 0x64}, {"infiniband.bth.se", 0}, {"infiniband.bth.m", 0},
				{"infiniband.bth.padcnt", uint64(pad)}, {"infiniband.bth.tver", 0},
				{"infiniband.bth.p_key", uint64(f.PKey)}, {"infiniband.bth.destqp", uint64(f.DestQP)},
				{"infiniband.bth.a", 0}, {"infiniband.bth.psn", uint64(f.PSN)},
				{"infiniband.deth.q_key", uint64(f.QKey)}, {"infiniband.deth.srcqp", uint64(f.SrcQP)},
			}
			if g := f.GRH; g != nil {
				ws = append(ws,
					want{"infiniband.grh.ipver", wire.GRHIPVer}, want{"infiniband.grh.tclass", uint64(g.TClass)},
					want{"infiniband.grh.flowlabel", uint64(g.FlowLabel)},
					want{"infiniband.grh.paylen", uint64(wire.BTHSize + wire.DETHSize + len(f.Payload) + pad + wire.ICRCSize)},
					want{"infiniband.grh.nxthdr", wire.NxtHdrBTH}, want{"infiniband.grh.hoplmt", uint64(g.HopLmt)})
				checkGID(t, p, "infiniband.grh.sgid", g.SGID)
				checkGID(t, p, "infiniband.grh.dgid", g.DGID)
			}
			if _, shown := p.Get("infiniband.invariant.crc"); shown || !tt.crcOptional {
				ws = append(ws, trailerWants(pkt)...)
			}
			ws = append(ws, tt.madWant...)
			checkFields(t, p, ws)
		})
	}
}

// checkGID asserts that tshark shows the IPv6-formatted GID g in field.
func checkGID(t *testing.T, p tsharktest.Packet, field string, g [wire.GIDSize]byte) {
	t.Helper()
	s, ok := p.Get(field)
	require.True(t, ok, "tshark shows no %s", field)
	a, err := netip.ParseAddr(s)
	require.NoError(t, err, "tshark %s = %q", field, s)
	assert.Equal(t, g, a.As16(), "tshark %s", field)
}

// goldenWants returns the header fields tshark must show for g.
func goldenWants(g golden) []want {
	if g.link {
		return []want{
			{"infiniband_link.op", uint64(g.fc.Op)}, {"infiniband_link.fctbs", uint64(g.fc.FCTBS)},
			{"infiniband_link.vl", uint64(g.fc.VL)}, {"infiniband_link.fccl", uint64(g.fc.FCCL)},
			{"infiniband_link.lpcrc", uint64(binary.BigEndian.Uint16(g.pkt[4:]))},
		}
	}
	l := g.lrh
	ws := []want{
		{"infiniband.lrh.vl", uint64(l.VL)}, {"infiniband.lrh.lver", uint64(l.LVer)},
		{"infiniband.lrh.sl", uint64(l.SL)}, {"infiniband.lrh.lnh", uint64(l.LNH)},
		{"infiniband.lrh.dlid", uint64(l.DLID)}, {"infiniband.lrh.pktlen", uint64(l.PktLen)},
		{"infiniband.lrh.slid", uint64(l.SLID)},
	}
	if r := g.grh; r != nil {
		ws = append(ws,
			want{"infiniband.grh.ipver", uint64(r.IPVer)}, want{"infiniband.grh.tclass", uint64(r.TClass)},
			want{"infiniband.grh.flowlabel", uint64(r.FlowLabel)}, want{"infiniband.grh.paylen", uint64(r.PayLen)},
			want{"infiniband.grh.nxthdr", uint64(r.NxtHdr)}, want{"infiniband.grh.hoplmt", uint64(r.HopLmt)})
	}
	if b := g.bth; b != nil {
		ws = append(ws,
			want{"infiniband.bth.opcode", uint64(b.OpCode)}, want{"infiniband.bth.se", boolVal(b.SE)},
			want{"infiniband.bth.m", boolVal(b.M)}, want{"infiniband.bth.padcnt", uint64(b.PadCnt)},
			want{"infiniband.bth.tver", uint64(b.TVer)}, want{"infiniband.bth.p_key", uint64(b.PKey)},
			want{"infiniband.bth.destqp", uint64(b.DestQP)}, want{"infiniband.bth.a", boolVal(b.A)},
			want{"infiniband.bth.psn", uint64(b.PSN)})
	}
	if d := g.deth; d != nil {
		ws = append(ws, want{"infiniband.deth.q_key", uint64(d.QKey)}, want{"infiniband.deth.srcqp", uint64(d.SrcQP)})
	}
	return ws
}

func TestTsharkGolden(t *testing.T) {
	var recs []capture.Record
	for _, g := range goldens {
		r := capture.Record{Type: capture.TypeInfiniBand, Data: g.pkt}
		if g.link {
			r.Type = capture.TypeInfiniBandLink
		}
		recs = append(recs, r)
	}
	got := tsharktest.Decode(t, recs)
	require.Len(t, got, len(goldens))
	for i, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			p := got[i]
			assert.Empty(t, p.Problems())
			ws := goldenWants(g)
			switch {
			case g.link:
			case g.lrh.LNH == wire.LNHRaw:
				ws = append(ws, want{"infiniband.variant.crc", uint64(binary.BigEndian.Uint16(g.pkt[len(g.pkt)-2:]))})
			default:
				// PerfMgt MADs stop tshark 4.0 before the CRCs (see TestTsharkUD).
				if _, shown := p.Get("infiniband.invariant.crc"); shown || !g.mad {
					ws = append(ws, trailerWants(g.pkt)...)
				}
			}
			checkFields(t, p, ws)
			if g.grh != nil {
				checkGID(t, p, "infiniband.grh.sgid", g.grh.SGID)
				checkGID(t, p, "infiniband.grh.dgid", g.grh.DGID)
			}
			if g.bth != nil && !g.mad {
				// tshark shows a non-MAD payload as data, pad included.
				s, ok := p.Get("data.data")
				require.True(t, ok, "tshark shows no payload")
				padded := append(clone(g.payload), make([]byte, g.bth.PadCnt)...)
				assert.Equal(t, hex.EncodeToString(padded), strings.ReplaceAll(s, ":", ""))
			}
			if g.mad {
				assert.Equal(t, uint64(g.payload[1]), p.Uint(t, "infiniband.mad.mgmtclass"))
				assert.Equal(t, uint64(binary.BigEndian.Uint16(g.payload[16:])), p.Uint(t, "infiniband.mad.attributeid"))
			}
		})
	}
}

// TestTsharkFlowControlAnyFCTBS covers every value of FCTBS's low two bits:
// Wireshark reads them as an LRH's LNH, and the capture writer's padding of
// link records must keep every one of them from decoding as malformed.
func TestTsharkFlowControlAnyFCTBS(t *testing.T) {
	var recs []capture.Record
	var fcs []wire.FlowControlFields
	for low := uint16(0); low < 4; low++ {
		f := wire.FlowControlFields{Op: wire.FlowControlOp(low & 1), FCTBS: 0x5a4 | low, VL: uint8(low * 5), FCCL: 0x7f0 | low<<2}
		fcs = append(fcs, f)
		recs = append(recs, capture.Record{Type: capture.TypeInfiniBandLink, Data: wire.AppendFlowControl(nil, &f)})
	}
	got := tsharktest.Decode(t, recs)
	require.Len(t, got, len(recs))
	for i, f := range fcs {
		p := got[i]
		assert.Empty(t, p.Problems(), "FCTBS %#x", f.FCTBS)
		checkFields(t, p, []want{
			{"infiniband_link.op", uint64(f.Op)}, {"infiniband_link.fctbs", uint64(f.FCTBS)},
			{"infiniband_link.vl", uint64(f.VL)}, {"infiniband_link.fccl", uint64(f.FCCL)},
			{"infiniband_link.lpcrc", uint64(binary.BigEndian.Uint16(recs[i].Data[4:]))},
		})
	}
}
