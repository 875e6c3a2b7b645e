package harness_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/harness"
	"ibfab/internal/testsupport/tsharktest"
	"ibfab/topologies"
)

// TestPcapSampleThesis8 checks the sample against the thesis's count and
// against tshark: the discovery of the 8-switch network sends one NodeInfo
// per active switch port plus the SM CA's port (26, thesis ch.5 §5.3), and
// one to the SM's own node; every link trains with one Init from each end.
func TestPcapSampleThesis8(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.pcap")
	code, out, errOut := run("pcap", "sample", "-w", path)
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Contains(t, out, "wrote 59 frames")

	pkts := tsharktest.DecodeFile(t, path)
	require.Len(t, pkts, 59)
	links, gets := 0, 0
	hopCounts := map[uint64]int{}
	for i, p := range pkts {
		require.Empty(t, p.Problems(), "frame %d", i+1)
		if _, ok := p.Get("infiniband_link.op"); ok {
			links++
			assert.Equal(t, uint64(1), p.Uint(t, "infiniband_link.op"), "frame %d: Init", i+1)
			continue
		}
		gets++
		assert.Equal(t, uint64(0x81), p.Uint(t, "infiniband.mad.mgmtclass"), "frame %d", i+1)
		assert.Equal(t, uint64(0x01), p.Uint(t, "infiniband.mad.method"), "frame %d", i+1)
		assert.Equal(t, uint64(0x11), p.Uint(t, "infiniband.mad.attributeid"), "frame %d", i+1)
		assert.Equal(t, uint64(15), p.Uint(t, "infiniband.lrh.vl"), "frame %d", i+1)
		hopCounts[p.Uint(t, "infiniband.smpdirected.hopcount")]++
	}
	assert.Equal(t, 2*16, links)
	assert.Equal(t, 1+26, gets)
	// Hop counts follow the BFS from the SM's CA (ca4 on sw1 p3), worked
	// out by hand from the thesis's port table: itself; sw1; sw1's 3 ports;
	// sw2's and sw3's 4 each; sw5 3 + sw6 4 + sw8 2 + sw9 2; sw10's 3.
	assert.Equal(t, map[uint64]int{0: 1, 1: 1, 2: 3, 3: 8, 4: 11, 5: 3}, hopCounts)

	code, out, errOut = run("pcap", "decode", path)
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Equal(t, 59, strings.Count(out, "\n"))
	assert.Equal(t, 27, strings.Count(out, "SubnDirected Get NodeInfo"))
}

// TestPcapDecodeRejectsCorruptFrame flips one bit in a sample frame: the
// decoder must report the CRC failure and exit 1.
func TestPcapDecodeRejectsCorruptFrame(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.pcap")
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := capture.NewWriter(f)
	require.NoError(t, err)
	tp, err := topologies.FatTree(2, 1, 1)
	require.NoError(t, err)
	n, err := harness.WriteDiscoverySample(tp, w, time.Unix(1, 0))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Positive(t, n)

	// Corrupt the last record's last payload byte (a data packet's VCRC).
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[len(b)-1] ^= 0x01
	require.NoError(t, os.WriteFile(path, b, 0o644))

	code, out, errOut := run("pcap", "decode", path)
	assert.Equal(t, harness.ExitFailure, code)
	assert.Contains(t, out, "VCRC")
	assert.Contains(t, errOut, "1 frames failed")
}

func TestPcapUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"no subcommand", []string{"pcap"}},
		{"unknown subcommand", []string{"pcap", "frob"}},
		{"sample without -w", []string{"pcap", "sample"}},
		{"sample extra arg", []string{"pcap", "sample", "-w", "x", "y"}},
		{"decode without file", []string{"pcap", "decode"}},
		{"decode two files", []string{"pcap", "decode", "a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(tt.args...)
			assert.Equal(t, harness.ExitUsage, code)
			assert.Contains(t, errOut, "usage: ibfab pcap")
		})
	}
}
