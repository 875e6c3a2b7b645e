package mad_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

// TestARInfoLayout: every field lands at the offset the layout gives, and
// decodes back; reserved bits are dropped.
func TestARInfoLayout(t *testing.T) {
	f := mad.ARInfoFields{ModesSupported: mad.ARModesAll, AFISupported: true, GroupCap: 0x0102,
		LIDCap: 0xc000, GroupTop: 0x0304, Enable: true, Mode: mad.ARAFI, Threshold: 75, AFCVL: 3}
	want := []byte{0x0f, 0x80, 0x01, 0x02, 0xc0, 0x00, 0x03, 0x04, 0x80, 0x03, 75, 0x03, 0, 0, 0, 0}
	got := mad.AppendARInfo(nil, &f)
	assert.Equal(t, want, got)
	back, err := mad.DecodeARInfo(got)
	require.NoError(t, err)
	assert.Equal(t, f, back)

	noisy := append([]byte(nil), want...)
	noisy[1] |= 0x7f  // reserved capability bits
	noisy[8] |= 0x7f  // reserved flags
	noisy[11] |= 0xf0 // reserved above AFCVL
	noisy[15] = 0xff
	back, err = mad.DecodeARInfo(noisy)
	require.NoError(t, err)
	assert.Equal(t, f, back)

	_, err = mad.DecodeARInfo(want[:mad.ARInfoSize-1])
	assert.ErrorIs(t, err, mad.ErrTruncated)
}

// TestARGroupTableLayout: group i of a block is the i-th 32-byte mask,
// port n bit n%8 of its byte 31-n/8.
func TestARGroupTableLayout(t *testing.T) {
	var f mad.ARGroupTableFields
	f.Groups[0] = mad.PortMaskOf(1, 2)
	f.Groups[6] = mad.PortMaskOf(255, 8)
	b := mad.AppendARGroupTable(nil, &f)
	require.Len(t, b, mad.ARGroupTableSize)
	assert.EqualValues(t, 0x06, b[31], "ports 1 and 2 in group 0's last byte")
	assert.EqualValues(t, 0x80, b[6*32], "port 255 in group 6's first byte")
	assert.EqualValues(t, 0x01, b[6*32+30], "port 8")
	back, err := mad.DecodeARGroupTable(b)
	require.NoError(t, err)
	assert.Equal(t, f, back)
	assert.LessOrEqual(t, mad.ARGroupTableSize, mad.ARDataSize, "a block fits the MAD")
	_, err = mad.DecodeARGroupTable(b[:10])
	assert.ErrorIs(t, err, mad.ErrTruncated)
}

// TestARLIDTableLayout: LID i of a block is the big-endian word at 2i.
func TestARLIDTableLayout(t *testing.T) {
	var f mad.ARLIDTableFields
	f.Groups[0], f.Groups[63] = 1, 0xabcd
	b := mad.AppendARLIDTable(nil, &f)
	require.Len(t, b, mad.ARLIDTableSize)
	assert.Equal(t, []byte{0, 1}, b[:2])
	assert.Equal(t, []byte{0xab, 0xcd}, b[126:])
	back, err := mad.DecodeARLIDTable(b)
	require.NoError(t, err)
	assert.Equal(t, f, back)
	assert.LessOrEqual(t, mad.ARLIDTableSize, mad.ARDataSize)
	_, err = mad.DecodeARLIDTable(b[:127])
	assert.ErrorIs(t, err, mad.ErrTruncated)
}

func TestPortMask(t *testing.T) {
	m := mad.PortMaskOf(0, 3, 17, 255)
	assert.Equal(t, []uint8{0, 3, 17, 255}, m.Ports())
	assert.True(t, m.Has(17))
	assert.False(t, m.Has(16))
	assert.False(t, m.IsZero())
	var none mad.PortMask
	assert.True(t, none.IsZero())
	assert.Nil(t, none.Ports())
}

// TestARMAD: the header says class 0x0A version 1, the data follows it,
// and a MAD of another class or too short is refused.
func TestARMAD(t *testing.T) {
	f := mad.ARMADFields{Method: mad.MethodSet, TransactionID: 0x1234, AttrID: mad.AttrARLIDTable, AttrModifier: 3}
	f.Data[0], f.Data[mad.ARDataSize-1] = 0xaa, 0xbb
	b := mad.AppendARMAD(nil, &f)
	require.Len(t, b, mad.MADSize)
	h := mad.MAD(b)
	assert.Equal(t, mad.ClassVendorAR, h.MgmtClass())
	assert.EqualValues(t, mad.ARVersion, h.ClassVersion())
	assert.EqualValues(t, mad.BaseVersion, h.BaseVersion())
	assert.EqualValues(t, 0xaa, b[mad.MADHeaderSize])
	got, err := mad.DecodeARMAD(b)
	require.NoError(t, err)
	assert.Equal(t, f, got)

	h.SetMgmtClass(mad.ClassCongestion)
	_, err = mad.DecodeARMAD(b)
	assert.Error(t, err)
	_, err = mad.DecodeARMAD(b[:mad.MADSize-1])
	assert.ErrorIs(t, err, mad.ErrTruncated)
}

func TestARNames(t *testing.T) {
	assert.Equal(t, "VendorAR", mad.ClassVendorAR.String())
	assert.Equal(t, "ARInfo", mad.AttrARInfo.Name(mad.ClassVendorAR))
	assert.Equal(t, "ARGroupTable", mad.AttrARGroupTable.Name(mad.ClassVendorAR))
	assert.Equal(t, "ARLIDTable", mad.AttrARLIDTable.Name(mad.ClassVendorAR))
	assert.Equal(t, "ClassPortInfo", mad.AttrClassPortInfo.Name(mad.ClassVendorAR))
	assert.Equal(t, "AttrID(0x0013)", mad.AttrID(0x13).Name(mad.ClassVendorAR))
	for m := mad.AROff; m <= mad.ARAFI; m++ {
		got, err := mad.ParseARMode(m.String())
		require.NoError(t, err)
		assert.Equal(t, m, got)
		assert.True(t, m.IsValid())
		assert.NotZero(t, mad.ARModesAll&m.Bit())
	}
	assert.False(t, mad.ARMode(4).IsValid())
	assert.True(t, mad.ValidThreshold(1))
	assert.True(t, mad.ValidThreshold(100))
	assert.False(t, mad.ValidThreshold(0))
	assert.False(t, mad.ValidThreshold(101))
}

func TestARModeText(t *testing.T) {
	b, err := json.Marshal(struct {
		M mad.ARMode `json:"m"`
	}{mad.ARAdaptiveTh})
	require.NoError(t, err)
	assert.JSONEq(t, `{"m":"adaptive-th"}`, string(b))
	var v struct {
		M mad.ARMode `json:"m"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"m":"afi"}`), &v))
	assert.Equal(t, mad.ARAFI, v.M)
	assert.Error(t, json.Unmarshal([]byte(`{"m":"fast"}`), &v))
	_, err = mad.ARMode(9).MarshalText()
	assert.Error(t, err)
}
