package wire_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"ibfab/wire"
)

// The expected bytes below are laid out by hand from the field diagrams of
// IBA §7.7 (LRH), §8.3 (GRH), §9.2 (BTH), §9.3.3 (DETH) and §7.9.4 (link
// packet).

func TestLRH(t *testing.T) {
	tests := []struct {
		name string
		f    wire.LRHFields
		want []byte
	}{
		{"SMP permissive", wire.LRHFields{VL: 15, LNH: wire.LNHLocal, DLID: 0xffff, PktLen: 72, SLID: 0xffff},
			[]byte{0xf0, 0x02, 0xff, 0xff, 0x00, 0x48, 0xff, 0xff}},
		{"every field", wire.LRHFields{VL: 1, LVer: 2, SL: 3, LNH: wire.LNHGlobal, DLID: 0x1234, PktLen: 0x7ff, SLID: 0xabcd},
			[]byte{0x12, 0x33, 0x12, 0x34, 0x07, 0xff, 0xab, 0xcd}},
		{"raw", wire.LRHFields{SL: 15, LNH: wire.LNHRaw, DLID: 1, PktLen: 2, SLID: 2},
			[]byte{0x00, 0xf0, 0x00, 0x01, 0x00, 0x02, 0x00, 0x02}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make(wire.LRH, wire.LRHSize)
			b.Encode(&tt.f)
			if !bytes.Equal(b, tt.want) {
				t.Fatalf("Encode(%+v) = %x, want %x", tt.f, []byte(b), tt.want)
			}
			if got := wire.LRH(tt.want).Fields(); got != tt.f {
				t.Errorf("Fields(%x) = %+v, want %+v", tt.want, got, tt.f)
			}
		})
	}
	assert.False(t, wire.LRH(make([]byte, 7)).IsValid())
	assert.True(t, wire.LRH(make([]byte, 8)).IsValid())
}

// TestLRHSetters sets each field to zero in an all-ones header: only that
// field's bits may clear (reserved bits aside, which setters may clear).
func TestLRHSetters(t *testing.T) {
	all := wire.LRHFields{VL: 15, LVer: 15, SL: 15, LNH: 3, DLID: 0xffff, PktLen: 0x7ff, SLID: 0xffff}
	tests := []struct {
		name string
		set  func(wire.LRH)
		want func(*wire.LRHFields)
	}{
		{"VL", func(b wire.LRH) { b.SetVL(0) }, func(f *wire.LRHFields) { f.VL = 0 }},
		{"LVer", func(b wire.LRH) { b.SetLVer(0) }, func(f *wire.LRHFields) { f.LVer = 0 }},
		{"SL", func(b wire.LRH) { b.SetSL(0) }, func(f *wire.LRHFields) { f.SL = 0 }},
		{"LNH", func(b wire.LRH) { b.SetLNH(0) }, func(f *wire.LRHFields) { f.LNH = 0 }},
		{"DLID", func(b wire.LRH) { b.SetDLID(0) }, func(f *wire.LRHFields) { f.DLID = 0 }},
		{"PktLen", func(b wire.LRH) { b.SetPktLen(0) }, func(f *wire.LRHFields) { f.PktLen = 0 }},
		{"SLID", func(b wire.LRH) { b.SetSLID(0) }, func(f *wire.LRHFields) { f.SLID = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := wire.LRH(bytes.Repeat([]byte{0xff}, wire.LRHSize))
			tt.set(b)
			want := all
			tt.want(&want)
			assert.Equal(t, want, b.Fields())
		})
	}
}

func TestGRH(t *testing.T) {
	f := wire.GRHFields{IPVer: 6, TClass: 0xa5, FlowLabel: 0xbcdef, PayLen: 0x0123, NxtHdr: 0x1b, HopLmt: 0x40,
		SGID: gid(0x1111), DGID: gid(0x2222)}
	want := append([]byte{0x6a, 0x5b, 0xcd, 0xef, 0x01, 0x23, 0x1b, 0x40},
		append(bytes.Clone(f.SGID[:]), f.DGID[:]...)...)
	b := make(wire.GRH, wire.GRHSize)
	b.Encode(&f)
	if !bytes.Equal(b, want) {
		t.Fatalf("Encode(%+v) = %x, want %x", f, []byte(b), want)
	}
	assert.Equal(t, f, wire.GRH(want).Fields())

	// Setters of the shared first word leave the other two fields alone.
	b.SetTClass(0)
	assert.Equal(t, []uint32{6, 0, 0xbcdef}, []uint32{uint32(b.IPVer()), uint32(b.TClass()), b.FlowLabel()})
	b.SetFlowLabel(0)
	b.SetTClass(0xff)
	assert.Equal(t, []uint32{6, 0xff, 0}, []uint32{uint32(b.IPVer()), uint32(b.TClass()), b.FlowLabel()})
	b.SetIPVer(0)
	assert.Equal(t, []uint32{0, 0xff, 0}, []uint32{uint32(b.IPVer()), uint32(b.TClass()), b.FlowLabel()})
	assert.False(t, wire.GRH(make([]byte, 39)).IsValid())
}

func TestBTH(t *testing.T) {
	tests := []struct {
		name string
		f    wire.BTHFields
		want []byte
	}{
		{"UD SEND_ONLY", wire.BTHFields{OpCode: wire.UDSendOnly, PKey: 0xffff, DestQP: 1, PSN: 0x123456},
			[]byte{0x64, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x12, 0x34, 0x56}},
		{"every field", wire.BTHFields{OpCode: wire.RCSendOnly, SE: true, M: true, PadCnt: 3, TVer: 0xf,
			PKey: 0x8001, DestQP: 0xfedcba, A: true, PSN: 0xffffff},
			[]byte{0x04, 0xff, 0x80, 0x01, 0x00, 0xfe, 0xdc, 0xba, 0x80, 0xff, 0xff, 0xff}},
		{"pad only", wire.BTHFields{OpCode: wire.UCSendFirst, PadCnt: 2},
			[]byte{0x20, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make(wire.BTH, wire.BTHSize)
			b.Encode(&tt.f)
			if !bytes.Equal(b, tt.want) {
				t.Fatalf("Encode(%+v) = %x, want %x", tt.f, []byte(b), tt.want)
			}
			if got := wire.BTH(tt.want).Fields(); got != tt.f {
				t.Errorf("Fields(%x) = %+v, want %+v", tt.want, got, tt.f)
			}
		})
	}
}

func TestBTHSetters(t *testing.T) {
	all := wire.BTHFields{OpCode: 0xff, SE: true, M: true, PadCnt: 3, TVer: 15, PKey: 0xffff,
		DestQP: 0xffffff, FECN: true, BECN: true, A: true, PSN: 0xffffff}
	tests := []struct {
		name string
		set  func(wire.BTH)
		want func(*wire.BTHFields)
	}{
		{"OpCode", func(b wire.BTH) { b.SetOpCode(0) }, func(f *wire.BTHFields) { f.OpCode = 0 }},
		{"SE", func(b wire.BTH) { b.SetSE(false) }, func(f *wire.BTHFields) { f.SE = false }},
		{"M", func(b wire.BTH) { b.SetM(false) }, func(f *wire.BTHFields) { f.M = false }},
		{"PadCnt", func(b wire.BTH) { b.SetPadCnt(0) }, func(f *wire.BTHFields) { f.PadCnt = 0 }},
		{"TVer", func(b wire.BTH) { b.SetTVer(0) }, func(f *wire.BTHFields) { f.TVer = 0 }},
		{"PKey", func(b wire.BTH) { b.SetPKey(0) }, func(f *wire.BTHFields) { f.PKey = 0 }},
		{"DestQP", func(b wire.BTH) { b.SetDestQP(0) }, func(f *wire.BTHFields) { f.DestQP, f.FECN, f.BECN = 0, false, false }},
		{"FECN", func(b wire.BTH) { b.SetFECN(false) }, func(f *wire.BTHFields) { f.FECN = false }},
		{"BECN", func(b wire.BTH) { b.SetBECN(false) }, func(f *wire.BTHFields) { f.BECN = false }},
		{"A", func(b wire.BTH) { b.SetA(false) }, func(f *wire.BTHFields) { f.A = false }},
		{"PSN", func(b wire.BTH) { b.SetPSN(0) }, func(f *wire.BTHFields) { f.PSN = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := wire.BTH(bytes.Repeat([]byte{0xff}, wire.BTHSize))
			tt.set(b)
			want := all
			tt.want(&want)
			assert.Equal(t, want, b.Fields())
		})
	}
}

func TestOpCodeString(t *testing.T) {
	tests := []struct {
		op   wire.OpCode
		want string
	}{
		{wire.RCSendFirst, "RC_SEND_FIRST"},
		{wire.RCSendOnly, "RC_SEND_ONLY"},
		{wire.RCFetchAdd, "RC_FETCH_ADD"},
		{wire.UCSendOnlyImm, "UC_SEND_ONLY_IMM"},
		{wire.UCSendFirst + 0x0b, "UC_RDMA_WRITE_ONLY_IMM"},
		{wire.UDSendOnly, "UD_SEND_ONLY"},
		{wire.CNP, "CNP"},
		{wire.UDSendOnlyImm, "UD_SEND_ONLY_IMM"},
		{0x15, "OpCode(0x15)"},
		{0x2c, "OpCode(0x2c)"},
		{0x60, "OpCode(0x60)"},
		{0xff, "OpCode(0xff)"},
	}
	for _, tt := range tests {
		if got := tt.op.String(); got != tt.want {
			t.Errorf("OpCode(%#x).String() = %q, want %q", uint8(tt.op), got, tt.want)
		}
	}
	assert.True(t, wire.UDSendOnly.IsUD())
	assert.False(t, wire.RCSendOnly.IsUD())
	assert.Equal(t, uint8(wire.ServiceUC), wire.UCSendOnly.Service())
}

func TestDETH(t *testing.T) {
	f := wire.DETHFields{QKey: 0x80010000, SrcQP: 0xabcdef}
	want := []byte{0x80, 0x01, 0x00, 0x00, 0x00, 0xab, 0xcd, 0xef}
	b := make(wire.DETH, wire.DETHSize)
	b.Encode(&f)
	if !bytes.Equal(b, want) {
		t.Fatalf("Encode(%+v) = %x, want %x", f, []byte(b), want)
	}
	assert.Equal(t, f, wire.DETH(want).Fields())
	b = wire.DETH(bytes.Repeat([]byte{0xff}, 8))
	assert.Equal(t, uint32(0xffffff), b.SrcQP(), "the reserved byte is not part of SrcQP")
	b.SetQKey(0)
	assert.Equal(t, uint32(0xffffff), b.SrcQP())
	assert.False(t, wire.DETH(make([]byte, 7)).IsValid())
}

func TestFlowControl(t *testing.T) {
	tests := []struct {
		name string
		f    wire.FlowControlFields
		want []byte // first four bytes
	}{
		{"normal", wire.FlowControlFields{Op: wire.FlowControlNormal, FCTBS: 0xabc, VL: 3, FCCL: 0x123},
			[]byte{0x0a, 0xbc, 0x31, 0x23}},
		{"init", wire.FlowControlFields{Op: wire.FlowControlInit, FCTBS: 0xfff, VL: 15, FCCL: 0x800},
			[]byte{0x1f, 0xff, 0xf8, 0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := wire.FlowControl(wire.AppendFlowControl(nil, &tt.f))
			if !bytes.Equal(b[:4], tt.want) {
				t.Fatalf("AppendFlowControl(%+v) = %x, want %x…", tt.f, []byte(b), tt.want)
			}
			want := tt.f
			want.LPCRC = crc16MSBFirst(tt.want)
			assert.Equal(t, want, b.Fields())
		})
	}
	b := wire.FlowControl(bytes.Repeat([]byte{0xff}, 6))
	b.SetOp(0)
	b.SetFCCL(0)
	assert.Equal(t, wire.FlowControlFields{FCTBS: 0xfff, VL: 15, LPCRC: 0xffff}, b.Fields())
	b.SetFCTBS(0)
	b.SetVL(0)
	b.SetOp(wire.FlowControlInit)
	assert.Equal(t, wire.FlowControlFields{Op: wire.FlowControlInit, LPCRC: 0xffff}, b.Fields())
	assert.Equal(t, "Init", wire.FlowControlInit.String())
	assert.False(t, wire.FlowControl(make([]byte, 5)).IsValid())
}

func TestAppendEthernet(t *testing.T) {
	dst := [6]byte{0x02, 0, 0, 0, 0, 1}
	src := [6]byte{0x02, 0, 0, 0, 0, 2}
	got := wire.AppendEthernet([]byte{0xee}, dst, src, wire.EtherTypeData)
	want := []byte{0xee, 0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xb5}
	if !bytes.Equal(got, want) {
		t.Errorf("AppendEthernet = %x, want %x", got, want)
	}
}
