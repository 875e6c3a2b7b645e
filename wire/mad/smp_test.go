package mad_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

// smpPattern returns n bytes counting up from start, so a copy to the
// wrong offset or of the wrong length shows.
func smpPattern(start byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

func TestSMPRoundTrip(t *testing.T) {
	var full mad.SMPFields
	copy(full.Data[:], smpPattern(1, mad.SMPDataSize))
	full.Method, full.Status, full.TransactionID = mad.MethodGetResp, 0xffff, 0xfedcba9876543210
	full.AttrID, full.AttrModifier, full.MKey = mad.AttrPortInfo, 0xffffffff, 0xffffffffffffffff
	tests := []struct {
		name string
		f    mad.SMPFields
	}{
		{"zero", mad.SMPFields{}},
		{"Get NodeInfo", mad.SMPFields{Method: mad.MethodGet, TransactionID: 1, AttrID: mad.AttrNodeInfo}},
		{"all fields", full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mad.AppendSMP(nil, &tt.f)
			require.Len(t, b, mad.MADSize)
			got, err := mad.DecodeSMP(b)
			require.NoError(t, err)
			if got != tt.f {
				t.Errorf("DecodeSMP(AppendSMP(%+v)) = %+v, want the input", tt.f, got)
			}
			h := mad.MAD(b)
			assert.Equal(t, uint8(1), h.BaseVersion())
			assert.Equal(t, mad.ClassSubnLID, h.MgmtClass())
			assert.Equal(t, uint8(1), h.ClassVersion())
			assert.Equal(t, make([]byte, 32), b[32:64], "reserved after M_Key")
			assert.Equal(t, make([]byte, 128), b[128:], "reserved after data")
		})
	}
}

// TestSMPLayout checks the LID-routed SMP offsets of IBA 14.2.1.1.
func TestSMPLayout(t *testing.T) {
	b := make(mad.SMP, mad.MADSize)
	b.SetMKey(0x0102030405060708)
	copy(b.Data(), smpPattern(0x40, mad.SMPDataSize))
	want := make([]byte, mad.MADSize)
	copy(want[24:], []byte{1, 2, 3, 4, 5, 6, 7, 8})
	copy(want[64:128], smpPattern(0x40, 64))
	if !bytes.Equal(b, want) {
		t.Errorf("SMP bytes\n%x\nwant\n%x", []byte(b), want)
	}
}

func TestDRSMPRoundTrip(t *testing.T) {
	var full mad.DRSMPFields
	full.Method, full.Status, full.Direction = mad.MethodGetResp, 0x7fff, true
	full.HopPointer, full.HopCount, full.TransactionID = 0xff, 0xff, 0xffffffffffffffff
	full.AttrID, full.AttrModifier, full.MKey = 0xffff, 0xffffffff, 0xffffffffffffffff
	full.DrSLID, full.DrDLID = 0xffff, 0xfffe
	copy(full.Data[:], smpPattern(1, 64))
	copy(full.InitialPath[:], smpPattern(0x41, 64))
	copy(full.ReturnPath[:], smpPattern(0x81, 64))
	tests := []struct {
		name string
		f    mad.DRSMPFields
	}{
		{"zero", mad.DRSMPFields{}},
		{"outbound", mad.DRSMPFields{Method: mad.MethodGet, HopCount: 3, DrSLID: 0xffff, DrDLID: 0xffff,
			AttrID: mad.AttrNodeInfo, InitialPath: [64]byte{0, 1, 2, 3}}},
		{"D set, status zero", mad.DRSMPFields{Direction: true}},
		{"status set, D clear", mad.DRSMPFields{Status: mad.StatusInvalidField}},
		{"all fields", full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mad.AppendDRSMP(nil, &tt.f)
			require.Len(t, b, mad.MADSize)
			got := mad.DRSMP(b).Fields()
			if got != tt.f {
				t.Errorf("DRSMP(AppendDRSMP(%+v)).Fields() = %+v, want the input", tt.f, got)
			}
			assert.Equal(t, mad.ClassSubnDirected, mad.MAD(b).MgmtClass())
			assert.Equal(t, make([]byte, 28), b[36:64], "reserved after DrDLID")
		})
	}
}

// TestDRSMPStatusTopBitIgnored: the top bit of the status word is D, so a
// 16-bit status must not leak into it.
func TestDRSMPStatusTopBitIgnored(t *testing.T) {
	b := mad.AppendDRSMP(nil, &mad.DRSMPFields{Status: 0xffff})
	d := mad.DRSMP(b)
	assert.False(t, d.Direction())
	assert.Equal(t, mad.Status(0x7fff), d.Status())
	d.SetDirection(true)
	assert.Equal(t, mad.Status(0x7fff), d.Status(), "SetDirection keeps the status")
	d.SetStatus(0)
	assert.True(t, d.Direction(), "SetStatus keeps D")
	assert.Equal(t, []byte{0x80, 0x00}, b[4:6])
}

// TestDRSMPLayout checks the directed-route SMP offsets of IBA 14.2.1.2,
// one field at a time against hand-written bytes.
func TestDRSMPLayout(t *testing.T) {
	tests := []struct {
		name string
		set  func(mad.DRSMP)
		off  int
		want []byte
	}{
		{"D", func(d mad.DRSMP) { d.SetDirection(true) }, 4, []byte{0x80}},
		{"Status", func(d mad.DRSMP) { d.SetStatus(0x1234) }, 4, []byte{0x12, 0x34}},
		{"HopPointer", func(d mad.DRSMP) { d.SetHopPointer(5) }, 6, []byte{5}},
		{"HopCount", func(d mad.DRSMP) { d.SetHopCount(6) }, 7, []byte{6}},
		{"MKey", func(d mad.DRSMP) { d.SetMKey(0x0102030405060708) }, 24, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{"DrSLID", func(d mad.DRSMP) { d.SetDrSLID(0xabcd) }, 32, []byte{0xab, 0xcd}},
		{"DrDLID", func(d mad.DRSMP) { d.SetDrDLID(0x1234) }, 34, []byte{0x12, 0x34}},
		{"Data", func(d mad.DRSMP) { copy(d.Data(), smpPattern(1, 64)) }, 64, smpPattern(1, 64)},
		{"InitialPath", func(d mad.DRSMP) { copy(d.InitialPath(), smpPattern(2, 64)) }, 128, smpPattern(2, 64)},
		{"ReturnPath", func(d mad.DRSMP) { copy(d.ReturnPath(), smpPattern(3, 64)) }, 192, smpPattern(3, 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make(mad.DRSMP, mad.MADSize)
			tt.set(b)
			want := make([]byte, mad.MADSize)
			copy(want[tt.off:], tt.want)
			if !bytes.Equal(b, want) {
				t.Errorf("after %s: bytes\n%x\nwant %x at %d and zeros elsewhere", tt.name, []byte(b), tt.want, tt.off)
			}
		})
	}
}

func TestAppendDRRequest(t *testing.T) {
	tests := []struct {
		name      string
		r         mad.DRRequest
		wantHops  uint8
		wantSLID  uint16
		wantDLID  uint16
		wantInit  []byte // the first bytes of InitialPath; the rest must be zero
		wantData0 byte
	}{
		{"local, nil path", mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrNodeInfo},
			0, 0xffff, 0xffff, nil, 0},
		{"local, path [0]", mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrNodeInfo, Path: []uint8{0}},
			0, 0xffff, 0xffff, nil, 0},
		{"three hops", mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrPortInfo, Path: []uint8{0, 1, 7, 2}},
			3, 0xffff, 0xffff, []byte{0, 1, 7, 2}, 0},
		{"path[0] is ignored", mad.DRRequest{Method: mad.MethodGet, Path: []uint8{9, 4}},
			1, 0xffff, 0xffff, []byte{0, 4}, 0},
		{"set with data and LID-routed start", mad.DRRequest{Method: mad.MethodSet, AttrID: mad.AttrSwitchInfo,
			Path: []uint8{0, 3, 3}, DrSLID: 1, DrDLID: 0, Data: []byte{0x5a}},
			2, 1, 0xffff, []byte{0, 3, 3}, 0x5a},
		{"max hops", mad.DRRequest{Method: mad.MethodGet, Path: make([]uint8, 64)},
			63, 0xffff, 0xffff, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := mad.AppendDRRequest(nil, &tt.r)
			require.NoError(t, err)
			d := mad.DRSMP(b)
			require.NoError(t, d.Validate())
			assert.Equal(t, tt.r.Method, d.MAD().Method())
			assert.Equal(t, tt.r.AttrID, d.MAD().AttrID())
			assert.False(t, d.Direction(), "outbound D bit")
			assert.Equal(t, uint8(0), d.HopPointer())
			assert.Equal(t, tt.wantHops, d.HopCount())
			assert.Equal(t, tt.wantSLID, d.DrSLID())
			assert.Equal(t, tt.wantDLID, d.DrDLID())
			wantInit := make([]byte, 64)
			copy(wantInit, tt.wantInit)
			assert.Equal(t, wantInit, d.InitialPath())
			assert.Equal(t, make([]byte, 64), d.ReturnPath())
			assert.Equal(t, tt.wantData0, d.Data()[0])
		})
	}
}

func TestAppendDRRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		r    mad.DRRequest
	}{
		{"64 hops", mad.DRRequest{Path: make([]uint8, 65)}},
		{"data too long", mad.DRRequest{Data: make([]byte, 65)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte{1}
			got, err := mad.AppendDRRequest(dst, &tt.r)
			assert.Error(t, err)
			assert.Equal(t, dst, got, "dst unchanged on error")
		})
	}
}

func TestSMPValidate(t *testing.T) {
	lid := mad.AppendSMP(nil, &mad.SMPFields{})
	dr := mad.AppendDRSMP(nil, &mad.DRSMPFields{HopCount: 2, HopPointer: 3})
	tests := []struct {
		name      string
		err       error
		wantErr   bool
		truncated bool
	}{
		{"SMP ok", mad.SMP(lid).Validate(), false, false},
		{"SMP short", mad.SMP(lid[:255]).Validate(), true, true},
		{"SMP wrong class", mad.SMP(dr).Validate(), true, false},
		{"DR ok at destination", mad.DRSMP(dr).Validate(), false, false},
		{"DR short", mad.DRSMP(dr[:100]).Validate(), true, true},
		{"DR wrong class", mad.DRSMP(lid).Validate(), true, false},
		{"DR hop count 64", mad.DRSMP(mad.AppendDRSMP(nil, &mad.DRSMPFields{HopCount: 64})).Validate(), true, false},
		{"DR pointer past end", mad.DRSMP(mad.AppendDRSMP(nil,
			&mad.DRSMPFields{HopCount: 2, HopPointer: 4})).Validate(), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.err != nil) != tt.wantErr {
				t.Fatalf("Validate() = %v, want error %v", tt.err, tt.wantErr)
			}
			if got := errors.Is(tt.err, mad.ErrTruncated); got != tt.truncated {
				t.Errorf("errors.Is(%v, ErrTruncated) = %v, want %v", tt.err, got, tt.truncated)
			}
		})
	}
	_, err := mad.DecodeSMP(lid[:10])
	assert.ErrorIs(t, err, mad.ErrTruncated)
	_, err = mad.DecodeDRSMP(lid)
	assert.Error(t, err)
	f, err := mad.DecodeDRSMP(dr)
	require.NoError(t, err)
	assert.Equal(t, uint8(3), f.HopPointer)
}

func TestDRSMPPath(t *testing.T) {
	tests := []struct {
		name string
		path []uint8
		want []uint8
	}{
		{"local", nil, []uint8{0}},
		{"two hops", []uint8{0, 4, 9}, []uint8{0, 4, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Path: tt.path})
			require.NoError(t, err)
			got := mad.DRSMP(b).Path()
			assert.Equal(t, tt.want, got)
			got[0] = 0xff
			assert.Equal(t, byte(0), b[128], "Path returns a copy")
		})
	}
	b := mad.DRSMP(mad.AppendDRSMP(nil, &mad.DRSMPFields{HopCount: 200}))
	assert.Len(t, b.Path(), mad.MaxHopCount+1, "clipped")
}
