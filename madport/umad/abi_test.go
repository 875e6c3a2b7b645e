package umad_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport/umad"
)

// The hand-checked layouts below are for a little-endian host (x86,
// arm64): the agent id, status, timeout, retries, length and P_Key index
// are in host order, the rest big-endian.
func requireLittleEndian(t *testing.T) {
	t.Helper()
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 1)
	require.Equal(t, byte(1), b[0], "the hand-checked layouts are those of a little-endian host")
}

var sampleHeader = umad.HeaderFields{
	AgentID: 0x01020304, Status: 110, TimeoutMS: 200, Retries: 3, Length: 320,
	QPN: 1, QKey: 0x80010000, LID: 0x1234, SL: 5, PathBits: 6, GRHPresent: true,
	GIDIndex: 7, HopLimit: 8, TrafficClass: 9,
	GID:       [16]byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc5},
	FlowLabel: 0x000abcde, PKeyIndex: 0x0102,
}

// sampleBytes is sampleHeader as struct ib_user_mad_hdr, byte by byte.
var sampleBytes = []byte{
	0x04, 0x03, 0x02, 0x01, // id (host)
	110, 0, 0, 0, // status (host)
	200, 0, 0, 0, // timeout_ms (host)
	3, 0, 0, 0, // retries (host)
	0x40, 0x01, 0, 0, // length 320 (host)
	0, 0, 0, 1, // qpn (be)
	0x80, 0x01, 0x00, 0x00, // qkey (be)
	0x12, 0x34, // lid (be)
	5, 6, 1, 7, 8, 9, // sl, path_bits, grh_present, gid_index, hop_limit, traffic_class
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc5, // gid
	0x00, 0x0a, 0xbc, 0xde, // flow_label (be)
	0x02, 0x01, // pkey_index (host)
	0, 0, 0, 0, 0, 0, // reserved
}

func TestHeaderLayout(t *testing.T) {
	requireLittleEndian(t)
	require.Len(t, sampleBytes, umad.HeaderSize)

	h := make(umad.Header, umad.HeaderSize)
	for i := range h {
		h[i] = 0xee // Encode must clear the reserved bytes
	}
	h.Encode(&sampleHeader)
	assert.Equal(t, sampleBytes, []byte(h))
	assert.Equal(t, sampleHeader, umad.Header(sampleBytes).Fields())

	// The old header is the same without pkey_index and reserved.
	old := make(umad.Header, umad.OldHeaderSize)
	old.Encode(&sampleHeader)
	assert.Equal(t, sampleBytes[:umad.OldHeaderSize], []byte(old))
	want := sampleHeader
	want.PKeyIndex = 0
	assert.Equal(t, want, old.Fields())
}

func TestIoctlNumbers(t *testing.T) {
	// _IOWR('\x1b', 1, 28 bytes), _IOW('\x1b', 2, 4 bytes), _IO('\x1b', 3).
	assert.Equal(t, 0xc01c1b01, umad.IoctlRegisterAgent)
	assert.Equal(t, 0x40041b02, umad.IoctlUnregisterAgent)
	assert.Equal(t, 0x00001b03, umad.IoctlEnablePKey)
}

func TestRegReqLayout(t *testing.T) {
	requireLittleEndian(t)
	r := umad.RegReq{ID: 7, QPN: 0, MgmtClass: 0x81, ClassVersion: 1, OUI: [3]byte{0x00, 0x14, 0x05}, RMPPVersion: 0}
	for _, m := range []uint8{0x01, 0x02, 0x05, 0x07, 0x41, 0x7f} {
		r.SetMethod(m)
	}
	want := []byte{
		7, 0, 0, 0, // id
		0x26, 0, 0, 0, 0, 0, 0, 0, // methods 1, 2, 5: bits 1, 2, 5 of the first byte
		0x02, 0, 0, 0, 0, 0, 0, 0x80, // methods 0x41 (bit 1 of byte 8), 0x7f (bit 7 of byte 15)
		0, 0x81, 1, // qpn, class, version
		0x00, 0x14, 0x05, // oui
		0, 0, // rmpp_version, padding
	}
	want[4] |= 0x80 // method 7: bit 7 of the first byte
	assert.Equal(t, want, r.Encode())
	got, err := umad.DecodeRegReq(want)
	require.NoError(t, err)
	assert.Equal(t, r, got)
	for m := range uint8(128) {
		assert.Equal(t, m == 1 || m == 2 || m == 5 || m == 7 || m == 0x41 || m == 0x7f, got.HasMethod(m), "method %#x", m)
	}
	_, err = umad.DecodeRegReq(want[:27])
	assert.ErrorIs(t, err, umad.ErrShort)
}

func TestPackets(t *testing.T) {
	mad := make([]byte, umad.MADSize)
	for i := range mad {
		mad[i] = byte(i)
	}
	pkt, err := umad.AppendPacket([]byte("x"), umad.HeaderSize, &sampleHeader, mad)
	require.NoError(t, err)
	require.Len(t, pkt, 1+umad.HeaderSize+umad.MADSize)
	f, got, err := umad.DecodePacket(pkt[1:], umad.HeaderSize)
	require.NoError(t, err)
	assert.Equal(t, sampleHeader, f)
	assert.Equal(t, mad, got)

	// A short MAD is zero-padded.
	pkt, err = umad.AppendPacket(nil, umad.OldHeaderSize, &umad.HeaderFields{AgentID: 1}, []byte{1, 0x81})
	require.NoError(t, err)
	require.Len(t, pkt, umad.OldHeaderSize+umad.MADSize)
	assert.Equal(t, []byte{1, 0x81, 0}, pkt[umad.OldHeaderSize:umad.OldHeaderSize+3])

	_, err = umad.AppendPacket(nil, 60, &sampleHeader, mad)
	assert.ErrorIs(t, err, umad.ErrHeaderSize)
	_, err = umad.AppendPacket(nil, umad.HeaderSize, &sampleHeader, make([]byte, 257))
	assert.ErrorIs(t, err, umad.ErrLong)

	timeout := sampleHeader
	timeout.Status = umad.StatusTimeout
	tpkt, _ := umad.AppendPacket(nil, umad.HeaderSize, &timeout, mad)
	ok := make([]byte, umad.HeaderSize)
	umad.Header(ok).Encode(&umad.HeaderFields{})
	tests := []struct {
		name    string
		b       []byte
		hdr     int
		wantErr error
		madLen  int
	}{
		{"whole", pkt, umad.OldHeaderSize, nil, umad.MADSize},
		{"timeout with MAD header only", tpkt[:umad.HeaderSize+umad.MADHeaderSize], umad.HeaderSize, nil, umad.MADHeaderSize},
		{"status 0 with MAD header only", append(ok, make([]byte, umad.MADHeaderSize)...), umad.HeaderSize, umad.ErrShort, 0},
		{"header only", ok, umad.HeaderSize, umad.ErrShort, 0},
		{"RMPP-sized", append(ok, make([]byte, 2*umad.MADSize)...), umad.HeaderSize, umad.ErrLong, 0},
		{"bad header size", pkt, 48, umad.ErrHeaderSize, 0},
		{"empty", nil, umad.HeaderSize, umad.ErrShort, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m, err := umad.DecodePacket(tt.b, tt.hdr)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Len(t, m, tt.madLen)
		})
	}
}

// TestRMPPPackets: an RMPP agent's file carries whole messages both ways,
// of their own length, bounded by MaxRMPPSize.
func TestRMPPPackets(t *testing.T) {
	msg := make([]byte, 3*umad.MADSize+17)
	for i := range msg {
		msg[i] = byte(i)
	}
	pkt, err := umad.AppendRMPPPacket(nil, umad.HeaderSize, &sampleHeader, msg)
	require.NoError(t, err)
	require.Len(t, pkt, umad.HeaderSize+len(msg))
	f, got, err := umad.DecodeRMPPPacket(pkt, umad.HeaderSize)
	require.NoError(t, err)
	assert.Equal(t, sampleHeader, f)
	assert.Equal(t, msg, got)
	_, _, err = umad.DecodePacket(pkt, umad.HeaderSize)
	assert.ErrorIs(t, err, umad.ErrLong, "a file without RMPP agents")

	short, err := umad.AppendRMPPPacket(nil, umad.HeaderSize, &sampleHeader, msg[:74])
	require.NoError(t, err)
	assert.Len(t, short, umad.HeaderSize+74, "not padded: the length is the payload's, as the kernel reads it")
	_, err = umad.AppendRMPPPacket(nil, umad.HeaderSize, &sampleHeader, make([]byte, umad.MaxRMPPSize+1))
	assert.ErrorIs(t, err, umad.ErrLong)
}

// FuzzDecodePacket feeds arbitrary reads to DecodePacket with both header
// sizes: it never panics, and what it accepts re-encodes to the same
// header bytes (but for grh_present, which reads any non-zero byte as
// true, and the reserved bytes, which encode as zero).
func FuzzDecodePacket(f *testing.F) {
	mad := make([]byte, umad.MADSize)
	mad[0], mad[1], mad[2], mad[3] = 1, 0x81, 1, 0x81
	p, _ := umad.AppendPacket(nil, umad.HeaderSize, &sampleHeader, mad)
	f.Add(p, true)
	p, _ = umad.AppendPacket(nil, umad.OldHeaderSize, &umad.HeaderFields{AgentID: 1, QPN: 0, LID: 0xffff}, mad)
	f.Add(p, false)
	timeout := sampleHeader
	timeout.Status = umad.StatusTimeout
	p, _ = umad.AppendPacket(nil, umad.HeaderSize, &timeout, mad)
	f.Add(p[:umad.HeaderSize+umad.MADHeaderSize], true)
	f.Add([]byte{}, true)
	f.Add(make([]byte, umad.HeaderSize+2*umad.MADSize), false)
	f.Fuzz(func(t *testing.T, b []byte, newHeader bool) {
		hs := umad.OldHeaderSize
		if newHeader {
			hs = umad.HeaderSize
		}
		h, m, err := umad.DecodePacket(b, hs)
		if err != nil {
			return
		}
		if len(m) != umad.MADSize && (h.Status == 0 || len(m) < umad.MADHeaderSize) {
			t.Fatalf("accepted a MAD of %d bytes with status %d", len(m), h.Status)
		}
		again := make(umad.Header, hs)
		again.Encode(&h)
		want := append([]byte(nil), b[:hs]...)
		if want[32] != 0 {
			want[32] = 1 // grh_present
		}
		if hs == umad.HeaderSize {
			clear(want[58:64])
		}
		if string(again) != string(want) {
			t.Fatalf("header %x re-encodes as %x", b[:hs], []byte(again))
		}
	})
}
