package softswitch_test

import (
	"testing"

	"ibfab/softswitch"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// FuzzParseMAD feeds arbitrary bytes to the switch's MAD reader: it must
// never panic, and a MAD it accepts must be a whole 256-byte MAD.
func FuzzParseMAD(f *testing.F) {
	smp, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 1, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1, 2}})
	if err != nil {
		f.Fatal(err)
	}
	dr := wire.AppendUD(nil, &wire.UDFields{VL: 15, DLID: mad.PermissiveLID, SLID: mad.PermissiveLID, PKey: 0xffff, Payload: smp})
	f.Add(dr)
	f.Add(wire.AppendUD(nil, &wire.UDFields{DLID: 4, SLID: 1, PKey: 0xffff, DestQP: wire.QP1, QKey: wire.QP1QKey, SrcQP: wire.QP1, Payload: smp}))
	f.Add(dr[:40])
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := softswitch.ParseMAD(1, b)
		if err != nil {
			return
		}
		if len(in.MAD) != mad.MADSize {
			t.Fatalf("ParseMAD(%x): MAD of %d bytes, want %d", b, len(in.MAD), mad.MADSize)
		}
	})
}
