package mad_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

// portCountersFieldTests sets each PortCounters field alone to all ones;
// want is its place per IBA 16.1.3.5, cross-checked with libibmad.
var portCountersFieldTests = []struct {
	name string
	f    mad.PortCountersFields
	want map[int]byte
}{
	{name: "PortSelect", f: mad.PortCountersFields{PortSelect: 0xff}, want: attrFF(1, 1)},
	{name: "CounterSelect", f: mad.PortCountersFields{CounterSelect: 0xffff}, want: attrFF(2, 2)},
	{name: "SymbolErrorCounter", f: mad.PortCountersFields{SymbolErrorCounter: 0xffff}, want: attrFF(4, 2)},
	{name: "LinkErrorRecoveryCounter", f: mad.PortCountersFields{LinkErrorRecoveryCounter: 0xff}, want: attrFF(6, 1)},
	{name: "LinkDownedCounter", f: mad.PortCountersFields{LinkDownedCounter: 0xff}, want: attrFF(7, 1)},
	{name: "PortRcvErrors", f: mad.PortCountersFields{PortRcvErrors: 0xffff}, want: attrFF(8, 2)},
	{name: "PortRcvRemotePhysicalErrors", f: mad.PortCountersFields{PortRcvRemotePhysicalErrors: 0xffff}, want: attrFF(10, 2)},
	{name: "PortRcvSwitchRelayErrors", f: mad.PortCountersFields{PortRcvSwitchRelayErrors: 0xffff}, want: attrFF(12, 2)},
	{name: "PortXmitDiscards", f: mad.PortCountersFields{PortXmitDiscards: 0xffff}, want: attrFF(14, 2)},
	{name: "PortXmitConstraintErrors", f: mad.PortCountersFields{PortXmitConstraintErrors: 0xff}, want: attrFF(16, 1)},
	{name: "PortRcvConstraintErrors", f: mad.PortCountersFields{PortRcvConstraintErrors: 0xff}, want: attrFF(17, 1)},
	{name: "CounterSelect2", f: mad.PortCountersFields{CounterSelect2: 0xff}, want: attrFF(18, 1)},
	{name: "LocalLinkIntegrityErrors", f: mad.PortCountersFields{LocalLinkIntegrityErrors: 0x0f}, want: map[int]byte{19: 0xf0}},
	{name: "ExcessiveBufferOverrunErrors", f: mad.PortCountersFields{ExcessiveBufferOverrunErrors: 0x0f}, want: map[int]byte{19: 0x0f}},
	{name: "VL15Dropped", f: mad.PortCountersFields{VL15Dropped: 0xffff}, want: attrFF(22, 2)},
	{name: "PortXmitData", f: mad.PortCountersFields{PortXmitData: math.MaxUint32}, want: attrFF(24, 4)},
	{name: "PortRcvData", f: mad.PortCountersFields{PortRcvData: math.MaxUint32}, want: attrFF(28, 4)},
	{name: "PortXmitPkts", f: mad.PortCountersFields{PortXmitPkts: math.MaxUint32}, want: attrFF(32, 4)},
	{name: "PortRcvPkts", f: mad.PortCountersFields{PortRcvPkts: math.MaxUint32}, want: attrFF(36, 4)},
	{name: "PortXmitWait", f: mad.PortCountersFields{PortXmitWait: math.MaxUint32}, want: attrFF(40, 4)},
}

func TestPortCountersFieldLayout(t *testing.T) {
	seen := map[string]bool{}
	for _, tt := range portCountersFieldTests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.name, attrOnlyField(&tt.f), "row must set exactly its own field")
			seen[tt.name] = true
			want := attrBytes(mad.PortCountersSize, tt.want)
			got := mad.AppendPortCounters(nil, &tt.f)
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendPortCounters(%+v) = %x, want %x", tt.f, got, want)
			}
			dec, err := mad.DecodePortCounters(want)
			require.NoError(t, err)
			if dec != tt.f {
				t.Errorf("DecodePortCounters(%x) = %+v, want %+v", want, dec, tt.f)
			}
		})
	}
	assert.ElementsMatch(t, attrFieldNames(mad.PortCountersFields{}), attrKeys(seen), "every PortCounters field has a layout row")
}

func TestPortCountersReserved(t *testing.T) {
	all := bytes.Repeat([]byte{0xff}, mad.PortCountersSize)
	f, err := mad.DecodePortCounters(all)
	require.NoError(t, err)
	got := mad.AppendPortCounters(nil, &f)
	want := bytes.Repeat([]byte{0xff}, mad.PortCountersSize)
	want[0], want[20], want[21] = 0, 0, 0 // reserved: byte 0, bytes 20-21
	if !bytes.Equal(got, want) {
		t.Errorf("AppendPortCounters(DecodePortCounters(ff…)) = %x, want %x", got, want)
	}
}

var portCountersExtFieldTests = []struct {
	name string
	f    mad.PortCountersExtendedFields
	want map[int]byte
}{
	{name: "PortSelect", f: mad.PortCountersExtendedFields{PortSelect: 0xff}, want: attrFF(1, 1)},
	{name: "CounterSelect", f: mad.PortCountersExtendedFields{CounterSelect: 0xffff}, want: attrFF(2, 2)},
	{name: "PortXmitData", f: mad.PortCountersExtendedFields{PortXmitData: math.MaxUint64}, want: attrFF(8, 8)},
	{name: "PortRcvData", f: mad.PortCountersExtendedFields{PortRcvData: math.MaxUint64}, want: attrFF(16, 8)},
	{name: "PortXmitPkts", f: mad.PortCountersExtendedFields{PortXmitPkts: math.MaxUint64}, want: attrFF(24, 8)},
	{name: "PortRcvPkts", f: mad.PortCountersExtendedFields{PortRcvPkts: math.MaxUint64}, want: attrFF(32, 8)},
	{name: "PortUnicastXmitPkts", f: mad.PortCountersExtendedFields{PortUnicastXmitPkts: math.MaxUint64}, want: attrFF(40, 8)},
	{name: "PortUnicastRcvPkts", f: mad.PortCountersExtendedFields{PortUnicastRcvPkts: math.MaxUint64}, want: attrFF(48, 8)},
	{name: "PortMulticastXmitPkts", f: mad.PortCountersExtendedFields{PortMulticastXmitPkts: math.MaxUint64}, want: attrFF(56, 8)},
	{name: "PortMulticastRcvPkts", f: mad.PortCountersExtendedFields{PortMulticastRcvPkts: math.MaxUint64}, want: attrFF(64, 8)},
}

func TestPortCountersExtendedFieldLayout(t *testing.T) {
	seen := map[string]bool{}
	for _, tt := range portCountersExtFieldTests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.name, attrOnlyField(&tt.f), "row must set exactly its own field")
			seen[tt.name] = true
			want := attrBytes(mad.PortCountersExtendedSize, tt.want)
			got := mad.AppendPortCountersExtended(nil, &tt.f)
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendPortCountersExtended(%+v) = %x, want %x", tt.f, got, want)
			}
			dec, err := mad.DecodePortCountersExtended(want)
			require.NoError(t, err)
			if dec != tt.f {
				t.Errorf("DecodePortCountersExtended(%x) = %+v, want %+v", want, dec, tt.f)
			}
		})
	}
	assert.ElementsMatch(t, attrFieldNames(mad.PortCountersExtendedFields{}), attrKeys(seen), "every PortCountersExtended field has a layout row")
}

func TestDecodeCountersShort(t *testing.T) {
	for _, n := range []int{0, 1, mad.PortCountersSize - 1} {
		if _, err := mad.DecodePortCounters(make([]byte, n)); err == nil {
			t.Errorf("DecodePortCounters(%d bytes) = nil error, want one", n)
		}
	}
	for _, n := range []int{0, mad.PortCountersSize, mad.PortCountersExtendedSize - 1} {
		if _, err := mad.DecodePortCountersExtended(make([]byte, n)); err == nil {
			t.Errorf("DecodePortCountersExtended(%d bytes) = nil error, want one", n)
		}
	}
	// The attributes sit at the start of the 192-byte PMA data.
	_, err := mad.DecodePortCounters(make([]byte, 192))
	assert.NoError(t, err)
	_, err = mad.DecodePortCountersExtended(make([]byte, 192))
	assert.NoError(t, err)
}

func TestSatAdd(t *testing.T) {
	tests := []struct {
		name string
		got  uint64
		want uint64
	}{
		{name: "u8 fits", got: uint64(mad.SatAdd(uint8(250), 3)), want: 253},
		{name: "u8 exactly max", got: uint64(mad.SatAdd(uint8(250), 5)), want: 255},
		{name: "u8 one past", got: uint64(mad.SatAdd(uint8(250), 6)), want: 255},
		{name: "u8 stuck", got: uint64(mad.SatAdd(uint8(255), 1)), want: 255},
		{name: "u8 add zero", got: uint64(mad.SatAdd(uint8(7), 0)), want: 7},
		{name: "u8 huge n", got: uint64(mad.SatAdd(uint8(0), 1<<40)), want: 255},
		{name: "u8 n wraps to small", got: uint64(mad.SatAdd(uint8(0), 256)), want: 255},
		{name: "u16 fits", got: uint64(mad.SatAdd(uint16(1000), 24)), want: 1024},
		{name: "u16 overflow", got: uint64(mad.SatAdd(uint16(65530), 100)), want: 65535},
		{name: "u16 n is 65536", got: uint64(mad.SatAdd(uint16(0), 65536)), want: 65535},
		{name: "u32 fits", got: uint64(mad.SatAdd(uint32(1<<31), 1<<30)), want: 3 << 30},
		{name: "u32 overflow", got: uint64(mad.SatAdd(uint32(math.MaxUint32-1), 2)), want: math.MaxUint32},
		{name: "u32 n past 32 bits", got: uint64(mad.SatAdd(uint32(0), 1<<32)), want: math.MaxUint32},
		{name: "u64 fits", got: mad.SatAdd(uint64(1<<62), 1<<62), want: 1 << 63},
		{name: "u64 overflow", got: mad.SatAdd(uint64(math.MaxUint64-5), 10), want: math.MaxUint64},
		{name: "u64 exactly max", got: mad.SatAdd(uint64(math.MaxUint64-5), 5), want: math.MaxUint64},
		{name: "u4 fits", got: uint64(mad.SatAdd4(3, 4)), want: 7},
		{name: "u4 exactly max", got: uint64(mad.SatAdd4(14, 1)), want: 15},
		{name: "u4 overflow", got: uint64(mad.SatAdd4(14, 2)), want: 15},
		{name: "u4 stuck", got: uint64(mad.SatAdd4(15, 1)), want: 15},
		{name: "u4 huge n", got: uint64(mad.SatAdd4(0, 1<<63)), want: 15},
		{name: "u4 out-of-range value clamps", got: uint64(mad.SatAdd4(200, 0)), want: 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s: got %d, want %d", tt.name, tt.got, tt.want)
			}
		})
	}
}

func TestCounterSelectBits(t *testing.T) {
	// IBA 16.1.3.5: CounterSelect bit n resets the n-th counter in layout
	// order; CounterSelect2 bit 0 resets PortXmitWait.
	assert.Equal(t, []uint16{1 << 0, 1 << 3, 1 << 9, 1 << 11, 1 << 12, 1 << 15},
		[]uint16{mad.PCSelSymbolError, mad.PCSelRcvErrors, mad.PCSelLocalLinkIntegrityErrors,
			mad.PCSelVL15Dropped, mad.PCSelXmitData, mad.PCSelRcvPkts})
	assert.Equal(t, uint8(1), mad.PCSel2XmitWait)
	assert.Equal(t, []uint16{1 << 0, 1 << 4, 1 << 7},
		[]uint16{mad.PCExtSelXmitData, mad.PCExtSelUnicastXmitPkts, mad.PCExtSelMulticastRcvPkts})
}

func TestPortCountersReset(t *testing.T) {
	full := mad.PortCountersFields{
		PortSelect: 3, CounterSelect: 0x1234,
		SymbolErrorCounter: 1, LinkErrorRecoveryCounter: 2, LinkDownedCounter: 3, PortRcvErrors: 4,
		PortRcvRemotePhysicalErrors: 5, PortRcvSwitchRelayErrors: 6, PortXmitDiscards: 7,
		PortXmitConstraintErrors: 8, PortRcvConstraintErrors: 9, CounterSelect2: 1,
		LocalLinkIntegrityErrors: 10, ExcessiveBufferOverrunErrors: 11, VL15Dropped: 12,
		PortXmitData: 13, PortRcvData: 14, PortXmitPkts: 15, PortRcvPkts: 16, PortXmitWait: 17,
	}
	tests := []struct {
		name string
		sel  uint16
		sel2 uint8
		want func(f *mad.PortCountersFields)
	}{
		{name: "nothing", want: func(*mad.PortCountersFields) {}},
		{name: "symbol errors and rcv pkts", sel: mad.PCSelSymbolError | mad.PCSelRcvPkts,
			want: func(f *mad.PortCountersFields) { f.SymbolErrorCounter, f.PortRcvPkts = 0, 0 }},
		{name: "4-bit counters", sel: mad.PCSelLocalLinkIntegrityErrors | mad.PCSelExcessiveBufferOverrunErrors,
			want: func(f *mad.PortCountersFields) { f.LocalLinkIntegrityErrors, f.ExcessiveBufferOverrunErrors = 0, 0 }},
		{name: "xmit wait only", sel2: mad.PCSel2XmitWait,
			want: func(f *mad.PortCountersFields) { f.PortXmitWait = 0 }},
		{name: "everything", sel: 0xffff, sel2: 0xff, want: func(f *mad.PortCountersFields) {
			*f = mad.PortCountersFields{PortSelect: 3, CounterSelect: 0x1234, CounterSelect2: 1}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := full, full
			got.Reset(tt.sel, tt.sel2)
			tt.want(&want)
			if got != want {
				t.Errorf("Reset(%#x, %#x) = %+v, want %+v", tt.sel, tt.sel2, got, want)
			}
		})
	}
}

func TestPortCountersExtendedReset(t *testing.T) {
	full := mad.PortCountersExtendedFields{PortSelect: 1, CounterSelect: 0xff,
		PortXmitData: 1, PortRcvData: 2, PortXmitPkts: 3, PortRcvPkts: 4,
		PortUnicastXmitPkts: 5, PortUnicastRcvPkts: 6, PortMulticastXmitPkts: 7, PortMulticastRcvPkts: 8}
	got := full
	got.Reset(mad.PCExtSelRcvData | mad.PCExtSelMulticastXmitPkts)
	want := full
	want.PortRcvData, want.PortMulticastXmitPkts = 0, 0
	assert.Equal(t, want, got)
	got.Reset(0xffff)
	assert.Equal(t, mad.PortCountersExtendedFields{PortSelect: 1, CounterSelect: 0xff}, got)
}
