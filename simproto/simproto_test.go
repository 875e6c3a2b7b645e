package simproto_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/simproto"
)

// The expected bytes below are what ibsim's C structs hold on a
// little-endian host, the only kind this was checked against.
func requireLittleEndian(t *testing.T) {
	t.Helper()
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 1)
	require.Equal(t, byte(1), b[0], "the expected layouts are those of a little-endian host")
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	require.NoError(t, err)
	return b
}

func TestNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{simproto.CtlName("sim"), "sim:ctl"},
		{simproto.ClientCtlName("sim", 4242), "sim:ctl4242"},
		{simproto.InName("ibf-t1", 7), "ibf-t1:in7"},
		{simproto.OutName("sim", 3), "sim:out3"},
		{simproto.InName("sim", 1<<31), "sim:in-2147483648"}, // a C int
		{simproto.Addr("sim:ctl").Name, "@sim:ctl\x00"},
		{simproto.AddrName(simproto.Addr("sim:out1")), "sim:out1"},
		{simproto.AddrName(&net.UnixAddr{Name: "@sim:out1"}), "sim:out1"},
		{simproto.AddrName(&net.UnixAddr{Name: "/run/x"}), ""},
		{simproto.AddrName(nil), ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.got)
	}
	assert.Equal(t, "unixgram", simproto.Addr("x").Net)
}

func TestBaseFromEnv(t *testing.T) {
	t.Setenv(simproto.EnvSockName, "")
	assert.Equal(t, "sim", simproto.BaseFromEnv())
	t.Setenv(simproto.EnvSockName, "other")
	assert.Equal(t, "other", simproto.BaseFromEnv())
}

func TestCtlLayout(t *testing.T) {
	requireLittleEndian(t)
	var f simproto.CtlFields
	f.ClientID, f.Type, f.Len = 3, simproto.CtlConnect, simproto.ClientInfoSize
	ci := simproto.ClientInfo{ID: 0x04d2, QP: 0, IsSM: true, NodeID: "H-1"}
	ci.Encode(f.Data[:])
	b := simproto.AppendCtl([]byte{0xaa}, &f)[1:]
	want := unhex(t, `efbeadde 03000000 01000000 2c000000
		d2040000 00000000 01000000 482d3100`+strings.Repeat("00", 64-16))
	assert.Equal(t, want, b)

	got, err := simproto.DecodeCtl(b)
	require.NoError(t, err)
	assert.Equal(t, f, got)
	gci, err := simproto.DecodeClientInfo(got.Data[:])
	require.NoError(t, err)
	assert.Equal(t, ci, gci)
}

func TestCtlErrors(t *testing.T) {
	good := simproto.AppendCtl(nil, &simproto.CtlFields{Type: simproto.CtlGetGUID})
	bad := bytes.Clone(good)
	bad[0] = 0
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, simproto.ErrSize},
		{"short", good[:79], simproto.ErrSize},
		{"long", append(bytes.Clone(good), 0), simproto.ErrSize},
		{"magic", bad, simproto.ErrMagic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := simproto.DecodeCtl(tt.b)
			assert.ErrorIs(t, err, tt.want)
		})
	}
	assert.Equal(t, "GetPKeys", simproto.CtlGetPKeys.String())
	assert.Equal(t, "CtlType(11)", simproto.CtlType(11).String())
	assert.False(t, simproto.CtlType(11).Valid())
	assert.True(t, simproto.CtlError.Valid())
}

func TestPayloadLayouts(t *testing.T) {
	requireLittleEndian(t)
	d := make([]byte, simproto.CtlDataSize)
	tests := []struct {
		name   string
		encode func()
		want   string
		decode func() (any, error)
		value  any
	}{
		{"PortState", func() { (&simproto.PortState{LID: 0x0102, State: 4}).Encode(d) }, "02010400",
			func() (any, error) { return simproto.DecodePortState(d) }, simproto.PortState{LID: 0x0102, State: 4}},
		{"Vendor", func() { (&simproto.Vendor{VendorID: 0x2c9, PartID: 0x1003, HWVer: 2, FWVer: 1}).Encode(d) },
			"c9020000 03100000 02000000 00000000 01000000 00000000",
			func() (any, error) { return simproto.DecodeVendor(d) }, simproto.Vendor{VendorID: 0x2c9, PartID: 0x1003, HWVer: 2, FWVer: 1}},
		{"GID", func() { (&simproto.GID{Prefix: 0xfe80000000000000, GUID: 0x0002c90300000a01}).Encode(d) },
			"fe800000 00000000 010a0000 03c90200",
			func() (any, error) { return simproto.DecodeGID(d) }, simproto.GID{Prefix: 0xfe80000000000000, GUID: 0x0002c90300000a01}},
		{"GUID", func() { simproto.EncodeGUID(d, 0x0002c90300000a00) }, "000a0000 03c90200",
			func() (any, error) { return simproto.DecodeGUID(d) }, uint64(0x0002c90300000a00)},
		{"IsSM", func() { simproto.EncodeIsSM(d, true) }, "01000000",
			func() (any, error) { return simproto.DecodeIsSM(d) }, true},
		{"PKeys", func() { simproto.EncodePKeys(d, []uint16{0xffff, 0x8001}) }, "ffff8001" + strings.Repeat("0000", 30),
			func() (any, error) { return simproto.DecodePKeys(d) }, append([]uint16{0xffff, 0x8001}, make([]uint16, 30)...)},
		{"ClientInfo long name", func() {
			(&simproto.ClientInfo{ID: 1, NodeID: strings.Repeat("n", 40)}).Encode(d)
		}, "01000000 00000000 00000000" + strings.Repeat("6e", 31) + "00",
			func() (any, error) { return simproto.DecodeClientInfo(d) }, simproto.ClientInfo{ID: 1, NodeID: strings.Repeat("n", 31)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range d {
				d[i] = 0xee // encoders must write every byte they own
			}
			tt.encode()
			want := unhex(t, tt.want)
			assert.Equal(t, want, d[:len(want)])
			got, err := tt.decode()
			require.NoError(t, err)
			assert.Equal(t, tt.value, got)
		})
	}
}

func TestPayloadShort(t *testing.T) {
	short := make([]byte, 3)
	for name, f := range map[string]func() error{
		"ClientInfo": func() error { _, err := simproto.DecodeClientInfo(short); return err },
		"PortState":  func() error { _, err := simproto.DecodePortState(short); return err },
		"Vendor":     func() error { _, err := simproto.DecodeVendor(short); return err },
		"GID":        func() error { _, err := simproto.DecodeGID(short); return err },
		"GUID":       func() error { _, err := simproto.DecodeGUID(short); return err },
		"IsSM":       func() error { _, err := simproto.DecodeIsSM(short); return err },
		"PKeys":      func() error { _, err := simproto.DecodePKeys(short); return err },
	} {
		err := f()
		assert.True(t, errors.Is(err, simproto.ErrSize), "%s: %v", name, err)
	}
}

func TestRequestLayout(t *testing.T) {
	requireLittleEndian(t)
	m := make([]byte, simproto.MADSize)
	m[0], m[255] = 1, 0x55
	f := simproto.RequestFields{DLID: 0x1234, SLID: 0xffff, DestQP: 1, SrcQP: 0x10203, Status: simproto.StatusTimeout, MAD: m}
	b := simproto.AppendRequest(nil, &f)
	require.Len(t, b, simproto.RequestSize)
	want := unhex(t, `12340000 ffff0000 00000001 00010203 0000006e 00000000 00000000 00000100`)
	assert.Equal(t, want, b[:32])
	assert.Equal(t, m, b[32:])

	got, err := simproto.DecodeRequest(b)
	require.NoError(t, err)
	f.Length = simproto.MADSize
	assert.Equal(t, f, got)

	r := simproto.Request(b)
	r.SetDLID(0xffff)
	r.SetStatus(0)
	assert.Equal(t, uint16(0xffff), r.DLID())
	assert.Equal(t, uint32(0), r.Status())

	// A short MAD is zero-padded.
	b = simproto.AppendRequest(nil, &simproto.RequestFields{MAD: []byte{1, 2}, Length: 2})
	assert.Equal(t, append([]byte{1, 2}, make([]byte, 254)...), simproto.Request(b).MAD())
	assert.Equal(t, uint64(2), simproto.Request(b).Length())

	for _, n := range []int{0, 287, 289, 512} {
		_, err := simproto.DecodeRequest(make([]byte, n))
		assert.ErrorIs(t, err, simproto.ErrSize, "%d bytes", n)
	}
}
