package mad_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

// attrBytes returns size zero bytes with the given bytes set: the expected
// encoding of an attribute, written from the spec's layout rather than from
// the code under test.
func attrBytes(size int, set map[int]byte) []byte {
	b := make([]byte, size)
	for off, v := range set {
		b[off] = v
	}
	return b
}

// attrFF returns a map setting bytes [from, from+n) to 0xff.
func attrFF(from, n int) map[int]byte {
	m := make(map[int]byte, n)
	for i := from; i < from+n; i++ {
		m[i] = 0xff
	}
	return m
}

// attrOnlyField returns the name of the single non-zero field of the struct v
// points to, or "" when there is not exactly one.
func attrOnlyField(v any) string {
	rv := reflect.ValueOf(v).Elem()
	name := ""
	for i := 0; i < rv.NumField(); i++ {
		if !rv.Field(i).IsZero() {
			if name != "" {
				return ""
			}
			name = rv.Type().Field(i).Name
		}
	}
	return name
}

// attrFieldNames lists the field names of the struct type of v.
func attrFieldNames(v any) []string {
	t := reflect.TypeOf(v)
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = t.Field(i).Name
	}
	return names
}

// portInfoFieldTests sets each PortInfo field, alone, to all ones (or past
// its width, to show the extra bits are dropped); want is where IBA 14.2.5.6
// puts it, cross-checked with libibmad's field table.
var portInfoFieldTests = []struct {
	name string
	f    mad.PortInfoFields
	want map[int]byte
	back mad.PortInfoFields // the value read back, when not f itself
}{
	{name: "MKey", f: mad.PortInfoFields{MKey: ^uint64(0)}, want: attrFF(0, 8)},
	{name: "GIDPrefix", f: mad.PortInfoFields{GIDPrefix: ^uint64(0)}, want: attrFF(8, 8)},
	{name: "LID", f: mad.PortInfoFields{LID: 0xffff}, want: attrFF(16, 2)},
	{name: "MasterSMLID", f: mad.PortInfoFields{MasterSMLID: 0xffff}, want: attrFF(18, 2)},
	{name: "CapabilityMask", f: mad.PortInfoFields{CapabilityMask: ^uint32(0)}, want: attrFF(20, 4)},
	{name: "DiagCode", f: mad.PortInfoFields{DiagCode: 0xffff}, want: attrFF(24, 2)},
	{name: "MKeyLeasePeriod", f: mad.PortInfoFields{MKeyLeasePeriod: 0xffff}, want: attrFF(26, 2)},
	{name: "LocalPortNum", f: mad.PortInfoFields{LocalPortNum: 0xff}, want: attrFF(28, 1)},
	{name: "LinkWidthEnabled", f: mad.PortInfoFields{LinkWidthEnabled: 0xff}, want: attrFF(29, 1)},
	{name: "LinkWidthSupported", f: mad.PortInfoFields{LinkWidthSupported: 0xff}, want: attrFF(30, 1)},
	{name: "LinkWidthActive", f: mad.PortInfoFields{LinkWidthActive: 0xff}, want: attrFF(31, 1)},
	{name: "LinkSpeedSupported", f: mad.PortInfoFields{LinkSpeedSupported: 0xff}, want: map[int]byte{32: 0xf0},
		back: mad.PortInfoFields{LinkSpeedSupported: 0x0f}},
	{name: "PortState", f: mad.PortInfoFields{PortState: 0x0f}, want: map[int]byte{32: 0x0f}},
	{name: "PortPhysicalState", f: mad.PortInfoFields{PortPhysicalState: 0x0f}, want: map[int]byte{33: 0xf0}},
	{name: "LinkDownDefaultState", f: mad.PortInfoFields{LinkDownDefaultState: 0x0f}, want: map[int]byte{33: 0x0f}},
	{name: "MKeyProtectBits", f: mad.PortInfoFields{MKeyProtectBits: 0xff}, want: map[int]byte{34: 0xc0},
		back: mad.PortInfoFields{MKeyProtectBits: 3}},
	{name: "LMC", f: mad.PortInfoFields{LMC: 0xff}, want: map[int]byte{34: 0x07},
		back: mad.PortInfoFields{LMC: 7}},
	{name: "LinkSpeedActive", f: mad.PortInfoFields{LinkSpeedActive: 0x0f}, want: map[int]byte{35: 0xf0}},
	{name: "LinkSpeedEnabled", f: mad.PortInfoFields{LinkSpeedEnabled: 0x0f}, want: map[int]byte{35: 0x0f}},
	{name: "NeighborMTU", f: mad.PortInfoFields{NeighborMTU: 0x0f}, want: map[int]byte{36: 0xf0}},
	{name: "MasterSMSL", f: mad.PortInfoFields{MasterSMSL: 0x0f}, want: map[int]byte{36: 0x0f}},
	{name: "VLCap", f: mad.PortInfoFields{VLCap: 0x0f}, want: map[int]byte{37: 0xf0}},
	{name: "InitType", f: mad.PortInfoFields{InitType: 0x0f}, want: map[int]byte{37: 0x0f}},
	{name: "VLHighLimit", f: mad.PortInfoFields{VLHighLimit: 0xff}, want: attrFF(38, 1)},
	{name: "VLArbitrationHighCap", f: mad.PortInfoFields{VLArbitrationHighCap: 0xff}, want: attrFF(39, 1)},
	{name: "VLArbitrationLowCap", f: mad.PortInfoFields{VLArbitrationLowCap: 0xff}, want: attrFF(40, 1)},
	{name: "InitTypeReply", f: mad.PortInfoFields{InitTypeReply: 0x0f}, want: map[int]byte{41: 0xf0}},
	{name: "MTUCap", f: mad.PortInfoFields{MTUCap: 0x0f}, want: map[int]byte{41: 0x0f}},
	{name: "VLStallCount", f: mad.PortInfoFields{VLStallCount: 0x07}, want: map[int]byte{42: 0xe0}},
	{name: "HOQLife", f: mad.PortInfoFields{HOQLife: 0xff}, want: map[int]byte{42: 0x1f},
		back: mad.PortInfoFields{HOQLife: 0x1f}},
	{name: "OperationalVLs", f: mad.PortInfoFields{OperationalVLs: 0x0f}, want: map[int]byte{43: 0xf0}},
	{name: "PartitionEnforcementInbound", f: mad.PortInfoFields{PartitionEnforcementInbound: true}, want: map[int]byte{43: 0x08}},
	{name: "PartitionEnforcementOutbound", f: mad.PortInfoFields{PartitionEnforcementOutbound: true}, want: map[int]byte{43: 0x04}},
	{name: "FilterRawInbound", f: mad.PortInfoFields{FilterRawInbound: true}, want: map[int]byte{43: 0x02}},
	{name: "FilterRawOutbound", f: mad.PortInfoFields{FilterRawOutbound: true}, want: map[int]byte{43: 0x01}},
	{name: "MKeyViolations", f: mad.PortInfoFields{MKeyViolations: 0xffff}, want: attrFF(44, 2)},
	{name: "PKeyViolations", f: mad.PortInfoFields{PKeyViolations: 0xffff}, want: attrFF(46, 2)},
	{name: "QKeyViolations", f: mad.PortInfoFields{QKeyViolations: 0xffff}, want: attrFF(48, 2)},
	{name: "GUIDCap", f: mad.PortInfoFields{GUIDCap: 0xff}, want: attrFF(50, 1)},
	{name: "ClientReregister", f: mad.PortInfoFields{ClientReregister: true}, want: map[int]byte{51: 0x80}},
	{name: "MulticastPKeyTrapSuppressionEnabled", f: mad.PortInfoFields{MulticastPKeyTrapSuppressionEnabled: 3}, want: map[int]byte{51: 0x60}},
	{name: "SubnetTimeOut", f: mad.PortInfoFields{SubnetTimeOut: 0x1f}, want: map[int]byte{51: 0x1f}},
	{name: "RespTimeValue", f: mad.PortInfoFields{RespTimeValue: 0xff}, want: map[int]byte{52: 0x1f},
		back: mad.PortInfoFields{RespTimeValue: 0x1f}},
	{name: "LocalPhyErrors", f: mad.PortInfoFields{LocalPhyErrors: 0x0f}, want: map[int]byte{53: 0xf0}},
	{name: "OverrunErrors", f: mad.PortInfoFields{OverrunErrors: 0x0f}, want: map[int]byte{53: 0x0f}},
	{name: "MaxCreditHint", f: mad.PortInfoFields{MaxCreditHint: 0xffff}, want: attrFF(54, 2)},
	// libibmad bits 449-455: byte 56 below its reserved top bit.
	{name: "LinkSpeedExtActive2", f: mad.PortInfoFields{LinkSpeedExtActive2: 0xff}, want: map[int]byte{56: 0x60},
		back: mad.PortInfoFields{LinkSpeedExtActive2: 3}},
	{name: "LinkSpeedExtSupported2", f: mad.PortInfoFields{LinkSpeedExtSupported2: 0xff}, want: map[int]byte{56: 0x18},
		back: mad.PortInfoFields{LinkSpeedExtSupported2: 3}},
	{name: "LinkSpeedExtEnabled2", f: mad.PortInfoFields{LinkSpeedExtEnabled2: 0xff}, want: map[int]byte{56: 0x07},
		back: mad.PortInfoFields{LinkSpeedExtEnabled2: 7}},
	{name: "LinkRoundTripLatency", f: mad.PortInfoFields{LinkRoundTripLatency: ^uint32(0)}, want: attrFF(57, 3),
		back: mad.PortInfoFields{LinkRoundTripLatency: 0xffffff}},
	{name: "CapabilityMask2", f: mad.PortInfoFields{CapabilityMask2: 0xffff}, want: attrFF(60, 2)},
	{name: "LinkSpeedExtActive", f: mad.PortInfoFields{LinkSpeedExtActive: 0x0f}, want: map[int]byte{62: 0xf0}},
	{name: "LinkSpeedExtSupported", f: mad.PortInfoFields{LinkSpeedExtSupported: 0x0f}, want: map[int]byte{62: 0x0f}},
	{name: "LinkSpeedExtEnabled", f: mad.PortInfoFields{LinkSpeedExtEnabled: 0x1f}, want: map[int]byte{63: 0x1f}},
}

func TestPortInfoFieldLayout(t *testing.T) {
	seen := map[string]bool{}
	for _, tt := range portInfoFieldTests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.name, attrOnlyField(&tt.f), "row must set exactly its own field")
			seen[tt.name] = true
			want := attrBytes(mad.PortInfoSize, tt.want)
			got := mad.AppendPortInfo(nil, &tt.f)
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendPortInfo(%+v) = %x, want %x", tt.f, got, want)
			}
			back := tt.back
			if attrOnlyField(&back) == "" {
				back = tt.f
			}
			dec, err := mad.DecodePortInfo(want)
			require.NoError(t, err)
			if dec != back {
				t.Errorf("DecodePortInfo(%x) = %+v, want %+v", want, dec, back)
			}
		})
	}
	assert.ElementsMatch(t, attrFieldNames(mad.PortInfoFields{}), attrKeys(seen), "every PortInfo field has a layout row")
}

func attrKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestPortInfoReserved decodes all ones and re-encodes: only the reserved
// bits of IBA 14.2.5.6 (byte 34 bits 5:3, byte 52 bits 7:5, byte 56 bit 7
// (IBA 1.5 took its other bits for LinkSpeedExt2), byte 63 bits 7:5) come back zero.
func TestPortInfoReserved(t *testing.T) {
	all := bytes.Repeat([]byte{0xff}, mad.PortInfoSize)
	f, err := mad.DecodePortInfo(all)
	require.NoError(t, err)
	got := mad.AppendPortInfo(nil, &f)
	want := bytes.Repeat([]byte{0xff}, mad.PortInfoSize)
	want[34], want[52], want[56], want[63] = 0xc7, 0x1f, 0x7f, 0x1f
	if !bytes.Equal(got, want) {
		t.Errorf("AppendPortInfo(DecodePortInfo(ff…)) = %x, want %x", got, want)
	}
}

func TestPortInfoViewInPlace(t *testing.T) {
	// A 64-byte SMP data area inside a larger buffer: setters write through.
	buf := make([]byte, 128)
	p := mad.PortInfo(buf[64:])
	require.True(t, p.IsValid())
	p.SetLID(0x1234)
	p.SetPortState(mad.PortStateArmed)
	p.SetLinkSpeedSupported(mad.LinkSpeedSDR | mad.LinkSpeedDDR)
	p.SetLMC(2)
	p.SetMKeyProtectBits(1)
	assert.Equal(t, []byte{0x12, 0x34}, buf[64+16:64+18])
	assert.Equal(t, byte(0x33), buf[64+32], "LinkSpeedSupported SDR|DDR in the top nibble, Armed in the bottom")
	assert.Equal(t, byte(0x42), buf[64+34], "M_KeyProtectBits 1 at bits 7:6, LMC 2 at bits 2:0")
	p.SetPortState(mad.PortStateActive)
	assert.Equal(t, byte(0x34), buf[64+32], "SetPortState keeps LinkSpeedSupported")
	assert.Equal(t, mad.LinkSpeedSDR|mad.LinkSpeedDDR, p.LinkSpeedSupported())
	assert.Equal(t, mad.PortStateActive, p.PortState())
}

func TestDecodePortInfoShort(t *testing.T) {
	for _, n := range []int{0, 1, mad.PortInfoSize - 1} {
		_, err := mad.DecodePortInfo(make([]byte, n))
		if err == nil {
			t.Errorf("DecodePortInfo(%d bytes) = nil error, want one", n)
		}
		assert.False(t, mad.PortInfo(make([]byte, n)).IsValid())
	}
	_, err := mad.DecodePortInfo(make([]byte, mad.PortInfoSize))
	assert.NoError(t, err)
}

func TestPortInfoEnumStrings(t *testing.T) {
	tests := []struct {
		name string
		v    interface{ String() string }
		want string
	}{
		{name: "PortStateNoChange", v: mad.PortStateNoChange, want: "NoChange"},
		{name: "PortStateDown", v: mad.PortStateDown, want: "Down"},
		{name: "PortStateInit", v: mad.PortStateInit, want: "Init"},
		{name: "PortStateArmed", v: mad.PortStateArmed, want: "Armed"},
		{name: "PortStateActive", v: mad.PortStateActive, want: "Active"},
		{name: "PortStateReserved", v: mad.PortState(9), want: "PortState(9)"},
		{name: "PhysNoChange", v: mad.PhysStateNoChange, want: "NoChange"},
		{name: "PhysSleep", v: mad.PhysStateSleep, want: "Sleep"},
		{name: "PhysPolling", v: mad.PhysStatePolling, want: "Polling"},
		{name: "PhysDisabled", v: mad.PhysStateDisabled, want: "Disabled"},
		{name: "PhysTraining", v: mad.PhysStatePortConfigurationTraining, want: "PortConfigurationTraining"},
		{name: "PhysLinkUp", v: mad.PhysStateLinkUp, want: "LinkUp"},
		{name: "PhysLinkErrorRecovery", v: mad.PhysStateLinkErrorRecovery, want: "LinkErrorRecovery"},
		{name: "PhysPhyTest", v: mad.PhysStatePhyTest, want: "PhyTest"},
		{name: "PhysReserved", v: mad.PhysState(8), want: "PhysState(8)"},
		{name: "Width4X", v: mad.LinkWidth4X, want: "4X"},
		{name: "WidthSet", v: mad.LinkWidth1X | mad.LinkWidth4X | mad.LinkWidth12X, want: "1X|4X|12X"},
		{name: "WidthReservedBit", v: mad.LinkWidth8X | 0x20, want: "8X|LinkWidth(0x20)"},
		{name: "Width2X", v: mad.LinkWidth2X | mad.LinkWidth4X, want: "4X|2X"},
		{name: "WidthNone", v: mad.LinkWidthNoChange, want: "0"},
		{name: "SpeedQDR", v: mad.LinkSpeedQDR, want: "QDR"},
		{name: "SpeedSet", v: mad.LinkSpeedSDR | mad.LinkSpeedDDR, want: "SDR|DDR"},
		{name: "SpeedAllGenerations", v: mad.LinkSpeedQDR | mad.LinkSpeedEDR | mad.LinkSpeedXDR, want: "QDR|EDR|XDR"},
		{name: "SpeedReservedBits", v: mad.LinkSpeed(0x208), want: "LinkSpeed(0x208)"},
		{name: "SpeedExtNDR", v: mad.LinkSpeedExtNDR | mad.LinkSpeedExtHDR, want: "HDR|NDR"},
		{name: "SpeedExtDisabled", v: mad.LinkSpeedExtDisabled, want: "Disabled"},
		{name: "SpeedExtAll", v: mad.LinkSpeedExtSetToSupported, want: "SetToSupported"},
		{name: "SpeedExt2XDR", v: mad.LinkSpeedExt2XDR, want: "XDR"},
		{name: "MTU256", v: mad.MTU256, want: "256"},
		{name: "MTU4096", v: mad.MTU4096, want: "4096"},
		{name: "MTUReserved", v: mad.MTU(0), want: "MTU(0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.String(); got != tt.want {
				t.Errorf("%#v.String() = %q, want %q", tt.v, got, tt.want)
			}
		})
	}
}

func TestDataRate(t *testing.T) {
	tests := []struct {
		name    string
		w       mad.LinkWidth
		s       mad.LinkSpeed
		want    uint64
		wantErr bool
	}{
		{name: "1X SDR", w: mad.LinkWidth1X, s: mad.LinkSpeedSDR, want: 2_000_000_000},
		{name: "4X SDR", w: mad.LinkWidth4X, s: mad.LinkSpeedSDR, want: 8_000_000_000},
		{name: "4X DDR", w: mad.LinkWidth4X, s: mad.LinkSpeedDDR, want: 16_000_000_000},
		{name: "4X QDR", w: mad.LinkWidth4X, s: mad.LinkSpeedQDR, want: 32_000_000_000},
		{name: "8X DDR", w: mad.LinkWidth8X, s: mad.LinkSpeedDDR, want: 32_000_000_000},
		{name: "12X QDR", w: mad.LinkWidth12X, s: mad.LinkSpeedQDR, want: 96_000_000_000},
		// 64b/66b: 14.0625 × 64/66 = 13.636 Gb/s a lane, 25.78125 × 64/66 = 25.
		{name: "4X FDR", w: mad.LinkWidth4X, s: mad.LinkSpeedFDR, want: 54_545_454_545},
		{name: "4X EDR", w: mad.LinkWidth4X, s: mad.LinkSpeedEDR, want: 100_000_000_000},
		// RS(544,514) FEC under 256b/257b: 16/17 of the line.
		{name: "4X HDR", w: mad.LinkWidth4X, s: mad.LinkSpeedHDR, want: 200_000_000_000},
		{name: "2X NDR", w: mad.LinkWidth2X, s: mad.LinkSpeedNDR, want: 200_000_000_000},
		{name: "4X NDR", w: mad.LinkWidth4X, s: mad.LinkSpeedNDR, want: 400_000_000_000},
		{name: "4X XDR", w: mad.LinkWidth4X, s: mad.LinkSpeedXDR, want: 800_000_000_000},
		{name: "12X XDR", w: mad.LinkWidth12X, s: mad.LinkSpeedXDR, want: 2_400_000_000_000},
		{name: "no width", w: 0, s: mad.LinkSpeedSDR, wantErr: true},
		{name: "two speeds", w: mad.LinkWidth4X, s: mad.LinkSpeedHDR | mad.LinkSpeedNDR, wantErr: true},
		{name: "two widths", w: mad.LinkWidth1X | mad.LinkWidth4X, s: mad.LinkSpeedSDR, wantErr: true},
		{name: "no speed", w: mad.LinkWidth4X, s: 0, wantErr: true},
		{name: "reserved speed", w: mad.LinkWidth4X, s: 8, wantErr: true},
		{name: "set to supported", w: mad.LinkWidthSetToSupported, s: mad.LinkSpeedSetToSupported, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mad.DataRate(tt.w, tt.s)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("DataRate(%v, %v) = %d, %v; want %d, error %v", tt.w, tt.s, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestMTU(t *testing.T) {
	tests := []struct {
		name  string
		m     mad.MTU
		bytes int
	}{
		{name: "256", m: mad.MTU256, bytes: 256},
		{name: "512", m: mad.MTU512, bytes: 512},
		{name: "1024", m: mad.MTU1024, bytes: 1024},
		{name: "2048", m: mad.MTU2048, bytes: 2048},
		{name: "4096", m: mad.MTU4096, bytes: 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.bytes, tt.m.Bytes(), "MTU(%d).Bytes()", tt.m)
			m, ok := mad.MTUFromBytes(tt.bytes)
			assert.True(t, ok)
			assert.Equal(t, tt.m, m, "MTUFromBytes(%d)", tt.bytes)
		})
	}
	assert.Equal(t, mad.MTU(1), mad.MTU256, "IBA MTU codes start at 1")
	for _, m := range []mad.MTU{0, 6, 15} {
		assert.Zero(t, m.Bytes(), "reserved MTU(%d).Bytes()", m)
	}
	for _, n := range []int{0, 128, 1500, 8192} {
		_, ok := mad.MTUFromBytes(n)
		assert.False(t, ok, "MTUFromBytes(%d)", n)
	}
}

func TestNumDataVLs(t *testing.T) {
	want := map[uint8]int{0: 0, 1: 1, 2: 2, 3: 4, 4: 8, 5: 15, 6: 0, 15: 0}
	for code, n := range want {
		if got := mad.NumDataVLs(code); got != n {
			t.Errorf("NumDataVLs(%d) = %d, want %d", code, got, n)
		}
	}
}

func TestLinkWidthLanesAndBaud(t *testing.T) {
	lanes := map[mad.LinkWidth]int{mad.LinkWidth1X: 1, mad.LinkWidth4X: 4, mad.LinkWidth8X: 8, mad.LinkWidth12X: 12, 0: 0, 3: 0}
	for w, n := range lanes {
		assert.Equal(t, n, w.Lanes(), "LinkWidth(%#x).Lanes()", uint8(w))
	}
	baud := map[mad.LinkSpeed]uint64{mad.LinkSpeedSDR: 2.5e9, mad.LinkSpeedDDR: 5e9, mad.LinkSpeedQDR: 10e9, 0: 0, 3: 0}
	for s, n := range baud {
		assert.Equal(t, n, s.Baud(), "LinkSpeed(%#x).Baud()", uint8(s))
	}
	// Spec bit values (IBA 14.2.5.6): widths 1,2,4,8; speeds 1,2,4.
	assert.Equal(t, []mad.LinkWidth{1, 2, 4, 8}, []mad.LinkWidth{mad.LinkWidth1X, mad.LinkWidth4X, mad.LinkWidth8X, mad.LinkWidth12X})
	assert.Equal(t, []mad.LinkSpeed{1, 2, 4}, []mad.LinkSpeed{mad.LinkSpeedSDR, mad.LinkSpeedDDR, mad.LinkSpeedQDR})
}
