package wire_test

import (
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/internal/testsupport/tsharktest"
	"ibfab/wire"
)

var cnpCases = []struct {
	name string
	f    wire.CNPFields
}{
	{"local", wire.CNPFields{VL: 2, SL: 5, DLID: 0x0011, SLID: 0x0022, PKey: 0xffff, DestQP: 2}},
	{"local, top bits", wire.CNPFields{VL: 7, SL: 15, DLID: 0xbfff, SLID: 0x0bad, PKey: 0x8001, DestQP: 0xfedcba}},
	{"global", wire.CNPFields{VL: 1, SL: 1, DLID: 3, SLID: 4, PKey: 0x7fff, DestQP: 0x123,
		GRH: &wire.GRHFields{TClass: 3, FlowLabel: 0x12345, HopLmt: 0xff, SGID: gid(0x0002c90300000001), DGID: gid(0x0002c90300000002)}}},
}

// TestCNPLayout: AppendCNP builds LRH [GRH] BTH ICRC VCRC with BECN set,
// PSN and PadCnt 0, a PktLen of the headers and ICRC only, and valid
// CRCs; ParseCNP reads back what was built.
func TestCNPLayout(t *testing.T) {
	for _, tt := range cnpCases {
		t.Run(tt.name, func(t *testing.T) {
			pkt := wire.AppendCNP(nil, &tt.f)
			global := tt.f.GRH != nil
			require.Len(t, pkt, wire.CNPPacketSize(global))
			require.NoError(t, wire.Verify(pkt))
			hdr := wire.LRHSize
			if global {
				hdr += wire.GRHSize
			}
			assert.Equal(t, uint16((hdr+wire.BTHSize+wire.ICRCSize)/4), wire.LRH(pkt).PktLen())
			b := wire.BTH(pkt[hdr:]).Fields()
			assert.Equal(t, wire.BTHFields{OpCode: wire.CNP, PKey: tt.f.PKey, DestQP: tt.f.DestQP, BECN: true}, b)
			c, err := wire.ParseCNP(pkt)
			require.NoError(t, err)
			assert.Equal(t, wire.CNPPacket{VL: tt.f.VL, SL: tt.f.SL, DLID: tt.f.DLID, SLID: tt.f.SLID, Global: global,
				PKey: tt.f.PKey, DestQP: tt.f.DestQP, BECN: true}, c)
			// A UD parser says it is not UD, not that it is short.
			_, err = wire.ParseUD(pkt)
			assert.ErrorIs(t, err, wire.ErrNotUD)
		})
	}
}

func TestParseCNPRejects(t *testing.T) {
	cnp := wire.AppendCNP(nil, &cnpCases[0].f)
	ud := wire.AppendUD(nil, &wire.UDFields{DLID: 1, SLID: 2, PKey: 0xffff, DestQP: 3, Payload: make([]byte, 8)})
	raw := append([]byte(nil), cnp...)
	wire.LRH(raw).SetLNH(wire.LNHRaw)
	longLen := append([]byte(nil), cnp...)
	wire.LRH(longLen).SetPktLen(wire.LRH(longLen).PktLen() + 1)
	shortLen := append([]byte(nil), cnp...)
	wire.LRH(shortLen).SetPktLen(4)
	tests := []struct {
		name string
		pkt  []byte
		want error
	}{
		{"empty", nil, wire.ErrShort},
		{"short LRH", cnp[:5], wire.ErrShort},
		{"PktLen beyond data", longLen, wire.ErrPktLen},
		{"PktLen below the BTH", shortLen, wire.ErrPktLen},
		{"UD", ud, wire.ErrNotCNP},
		{"raw", raw, wire.ErrNotCNP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := wire.ParseCNP(tt.pkt)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tt.want), "ParseCNP = %v, want %v", err, tt.want)
		})
	}
}

// TestTsharkCNP: Wireshark's InfiniBand dissector decodes our CNPs without
// complaint, with every header field where we put it (BECN in the BTH's
// reserved byte). tshark 4.0 has no CNP of its own: it shows what follows
// the BTH of opcode 0x80 as vendor data, which must be the ICRC and VCRC
// and nothing else (no DETH, no payload).
func TestTsharkCNP(t *testing.T) {
	var recs []capture.Record
	var pkts [][]byte
	for _, tt := range cnpCases {
		pkt := wire.AppendCNP(nil, &tt.f)
		pkts = append(pkts, pkt)
		recs = append(recs, capture.Record{Type: capture.TypeInfiniBand, Data: pkt})
	}
	got := tsharktest.Decode(t, recs)
	require.Len(t, got, len(cnpCases))
	for i, tt := range cnpCases {
		t.Run(tt.name, func(t *testing.T) {
			p, f := got[i], tt.f
			assert.Empty(t, p.Problems())
			lnh := uint64(wire.LNHLocal)
			if f.GRH != nil {
				lnh = uint64(wire.LNHGlobal)
			}
			ws := []want{
				{"infiniband.lrh.vl", uint64(f.VL)}, {"infiniband.lrh.sl", uint64(f.SL)},
				{"infiniband.lrh.lnh", lnh}, {"infiniband.lrh.dlid", uint64(f.DLID)},
				{"infiniband.lrh.pktlen", uint64(wire.LRH(pkts[i]).PktLen())}, {"infiniband.lrh.slid", uint64(f.SLID)},
				{"infiniband.bth.opcode", uint64(wire.CNP)}, {"infiniband.bth.padcnt", 0},
				{"infiniband.bth.p_key", uint64(f.PKey)}, {"infiniband.bth.destqp", uint64(f.DestQP)},
				{"infiniband.bth.psn", 0},
			}
			checkFields(t, p, ws)
			resv, _ := p.Get("infiniband.reserved") // resv8a as hex bytes
			assert.Equal(t, "40", resv, "BTH resv8a: BECN only")
			_, deth := p.Get("infiniband.deth.srcqp")
			assert.False(t, deth, "tshark found a DETH in a CNP")
			_, data := p.Get("data.data")
			assert.False(t, data, "tshark found a payload in a CNP")
			trailer := pkts[i][len(pkts[i])-wire.ICRCSize-wire.VCRCSize:]
			assert.Contains(t, p.All("infiniband.vendor"), colonHex(trailer), "after the BTH: the CRCs only")
		})
	}
}

// FuzzParseCNP feeds arbitrary bytes to ParseCNP: it must never panic, it
// accepts only what has the CNP opcode inside PktLen's bounds, and a CNP
// rebuilt from what it read verifies and parses the same.
func FuzzParseCNP(f *testing.F) {
	for _, tt := range cnpCases {
		f.Add(wire.AppendCNP(nil, &tt.f))
	}
	f.Add(wire.AppendUD(nil, &wire.UDFields{DLID: 3, SLID: 1, PKey: 0x8001, DestQP: 5, Payload: []byte{1, 2, 3}}))
	f.Add(wire.AppendCNP(nil, &cnpCases[0].f)[:12])
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := wire.ParseCNP(b)
		if err != nil {
			return
		}
		end := int(wire.LRH(b).PktLen()) * 4
		if end > len(b) {
			t.Fatalf("ParseCNP(%x) accepted PktLen %d words beyond %d bytes", b, end/4, len(b))
		}
		f := wire.CNPFields{VL: c.VL, SL: c.SL, DLID: c.DLID, SLID: c.SLID, PKey: c.PKey, DestQP: c.DestQP}
		if c.Global {
			f.GRH = &wire.GRHFields{}
		}
		pkt := wire.AppendCNP(nil, &f)
		if err := wire.Verify(pkt); err != nil {
			t.Fatalf("rebuilt CNP of %x does not verify: %v", b, err)
		}
		c2, err := wire.ParseCNP(pkt)
		c.BECN = true // AppendCNP always sets it
		if err != nil || c2 != c {
			t.Fatalf("rebuilt CNP parses as %+v, %v; want %+v", c2, err, c)
		}
	})
}

// colonHex formats b as tshark shows bytes: "01:c8:73".
func colonHex(b []byte) string {
	h := hex.EncodeToString(b)
	parts := make([]string, 0, len(b))
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ":")
}

// TestPacketBTH: the BTH follows the LRH, or the GRH when the LNH says
// global; a raw packet or one cut short has none.
func TestPacketBTH(t *testing.T) {
	local := wire.AppendCNP(nil, &wire.CNPFields{DLID: 1, SLID: 2, DestQP: 7})
	global := wire.AppendCNP(nil, &wire.CNPFields{DLID: 1, SLID: 2, DestQP: 7, GRH: &wire.GRHFields{}})
	raw := slices.Clone(local)
	wire.LRH(raw).SetLNH(wire.LNHRaw)
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"local", local, true},
		{"global", global, true},
		{"raw", raw, false},
		{"short", local[:wire.LRHSize+wire.BTHSize-1], false},
		{"no LRH", local[:3], false},
	} {
		bth, ok := wire.PacketBTH(tc.b)
		require.Equal(t, tc.ok, ok, tc.name)
		if ok {
			assert.Equal(t, wire.CNP, bth.OpCode(), tc.name)
			assert.EqualValues(t, 7, bth.DestQP(), tc.name)
		}
	}
}
