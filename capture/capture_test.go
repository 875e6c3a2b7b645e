package capture_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ibfab/capture"
)

func TestRoundTrip(t *testing.T) {
	base := time.Date(2026, 11, 21, 12, 0, 0, 123456789, time.UTC)
	recs := []capture.Record{
		{Type: capture.TypeInfiniBand, Time: base, Data: bytes.Repeat([]byte{0xab}, 282)},
		{Type: capture.TypeInfiniBandLink, Time: base.Add(1500 * time.Nanosecond), Data: []byte{0x10, 0x20, 0x30, 0x40, 0x50, 0x60}},
		{Type: capture.TypeInfiniBand, Time: base.Add(time.Second), Data: make([]byte, capture.MaxPacket)},
	}
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	require.NoError(t, err)
	for _, r := range recs {
		require.NoError(t, w.WritePacket(r.Type, r.Time, r.Data))
	}
	r, err := capture.NewReader(&buf)
	require.NoError(t, err)
	for i, want := range recs {
		got, err := r.Next()
		require.NoError(t, err, "record %d", i)
		require.Equal(t, want.Type, got.Type, "record %d type", i)
		require.Equal(t, want.Data, got.Data, "record %d data", i)
		// The ERF timestamp is 32.32 fixed point: exact to within a nanosecond.
		require.InDelta(t, want.Time.UnixNano(), got.Time.UnixNano(), 1, "record %d time", i)
	}
	_, err = r.Next()
	require.ErrorIs(t, err, io.EOF)
}

func TestWriteTooLong(t *testing.T) {
	w, err := capture.NewWriter(io.Discard)
	require.NoError(t, err)
	err = w.WritePacket(capture.TypeInfiniBand, time.Now(), make([]byte, capture.MaxPacket+1))
	require.Error(t, err)
}

// pcapFile builds a nanosecond pcap with the given link type and raw records.
func pcapFile(linkType uint32, recs ...[]byte) []byte {
	var b bytes.Buffer
	hdr := make([]byte, 24)
	binary.LittleEndian.PutUint32(hdr[0:], 0xa1b23c4d)
	binary.LittleEndian.PutUint16(hdr[4:], 2)
	binary.LittleEndian.PutUint16(hdr[6:], 4)
	binary.LittleEndian.PutUint32(hdr[16:], 65535)
	binary.LittleEndian.PutUint32(hdr[20:], linkType)
	b.Write(hdr)
	for _, r := range recs {
		ph := make([]byte, 16)
		binary.LittleEndian.PutUint32(ph[8:], uint32(len(r)))
		binary.LittleEndian.PutUint32(ph[12:], uint32(len(r)))
		b.Write(ph)
		b.Write(r)
	}
	return b.Bytes()
}

func erfRecord(typ byte, rlen, wlen uint16, payload []byte) []byte {
	rec := make([]byte, 16, 16+len(payload))
	rec[8] = typ
	binary.BigEndian.PutUint16(rec[10:], rlen)
	binary.BigEndian.PutUint16(rec[14:], wlen)
	return append(rec, payload...)
}

func TestReaderRejects(t *testing.T) {
	tests := []struct {
		name string
		file []byte
	}{
		{"ethernet link type", pcapFile(1)},
		{"record shorter than ERF header", pcapFile(197, make([]byte, 10))},
		{"rlen beyond record", pcapFile(197, erfRecord(21, 40, 8, make([]byte, 8)))},
		{"rlen below header", pcapFile(197, erfRecord(21, 4, 0, nil))},
		{"extension header", pcapFile(197, erfRecord(0x80|21, 24, 8, make([]byte, 8)))},
		{"truncated pcap record", pcapFile(197, erfRecord(21, 24, 8, make([]byte, 8)))[:24+16+10]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := capture.NewReader(bytes.NewReader(tt.file))
			if err != nil {
				return // rejected at the header: fine
			}
			_, err = r.Next()
			require.Error(t, err)
			require.False(t, errors.Is(err, io.EOF), "got plain EOF, want a decode error: %v", err)
		})
	}
}

func TestReaderPaddedRecord(t *testing.T) {
	// Fixed-length ERF records are padded to 8 bytes; wlen says where the packet ends.
	pkt := []byte{1, 2, 3, 4, 5, 6}
	file := pcapFile(197, erfRecord(25, 24, 6, append(append([]byte{}, pkt...), 0, 0)))
	r, err := capture.NewReader(bytes.NewReader(file))
	require.NoError(t, err)
	got, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, capture.TypeInfiniBandLink, got.Type)
	require.Equal(t, pkt, got.Data)
}

func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w, _ := capture.NewWriter(&buf)
	_ = w.WritePacket(capture.TypeInfiniBand, time.Unix(1, 2), []byte{0xf0, 0x02, 0xff, 0xff, 0, 0, 0xff, 0xff})
	_ = w.WritePacket(capture.TypeInfiniBandLink, time.Unix(1, 3), []byte{0, 1, 2, 3, 4, 5})
	f.Add(buf.Bytes())
	f.Add(pcapFile(197, erfRecord(21, 4, 0, nil)))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := capture.NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := 0; i < 1000; i++ {
			if _, err := r.Next(); err != nil {
				return
			}
		}
	})
}
