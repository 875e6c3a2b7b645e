package mad_test

import (
	"testing"

	"ibfab/wire/mad"
)

func TestRMPPRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		f    mad.RMPPFields
	}{
		{"first data", mad.RMPPFields{Version: 1, Type: mad.RMPPTypeData, RespTime: 0x1f,
			Flags: mad.RMPPFlagActive | mad.RMPPFlagFirst, Data1: 1, Data2: 4400}},
		{"last data", mad.RMPPFields{Version: 1, Type: mad.RMPPTypeData,
			Flags: mad.RMPPFlagActive | mad.RMPPFlagLast, Data1: 20, Data2: 12}},
		{"ack", mad.RMPPFields{Version: 1, Type: mad.RMPPTypeAck, RespTime: 3,
			Flags: mad.RMPPFlagActive, Data1: 7, Data2: 71}},
		{"abort", mad.RMPPFields{Version: 1, Type: mad.RMPPTypeAbort,
			Flags: mad.RMPPFlagActive, Status: mad.RMPPStatusBadSegment}},
		{"none", mad.RMPPFields{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, mad.MADSize)
			for i := range b {
				b[i] = 0xa5
			}
			mad.RMPP(b).Encode(&tt.f)
			got, err := mad.DecodeRMPP(b)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.f {
				t.Errorf("decoded %v, want %v", got, tt.f)
			}
			if b[23] != 0xa5 || b[36] != 0xa5 {
				t.Errorf("Encode wrote outside the RMPP header")
			}
		})
	}
}

func TestRMPPBits(t *testing.T) {
	b := mad.RMPP(make([]byte, mad.MADSize))
	b.SetFlags(mad.RMPPFlagActive | mad.RMPPFlagLast)
	b.SetRespTime(0x3f) // the sixth bit is dropped
	if b.RespTime() != 0x1f || b.Flags() != mad.RMPPFlagActive|mad.RMPPFlagLast || !b.Active() {
		t.Errorf("RespTime %#x Flags %#x", b.RespTime(), b.Flags())
	}
	b.SetFlags(0xff)
	if b.RespTime() != 0x1f || b.Flags() != 7 {
		t.Errorf("SetFlags(0xff) changed RespTime: %#x flags %#x", b.RespTime(), b.Flags())
	}
	if len(b.Payload()) != mad.RMPPSegmentSize || mad.RMPPSegmentSize != 220 {
		t.Errorf("payload %d bytes", len(b.Payload()))
	}
}

func TestRMPPClass(t *testing.T) {
	tests := []struct {
		c    mad.MgmtClass
		rmpp bool
		hdr  int
	}{
		{mad.ClassSubnAdm, true, 56},
		{mad.ClassDevMgt, true, 64},
		{0x10, true, 36},
		{0x12, true, 64},
		{0x30, true, 40},
		{0x4f, true, 40},
		{mad.ClassPerfMgt, false, 36},
		{mad.ClassSubnLID, false, 36},
		{0x09, false, 36},
	}
	for _, tt := range tests {
		if got := mad.RMPPClass(tt.c); got != tt.rmpp {
			t.Errorf("RMPPClass(%#x) = %v", uint8(tt.c), got)
		}
		if got := mad.RMPPClassHeaderSize(tt.c); got != tt.hdr {
			t.Errorf("RMPPClassHeaderSize(%#x) = %d, want %d", uint8(tt.c), got, tt.hdr)
		}
	}
}

func TestRMPPStatus(t *testing.T) {
	for s := 0; s < 256; s++ {
		st := mad.RMPPStatus(s)
		if st.IsAbort() != (s >= 118 && s <= 127) || st.IsStop() != (s == 1) {
			t.Errorf("status %d: abort %v stop %v", s, st.IsAbort(), st.IsStop())
		}
		if st.String() == "" {
			t.Errorf("status %d has no name", s)
		}
	}
}

func FuzzRMPP(f *testing.F) {
	f.Add(make([]byte, mad.MADSize))
	f.Add([]byte{1, 3, 1, 0x12})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := mad.DecodeRMPP(data)
		if (err != nil) != (len(data) < mad.MADSize) {
			t.Fatalf("DecodeRMPP(%d bytes) error %v", len(data), err)
		}
		if err != nil {
			return
		}
		_ = h.String()
		b := make([]byte, mad.MADSize)
		mad.RMPP(b).Encode(&h)
		if again := mad.RMPP(b).Fields(); again != h {
			t.Fatalf("round trip %v → %v", h, again)
		}
	})
}
