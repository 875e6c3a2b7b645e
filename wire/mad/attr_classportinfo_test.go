package mad_test

import (
	"testing"

	"ibfab/wire/mad"
)

func classPortInfoSample() mad.ClassPortInfoFields {
	f := mad.ClassPortInfoFields{BaseVersion: 1, ClassVersion: 1, CapabilityMask: 0x1300,
		CapabilityMask2: 1<<26 | 5, RespTimeValue: 18}
	f.Redirect = mad.ClassPortInfoAddr{TC: 3, SL: 9, FL: 0xabcde, LID: 0x12, PKey: 0x8001, QP: 0xabcdef, QKey: 0x80010000}
	f.Redirect.GID[0], f.Redirect.GID[15] = 0xfe, 0x01
	f.Trap = mad.ClassPortInfoAddr{TC: 1, SL: 15, FL: 1, LID: 0xbfff, PKey: 0xffff, HL: 64, QP: 1, QKey: 0x80010000}
	return f
}

// TestClassPortInfoLayout checks the fields land at the offsets IBA
// 13.4.8.1 gives them.
func TestClassPortInfoLayout(t *testing.T) {
	f := classPortInfoSample()
	b := mad.AppendClassPortInfo(nil, &f)
	for _, c := range []struct {
		what string
		off  int
		want []byte
	}{
		{"versions and CapabilityMask", 0, []byte{1, 1, 0x13, 0x00}},
		{"CapabilityMask2 | RespTimeValue", 4, []byte{0x80, 0x00, 0x00, 0xb2}},
		{"RedirectTC/SL/FL", 24, []byte{0x03, 0x9a, 0xbc, 0xde}},
		{"RedirectLID, P_Key", 28, []byte{0x00, 0x12, 0x80, 0x01}},
		{"RedirectQP", 32, []byte{0x00, 0xab, 0xcd, 0xef}},
		{"TrapHL, TrapQP", 64, []byte{64, 0, 0, 1}},
	} {
		if got := b[c.off : c.off+len(c.want)]; string(got) != string(c.want) {
			t.Errorf("%s at %d = % x, want % x", c.what, c.off, got, c.want)
		}
	}
	if got, err := mad.DecodeClassPortInfo(b); err != nil || got != f {
		t.Errorf("DecodeClassPortInfo = %+v, %v; want %+v", got, err, f)
	}
	if _, err := mad.DecodeClassPortInfo(b[:mad.ClassPortInfoSize-1]); err == nil {
		t.Error("DecodeClassPortInfo of 71 bytes: no error")
	}
}

func FuzzClassPortInfo(f *testing.F) {
	s := classPortInfoSample()
	f.Add(mad.AppendClassPortInfo(nil, &s))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		attrRoundTrip(t, "ClassPortInfo", data, mad.ClassPortInfoSize, mad.DecodeClassPortInfo, mad.AppendClassPortInfo)
	})
}
