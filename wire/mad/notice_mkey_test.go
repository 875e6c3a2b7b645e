package mad_test

import (
	"bytes"
	"testing"

	"ibfab/wire/mad"
)

// TestTrap256 builds a Bad M_Key notice and reads it back at the offsets
// OpenSM's ib_mad_notice_attr_t (ntc_256) and Wireshark use.
func TestTrap256(t *testing.T) {
	in := mad.BadMKey{LID: 0x0102, DRSLID: 0xffff, Method: mad.MethodSet, AttrID: mad.AttrPortInfo,
		AttrModifier: 0x01020304, MKey: 0x1122334455667788, DR: true, PathTruncated: true, HopCount: 35}
	in.ReturnPath[0], in.ReturnPath[29] = 7, 9
	f := mad.Trap256(mad.NodeTypeSwitch, 0x0a0b, &in)
	b := mad.AppendNotice(nil, &f)
	n := mad.Notice(b)
	if n.TrapNumber() != 256 || n.Type() != mad.NoticeSecurity || !n.IsGeneric() || n.ProducerType() != 2 || n.IssuerLID() != 0x0a0b {
		t.Fatalf("notice header: %+v", n.Fields())
	}
	want := []byte{0, 0, 0x01, 0x02, 0xff, 0xff, uint8(mad.MethodSet), 0, 0x00, 0x15, 1, 2, 3, 4,
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0, 0xc0 | 35, 7}
	if d := n.DataDetails(); !bytes.Equal(d[:len(want)], want) || d[53] != 9 {
		t.Errorf("DataDetails % x, want % x … 09", d, want)
	}
	if got := n.BadMKey(); got != in {
		t.Errorf("BadMKey() = %+v, want %+v", got, in)
	}
}

// FuzzBadMKey reads Trap 256 details out of arbitrary notices: no panic,
// and what is read writes back to the same bytes bar the reserved ones.
func FuzzBadMKey(f *testing.F) {
	in := mad.BadMKey{LID: 3, Method: mad.MethodGet, AttrID: mad.AttrNodeInfo, MKey: 1, DR: true, HopCount: 2}
	n := mad.Trap256(mad.NodeTypeCA, 1, &in)
	f.Add(mad.AppendNotice(nil, &n))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		n := mad.Notice(data)
		if !n.IsValid() {
			return
		}
		r := n.BadMKey()
		out := mad.Notice(append([]byte(nil), data...))
		out.SetBadMKey(&r)
		for _, i := range []int{10, 11, 17, 32} { // reserved bytes
			out[i] = data[i]
		}
		if !bytes.Equal(out, data) {
			t.Fatalf("round trip\n% x\n% x", data, out)
		}
	})
}
