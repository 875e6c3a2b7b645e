package wire_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire"
)

func TestParseUD(t *testing.T) {
	f := &wire.UDFields{VL: 3, SL: 5, DLID: 9, SLID: 4, PKey: 0x8001, DestQP: 0x1234, PSN: 7,
		QKey: 0x11223344, SrcQP: 0x55, Payload: []byte{1, 2, 3, 4, 5}}
	pkt := wire.AppendUD(nil, f)
	padded := append(append([]byte(nil), pkt...), 0, 0, 0, 0) // Ethernet padding
	g := *f
	g.GRH = &wire.GRHFields{}
	tests := []struct {
		name   string
		pkt    []byte
		global bool
	}{
		{"local", pkt, false},
		{"padded", padded, false},
		{"global", wire.AppendUD(nil, &g), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := wire.ParseUD(tt.pkt)
			require.NoError(t, err)
			assert.Equal(t, wire.UDPacket{VL: 3, SL: 5, DLID: 9, SLID: 4, Global: tt.global,
				OpCode: wire.UDSendOnly, PKey: 0x8001, DestQP: 0x1234, QKey: 0x11223344, SrcQP: 0x55,
				Payload: []byte{1, 2, 3, 4, 5}}, u)
		})
	}
}

func TestParseUDRejects(t *testing.T) {
	ud := wire.AppendUD(nil, &wire.UDFields{DLID: 1, SLID: 2, PKey: 0xffff, DestQP: 3, Payload: make([]byte, 8)})
	rc := append([]byte(nil), ud...)
	wire.BTH(rc[wire.LRHSize:]).SetOpCode(wire.RCSendOnly)
	raw := append([]byte(nil), ud...)
	wire.LRH(raw).SetLNH(wire.LNHRaw)
	longLen := append([]byte(nil), ud...)
	wire.LRH(longLen).SetPktLen(wire.LRH(longLen).PktLen() + 1)
	tests := []struct {
		name string
		pkt  []byte
		want error
	}{
		{"empty", nil, wire.ErrShort},
		{"short LRH", ud[:5], wire.ErrShort},
		{"PktLen beyond data", longLen, wire.ErrPktLen},
		{"truncated headers", ud[:wire.LRHSize+4], wire.ErrPktLen},
		{"RC", rc, wire.ErrNotUD},
		{"raw", raw, wire.ErrNotUD},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := wire.ParseUD(tt.pkt)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tt.want), "ParseUD = %v, want %v", err, tt.want)
		})
	}
}

// FuzzParseUD feeds arbitrary bytes to ParseUD: it must never panic, and a
// payload it accepts must lie inside the packet, before the ICRC.
func FuzzParseUD(f *testing.F) {
	ud := wire.AppendUD(nil, &wire.UDFields{DLID: 2, SLID: 1, PKey: 0xffff, DestQP: 2, QKey: 0x11, SrcQP: 2, Payload: make([]byte, 64)})
	f.Add(ud)
	f.Add(wire.AppendUD(nil, &wire.UDFields{VL: 15, DLID: 0xffff, SLID: 0xffff, PKey: 0xffff, Payload: make([]byte, 256)}))
	f.Add(wire.AppendUD(nil, &wire.UDFields{DLID: 3, SLID: 1, GRH: &wire.GRHFields{}, PKey: 0x8001, DestQP: 5, Payload: []byte{1, 2, 3}}))
	f.Add(ud[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := wire.ParseUD(b)
		if err != nil {
			return
		}
		end := int(wire.LRH(b).PktLen())*4 - wire.ICRCSize
		if len(u.Payload) > end {
			t.Fatalf("ParseUD(%x): payload of %d bytes beyond the ICRC at %d", b, len(u.Payload), end)
		}
	})
}
