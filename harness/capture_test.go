package harness_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/harness"
	"ibfab/wire"
	"ibfab/wire/mad"
)

var t0 = time.Unix(1_700_000_000, 0).UTC()

// ethFrame wraps an IBA packet of ethType in an Ethernet header, padded
// with pad zero bytes.
func ethFrame(ethType uint16, pkt []byte, pad int) []byte {
	var dst, src [wire.MACSize]byte
	src[5] = 1
	b := wire.AppendEthernet(nil, dst, src, ethType)
	return append(append(b, pkt...), make([]byte, pad)...)
}

// sampleSMP is a sealed UD packet carrying a directed-route NodeInfo Get.
func sampleSMP(t testing.TB) []byte {
	smp, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 7, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1}})
	require.NoError(t, err)
	return wire.AppendUD(nil, &wire.UDFields{VL: 15, DLID: mad.PermissiveLID, SLID: mad.PermissiveLID,
		PKey: 0xffff, DestQP: wire.QP0, SrcQP: wire.QP0, Payload: smp})
}

func sampleFC() []byte {
	return wire.AppendFlowControl(nil, &wire.FlowControlFields{Op: wire.FlowControlInit, VL: 0, FCCL: 256})
}

// ethPcap writes frames as a pcap of Ethernet frames, the i-th stamped
// t0 + times[i] µs.
func ethPcap(t testing.TB, frames [][]byte, times []int) []byte {
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	require.NoError(t, w.WriteFileHeader(65536, layers.LinkTypeEthernet))
	for i, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(times[i]) * time.Microsecond), CaptureLength: len(f), Length: len(f)}
		require.NoError(t, w.WritePacket(ci, f))
	}
	return buf.Bytes()
}

// ethPcapNG is ethPcap writing pcapng.
func ethPcapNG(t testing.TB, frames [][]byte, times []int) []byte {
	var buf bytes.Buffer
	w, err := pcapgo.NewNgWriter(&buf, layers.LinkTypeEthernet)
	require.NoError(t, err)
	for i, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(times[i]) * time.Microsecond), CaptureLength: len(f), Length: len(f)}
		require.NoError(t, w.WritePacket(ci, f))
	}
	require.NoError(t, w.Flush())
	return buf.Bytes()
}

func readAll(t testing.TB, b []byte) []capture.Record {
	r, err := capture.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	var out []capture.Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		rec.Data = bytes.Clone(rec.Data)
		out = append(out, rec)
	}
}

// TestConvertEthernet: IBA frames (padding dropped) become ERF records,
// other frames are skipped and counted, two inputs merge by time, pcap and
// pcapng alike; other link types and ERF input are refused.
func TestConvertEthernet(t *testing.T) {
	smp, fc := sampleSMP(t), sampleFC()
	arp := ethFrame(0x0806, make([]byte, 28), 0)
	a := ethPcap(t, [][]byte{ethFrame(wire.EtherTypeLink, fc, 40), arp, ethFrame(wire.EtherTypeData, smp, 10), ethFrame(wire.EtherTypeData, nil, 0)}, []int{0, 1, 5, 6})
	b := ethPcapNG(t, [][]byte{ethFrame(wire.EtherTypeLink, fc, 0), ethFrame(wire.EtherTypeData, smp, 0)}, []int{2, 9})

	var out bytes.Buffer
	w, err := capture.NewWriter(&out)
	require.NoError(t, err)
	st, err := harness.ConvertEthernet(w, bytes.NewReader(a), bytes.NewReader(b))
	require.NoError(t, err)
	assert.Equal(t, harness.ConvertStats{Frames: 4, Skipped: 2}, st)
	recs := readAll(t, out.Bytes())
	require.Len(t, recs, 4)
	wantTypes := []capture.RecordType{capture.TypeInfiniBandLink, capture.TypeInfiniBandLink, capture.TypeInfiniBand, capture.TypeInfiniBand}
	wantUS := []int{0, 2, 5, 9}
	for i, r := range recs {
		assert.Equal(t, wantTypes[i], r.Type, "record %d", i)
		// ERF's 32.32 fixed point keeps nanoseconds to within one.
		assert.WithinDuration(t, t0.Add(time.Duration(wantUS[i])*time.Microsecond), r.Time, time.Nanosecond, "record %d", i)
		if r.Type == capture.TypeInfiniBand {
			assert.Equal(t, smp, r.Data, "record %d: the packet without the padding", i)
			assert.NoError(t, wire.Verify(r.Data))
		} else {
			assert.Equal(t, fc, r.Data)
		}
	}

	bad := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "not a capture file"},
		{"garbage", []byte("not a pcap file at all"), ""},
		{"ERF", func() []byte {
			var b bytes.Buffer
			w, _ := capture.NewWriter(&b)
			w.WritePacket(capture.TypeInfiniBand, t0, smp)
			return b.Bytes()
		}(), "ERF already"},
		{"Linux cooked", func() []byte {
			var b bytes.Buffer
			w := pcapgo.NewWriter(&b)
			w.WriteFileHeader(65536, layers.LinkTypeLinuxSLL)
			return b.Bytes()
		}(), "want Ethernet"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := capture.NewWriter(io.Discard)
			_, err := harness.ConvertEthernet(w, bytes.NewReader(tt.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestCaptureCommand covers capture's command line without a fabric:
// --convert end to end, and the usage errors.
func TestCaptureCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "eth.pcap")
	require.NoError(t, os.WriteFile(in, ethPcap(t, [][]byte{ethFrame(wire.EtherTypeData, sampleSMP(t), 0)}, []int{0}), 0o644))
	out := filepath.Join(dir, "erf.pcap")
	code, stdout, stderr := run("capture", "--convert", in, "-w", out)
	require.Equal(t, harness.ExitOK, code, stderr)
	assert.Contains(t, stdout, "wrote 1 frames to "+out)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Len(t, readAll(t, b), 1)

	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no arguments", []string{"capture"}, harness.ExitUsage, "want a fabric name"},
		{"bad port", []string{"capture", "f", "ca4[x]"}, harness.ExitUsage, "want NODE or NODE[PORT]"},
		{"port 0", []string{"capture", "f", "ca4[0]"}, harness.ExitUsage, "out of 1..254"},
		{"duration and count", []string{"capture", "f", "ca4", "--duration", "1s", "--count", "3"}, harness.ExitUsage, "exclude each other"},
		{"negative count", []string{"capture", "--count", "-1", "f", "ca4"}, harness.ExitUsage, "positive count"},
		{"convert without -w", []string{"capture", "--convert", in}, harness.ExitUsage, "missing -w"},
		{"convert nothing", []string{"capture", "--convert", "-w", out}, harness.ExitUsage, "missing input"},
		{"convert missing file", []string{"capture", "--convert", filepath.Join(dir, "none"), "-w", out}, harness.ExitFailure, "no such file"},
		{"fabric not up", []string{"capture", "nosuchfabric", "ca4[1]", "-w", filepath.Join(dir, "x.pcap")}, harness.ExitFailure, "not up"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(tt.args...)
			assert.Equal(t, tt.code, code, stderr)
			assert.Contains(t, stderr, tt.want)
		})
	}
	_, err = os.Stat(filepath.Join(dir, "x.pcap"))
	assert.True(t, os.IsNotExist(err), "no file for a capture that could not start")

	code, stdout, _ = run("capture", "-h")
	assert.Equal(t, harness.ExitOK, code)
	assert.Contains(t, stdout, "--convert")
}

// FuzzConvertEthernet feeds arbitrary bytes to --convert's reader: it
// returns an error or records, never panics, and what it writes reads back.
func FuzzConvertEthernet(f *testing.F) {
	f.Add(ethPcap(f, [][]byte{ethFrame(wire.EtherTypeData, sampleSMP(f), 3), ethFrame(wire.EtherTypeLink, sampleFC(), 0)}, []int{0, 1}))
	f.Add(ethPcapNG(f, [][]byte{ethFrame(wire.EtherTypeLink, sampleFC(), 0), ethFrame(0x0800, []byte{1, 2, 3}, 0)}, []int{0, 1}))
	f.Add(ethPcap(f, [][]byte{ethFrame(wire.EtherTypeData, []byte{0, 0, 0xff, 0xff, 0, 0, 0, 0}, 0), ethFrame(wire.EtherTypeLink, []byte{1}, 0)}, []int{0, 1}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		w, err := capture.NewWriter(&out)
		require.NoError(t, err)
		st, err := harness.ConvertEthernet(w, bytes.NewReader(in))
		if err != nil {
			return
		}
		assert.Len(t, readAll(t, out.Bytes()), st.Frames)
	})
}
