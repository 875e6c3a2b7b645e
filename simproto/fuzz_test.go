package simproto_test

import (
	"bytes"
	"reflect"
	"testing"

	"ibfab/simproto"
)

// FuzzCtl feeds arbitrary datagrams to DecodeCtl and every payload
// decoder: none may panic, and what DecodeCtl accepts re-encodes to the
// same bytes.
func FuzzCtl(f *testing.F) {
	var c simproto.CtlFields
	c.Type, c.Len = simproto.CtlConnect, simproto.ClientInfoSize
	(&simproto.ClientInfo{ID: 1234, IsSM: true, NodeID: "H-0002c90300000a00"}).Encode(c.Data[:])
	f.Add(simproto.AppendCtl(nil, &c))
	c = simproto.CtlFields{ClientID: 2, Type: simproto.CtlGetPortInfo, Len: 1}
	f.Add(simproto.AppendCtl(nil, &c))
	c = simproto.CtlFields{ClientID: 9, Type: simproto.CtlGetPKeys}
	simproto.EncodePKeys(c.Data[:], []uint16{0xffff})
	f.Add(simproto.AppendCtl(nil, &c))
	f.Add(make([]byte, simproto.CtlSize))
	f.Add([]byte{0xef, 0xbe, 0xad, 0xde})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := simproto.DecodeCtl(b)
		if err != nil {
			return
		}
		if again := simproto.AppendCtl(nil, &got); !bytes.Equal(again, b) {
			t.Fatalf("DecodeCtl(%x) re-encodes as %x", b, again)
		}
		d := got.Data[:]
		_, _ = simproto.DecodeClientInfo(d)
		_, _ = simproto.DecodePortState(d)
		_, _ = simproto.DecodeVendor(d)
		_, _ = simproto.DecodeGID(d)
		_, _ = simproto.DecodeGUID(d)
		_, _ = simproto.DecodeIsSM(d)
		_, _ = simproto.DecodePKeys(d)
		_ = got.Type.String()
	})
}

// FuzzPayload feeds payloads of any length to each payload decoder (the
// first byte picks which): none may panic, and what one accepts encodes
// back to a payload that decodes to the same value.
func FuzzPayload(f *testing.F) {
	d := make([]byte, simproto.CtlDataSize)
	(&simproto.ClientInfo{ID: 1, QP: 2, NodeID: "x"}).Encode(d)
	f.Add(append([]byte{0}, d...))
	(&simproto.Vendor{VendorID: 0x2c9, FWVer: 1}).Encode(d)
	f.Add(append([]byte{2}, d...))
	f.Add([]byte{6, 0xff, 0xff})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		which, d := b[0]%7, b[1:]
		out := make([]byte, simproto.CtlDataSize)
		switch which {
		case 0:
			v, err := simproto.DecodeClientInfo(d)
			if err == nil {
				v.Encode(out)
				if w, _ := simproto.DecodeClientInfo(out); w != v {
					t.Fatalf("ClientInfo %+v round trips as %+v", v, w)
				}
			}
		case 1:
			v, err := simproto.DecodePortState(d)
			if err == nil {
				v.Encode(out)
				if w, _ := simproto.DecodePortState(out); w != v {
					t.Fatalf("PortState %+v round trips as %+v", v, w)
				}
			}
		case 2:
			v, err := simproto.DecodeVendor(d)
			if err == nil {
				v.Encode(out)
				if w, _ := simproto.DecodeVendor(out); w != v {
					t.Fatalf("Vendor %+v round trips as %+v", v, w)
				}
			}
		case 3:
			v, err := simproto.DecodeGID(d)
			if err == nil {
				v.Encode(out)
				if w, _ := simproto.DecodeGID(out); w != v {
					t.Fatalf("GID %+v round trips as %+v", v, w)
				}
			}
		case 4:
			v, err := simproto.DecodeGUID(d)
			if err == nil {
				simproto.EncodeGUID(out, v)
				if w, _ := simproto.DecodeGUID(out); w != v {
					t.Fatalf("GUID %#x round trips as %#x", v, w)
				}
			}
		case 5:
			v, err := simproto.DecodeIsSM(d)
			if err == nil {
				simproto.EncodeIsSM(out, v)
				if w, _ := simproto.DecodeIsSM(out); w != v {
					t.Fatalf("IsSM %v round trips as %v", v, w)
				}
			}
		case 6:
			v, err := simproto.DecodePKeys(d)
			if err == nil {
				simproto.EncodePKeys(out, v)
				if !bytes.Equal(out, d[:simproto.PKeysSize]) {
					t.Fatalf("PKeys %x round trip as %x", d[:simproto.PKeysSize], out)
				}
			}
		}
	})
}

// FuzzRequest feeds arbitrary datagrams to DecodeRequest: it must never
// panic, and what it accepts round-trips through AppendRequest with the MAD
// untouched.
func FuzzRequest(f *testing.F) {
	m := make([]byte, simproto.MADSize)
	m[0], m[1], m[2], m[3] = 1, 0x81, 1, 1
	f.Add(simproto.AppendRequest(nil, &simproto.RequestFields{DLID: 0xffff, SLID: 0xffff, MAD: m}))
	f.Add(simproto.AppendRequest(nil, &simproto.RequestFields{DLID: 3, DestQP: 1, SrcQP: 1, Status: simproto.StatusTimeout, MAD: m}))
	f.Add(make([]byte, simproto.RequestSize-1))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := simproto.DecodeRequest(b)
		if err != nil {
			return
		}
		if !bytes.Equal(got.MAD, b[simproto.RequestSize-simproto.MADSize:]) {
			t.Fatalf("DecodeRequest(%x): MAD %x", b, got.MAD)
		}
		again, err := simproto.DecodeRequest(simproto.AppendRequest(nil, &got))
		if err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		if got.Length == 0 {
			got.Length = simproto.MADSize // what Encode writes for 0
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("DecodeRequest(%x) = %+v, round trips as %+v", b, got, again)
		}
	})
}
