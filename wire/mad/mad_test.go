package mad_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

// madAllOnes is a header with every field at its largest value, so a
// round trip catches fields that overlap or lose bits.
var madAllOnes = mad.MADFields{
	BaseVersion:   0xff,
	MgmtClass:     0xff,
	ClassVersion:  0xff,
	Method:        0xff,
	Status:        0xffff,
	ClassSpecific: 0xffff,
	TransactionID: 0xffffffffffffffff,
	AttrID:        0xffff,
	AttrModifier:  0xffffffff,
}

func TestMADRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		f    mad.MADFields
	}{
		{"zero", mad.MADFields{}},
		{"all ones", madAllOnes},
		{"SubnGet NodeInfo", mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnLID, ClassVersion: 1,
			Method: mad.MethodGet, TransactionID: 0x0102030405060708, AttrID: mad.AttrNodeInfo}},
		{"PMA GetResp busy", mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassPerfMgt, ClassVersion: 1,
			Method: mad.MethodGetResp, Status: mad.StatusBusy, AttrID: mad.AttrPortCounters, AttrModifier: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := bytes.Repeat([]byte{0xa5}, mad.MADDataSize)
			b := mad.AppendMAD(nil, &tt.f, data)
			require.Len(t, b, mad.MADSize)
			got, err := mad.DecodeMAD(b)
			require.NoError(t, err)
			if got != tt.f {
				t.Errorf("DecodeMAD(AppendMAD(%+v)) = %+v, want %+v", tt.f, got, tt.f)
			}
			assert.Equal(t, data, mad.MAD(b).Data())
			assert.Equal(t, []byte{0, 0}, b[18:20], "reserved field")
		})
	}
}

// TestMADLayout checks each field lands where IBA 13.4.2 puts it, with
// offsets and byte order written out by hand from the spec.
func TestMADLayout(t *testing.T) {
	tests := []struct {
		name string
		set  func(mad.MAD)
		off  int
		want []byte
	}{
		{"BaseVersion", func(m mad.MAD) { m.SetBaseVersion(0x01) }, 0, []byte{0x01}},
		{"MgmtClass", func(m mad.MAD) { m.SetMgmtClass(mad.ClassSubnDirected) }, 1, []byte{0x81}},
		{"ClassVersion", func(m mad.MAD) { m.SetClassVersion(0x02) }, 2, []byte{0x02}},
		{"Method", func(m mad.MAD) { m.SetMethod(mad.MethodGetResp) }, 3, []byte{0x81}},
		{"Status", func(m mad.MAD) { m.SetStatus(0x1234) }, 4, []byte{0x12, 0x34}},
		{"ClassSpecific", func(m mad.MAD) { m.SetClassSpecific(0x5678) }, 6, []byte{0x56, 0x78}},
		{"TransactionID", func(m mad.MAD) { m.SetTransactionID(0x0102030405060708) }, 8,
			[]byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{"AttrID", func(m mad.MAD) { m.SetAttrID(0x0015) }, 16, []byte{0x00, 0x15}},
		{"AttrModifier", func(m mad.MAD) { m.SetAttrModifier(0xa1b2c3d4) }, 20, []byte{0xa1, 0xb2, 0xc3, 0xd4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make(mad.MAD, mad.MADSize)
			tt.set(b)
			want := make([]byte, mad.MADSize)
			copy(want[tt.off:], tt.want)
			if !bytes.Equal(b, want) {
				t.Errorf("after Set%s: bytes %x, want %x at %d and zeros elsewhere", tt.name, b[:24], tt.want, tt.off)
			}
		})
	}
}

func TestMADIsResponse(t *testing.T) {
	b := mad.AppendMAD(nil, &mad.MADFields{Method: mad.MethodGetResp}, nil)
	assert.True(t, mad.MAD(b).IsResponse())
	mad.MAD(b).SetMethod(mad.MethodGet)
	assert.False(t, mad.MAD(b).IsResponse())
	assert.Equal(t, mad.MethodTrapRepress, (mad.MethodTrapRepress | mad.MethodResponse).Request())
}

func TestDecodeMADShort(t *testing.T) {
	for _, n := range []int{0, 1, mad.MADHeaderSize, mad.MADSize - 1} {
		_, err := mad.DecodeMAD(make([]byte, n))
		if !errors.Is(err, mad.ErrTruncated) {
			t.Errorf("DecodeMAD(%d bytes) = %v, want ErrTruncated", n, err)
		}
	}
}

func TestAppendMADKeepsPrefix(t *testing.T) {
	prefix := []byte{1, 2, 3}
	b := mad.AppendMAD(prefix, &mad.MADFields{BaseVersion: 1}, nil)
	require.Len(t, b, 3+mad.MADSize)
	assert.Equal(t, prefix, b[:3])
	assert.Equal(t, uint8(1), mad.MAD(b[3:]).BaseVersion())
}

func TestStatusString(t *testing.T) {
	tests := []struct {
		name string
		s    mad.Status
		want string
	}{
		{"ok", mad.StatusOK, "OK"},
		{"busy", mad.StatusBusy, "Busy"},
		{"redirect", mad.StatusRedirect, "Redirect"},
		{"bad version", mad.StatusBadVersion, "BadVersion"},
		{"method", mad.StatusMethodUnsupported, "MethodUnsupported"},
		{"method attr", mad.StatusMethodAttrUnsupported, "MethodAttrUnsupported"},
		{"invalid field", mad.StatusInvalidField, "InvalidField"},
		{"busy and invalid", mad.StatusBusy | mad.StatusInvalidField, "Busy|InvalidField"},
		{"reserved code", 4 << 2, "Code(4)"},
		{"class specific", 0x0100 | mad.StatusBadVersion, "BadVersion|0x0100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.String(); got != tt.want {
				t.Errorf("Status(%#04x).String() = %q, want %q", uint16(tt.s), got, tt.want)
			}
		})
	}
}

// TestStatusValues pins the status codes to IBA 13.4.7: bit 0
// busy, bit 1 redirect, bits 2-4 the invalid-field code.
func TestStatusValues(t *testing.T) {
	tests := []struct {
		name string
		s    mad.Status
		want uint16
	}{
		{"busy", mad.StatusBusy, 0x0001},
		{"redirect", mad.StatusRedirect, 0x0002},
		{"bad version", mad.StatusBadVersion, 0x0004},
		{"method unsupported", mad.StatusMethodUnsupported, 0x0008},
		{"method/attr unsupported", mad.StatusMethodAttrUnsupported, 0x000c},
		{"invalid field", mad.StatusInvalidField, 0x001c},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, uint16(tt.s))
			assert.Equal(t, tt.s&^3, (tt.s | 0xff03).Code(), "Code keeps only bits 2-4")
		})
	}
	assert.True(t, (mad.StatusBusy | mad.StatusInvalidField).Busy())
	assert.False(t, mad.StatusInvalidField.Busy())
	assert.True(t, mad.StatusRedirect.Redirect())
}

func TestEnumStrings(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"class LID", mad.ClassSubnLID.String(), "SubnLID"},
		{"class DR", mad.ClassSubnDirected.String(), "SubnDirected"},
		{"class PMA", mad.ClassPerfMgt.String(), "PerfMgt"},
		{"class unknown", mad.MgmtClass(0x30).String(), "MgmtClass(0x30)"},
		{"method Get", mad.MethodGet.String(), "Get"},
		{"method GetResp", mad.MethodGetResp.String(), "GetResp"},
		{"method TrapRepress", mad.MethodTrapRepress.String(), "TrapRepress"},
		{"method unknown", mad.Method(0x44).String(), "Method(0x44)"},
		{"attr NodeInfo", mad.AttrNodeInfo.String(), "NodeInfo"},
		{"attr 0x12 in SM", mad.AttrID(0x12).Name(mad.ClassSubnDirected), "SwitchInfo"},
		{"attr 0x12 in PMA", mad.AttrID(0x12).Name(mad.ClassPerfMgt), "PortCounters"},
		{"attr unknown", mad.AttrID(0xff01).String(), "AttrID(0xff01)"},
		{"node type", mad.NodeTypeSwitch.String(), "Switch"},
		{"sm state", mad.SMStateMaster.String(), "Master"},
		{"notice type", mad.NoticeUrgent.String(), "Urgent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("String() = %q, want %q", tt.got, tt.want)
			}
		})
	}
	assert.True(t, mad.ClassSubnLID.IsSubn())
	assert.True(t, mad.ClassSubnDirected.IsSubn())
	assert.False(t, mad.ClassPerfMgt.IsSubn())
}
