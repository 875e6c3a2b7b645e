package hca

import (
	"testing"

	"ibfab/wire"
)

// FuzzParseUD feeds arbitrary bytes to the receive demux's parser: it must
// never panic, and a payload it accepts must lie inside the packet, before
// the ICRC.
func FuzzParseUD(f *testing.F) {
	ud := wire.AppendUD(nil, &wire.UDFields{DLID: 2, SLID: 1, PKey: 0xffff, DestQP: 2, QKey: DataQKey, SrcQP: 2, Payload: make([]byte, 64)})
	f.Add(ud)
	f.Add(wire.AppendUD(nil, &wire.UDFields{VL: 15, DLID: 0xffff, SLID: 0xffff, PKey: 0xffff, Payload: make([]byte, 256)}))
	f.Add(wire.AppendUD(nil, &wire.UDFields{DLID: 3, SLID: 1, GRH: &wire.GRHFields{}, PKey: 0x8001, DestQP: 5, Payload: []byte{1, 2, 3}}))
	f.Add(ud[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseUD(b)
		if err != nil {
			return
		}
		end := int(wire.LRH(b).PktLen())*4 - wire.ICRCSize
		if len(h.payload) > end {
			t.Fatalf("parseUD(%x): payload of %d bytes beyond the ICRC at %d", b, len(h.payload), end)
		}
	})
}
