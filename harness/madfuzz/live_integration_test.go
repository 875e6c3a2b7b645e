package madfuzz_test

import (
	"encoding/hex"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/harness/madfuzz"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// startSM runs SM binary bin as master at ca4 and waits for its subnet.
// The SM protects every port with an M_Key (level 1, a lease that never
// runs out), as a subnet that must survive hostile SMPs is run: without
// one, any Set is taken, and the fuzzer's own (an SLtoVL table sending
// every SL of its HCA to VL15, say) would cut its path to the SA, as on
// silicon.
func startSM(t *testing.T, f *fabrictest.Fabric, bin string) *fabrictest.Daemon {
	t.Helper()
	d := f.StartUMAD("ca4", bin, "--port", "sim", "--json", "--m-key", "0x5eed00c0ffee", "--m-key-protect", "1", "--m-key-lease", "0")
	fabrictest.Wait(t, 30*time.Second, "ibsm: subnet up", func() bool {
		if exited, err := d.Exited(); exited {
			t.Fatalf("ibsm exited (%v):\n%s", err, d.Output())
		}
		return strings.Contains(d.Output(), `"subnet_up":true`)
	})
	return d
}

// TestLiveQuick is ibfab fuzz --quick on the default fabric with ibsm as
// master: 10,000 MADs of every shape (LIDs known, so GMPs and LID-routed
// SMPs too, SubnAdm ones to the SM) from another HCA at every node but two
// HCAs, every node and the SA answering every check, no answer with a
// reserved byte set, no process dead, and the two HCAs left alone sending
// to each other throughout without losing a packet.
func TestLiveQuick(t *testing.T) {
	f := fabrictest.Up(t, "fuzz", topologies.Default(), harness.UpOptions{})
	d := startSM(t, f, fabrictest.Bin(t, "ibsm"))
	targets, left := leaveHosts(topologies.Default(), "ca7", 2)
	r, err := madfuzz.Live(t.Context(), madfuzz.LiveConfig{Fabric: f.Name, From: "ca7", Targets: targets, Bystanders: true,
		MADs: 10_000, Seed: 3, CheckEvery: 2000})
	require.NoError(t, err)
	if !r.Passed {
		o := d.Output()
		t.Logf("ibsm's output ends:\n%s", o[max(0, len(o)-4000):])
	}
	t.Logf("%d MADs at %.0f/s: %d answered (%d judged), by status %v, by shape %v; RSS grew %d KiB at most (%s), goroutines %d (%s)", r.Sent, r.MADsPerS,
		r.Answered, r.Judged, r.ByStatus, r.ByShape, r.RSSGrowth>>10, r.RSSNode, r.GoroutineGrowth, r.GoroutineNode)
	for _, fl := range r.Failures {
		t.Errorf("after %d MADs: %s: %s", fl.AfterMAD, fl.Node, fl.Err)
	}
	assert.True(t, r.Passed, "dead %v, dirty %+v", r.Dead, r.DirtyFirst)
	assert.Equal(t, 10_000, r.Sent)
	assert.Equal(t, 5, r.Checks)
	for _, s := range []madfuzz.Shape{madfuzz.ShapeGMP, madfuzz.ShapeLIDSMP, madfuzz.ShapeRMPP, madfuzz.ShapeBadRoute} {
		assert.Positive(t, r.ByShape[s.String()], "shape %s", s)
	}
	assert.Positive(t, r.Answered)
	assert.Positive(t, r.Judged)
	require.NotNil(t, r.Accounting)
	t.Logf("accounting %+v", *r.Accounting)
	require.Len(t, r.Bystanders, len(left))
	for _, b := range r.Bystanders {
		t.Logf("bystander %s -> %s: sent %d, received %d, refused %d", b.From, b.To, b.Sent, b.Received, b.Refused)
		assert.Positive(t, b.Sent)
	}
	assert.Zero(t, r.BystandersLost)
}

// TestLiveFrames is the quick fuzz as raw frames on ca7's veth end:
// every frame shape reaches sw2, every node and the SA still answer, the
// bystanders lose nothing, and sw2 counts the frames whose CRCs it
// refused.
func TestLiveFrames(t *testing.T) {
	f := fabrictest.Up(t, "fzfr", topologies.Default(), harness.UpOptions{})
	startSM(t, f, fabrictest.Bin(t, "ibsm"))
	crcBefore := portFacing(t, f.Name, "sw2", "ca7[1]").Drops["crc_error"]
	targets, _ := leaveHosts(topologies.Default(), "ca7", 2)
	r, err := madfuzz.Live(t.Context(), madfuzz.LiveConfig{Fabric: f.Name, From: "ca7", Targets: targets, Bystanders: true, Frames: true,
		MADs: 10_000, Seed: 5, CheckEvery: 2000})
	require.NoError(t, err)
	t.Logf("%d frames at %.0f/s, by frame %v; bystanders lost %d; goroutines %d (%s)", r.Sent, r.MADsPerS, r.ByFrame, r.BystandersLost,
		r.GoroutineGrowth, r.GoroutineNode)
	for _, fl := range r.Failures {
		t.Errorf("after %d frames: %s: %s", fl.AfterMAD, fl.Node, fl.Err)
	}
	assert.True(t, r.Passed, "dead %v, bystanders %+v", r.Dead, r.Bystanders)
	assert.Equal(t, 10_000, r.Sent)
	for s := madfuzz.FrameGood; s <= madfuzz.FrameJunk; s++ {
		assert.Positive(t, r.ByFrame[s.String()], "frame shape %v", s)
	}
	facing := portFacing(t, f.Name, "sw2", "ca7[1]")
	crc := facing.Drops["crc_error"] - crcBefore
	assert.GreaterOrEqual(t, crc, uint64(r.ByFrame["icrc"]+r.ByFrame["vcrc"]), "sw2's port to ca7 counts every frame with a bad CRC: %v", facing.Drops)
}

// portFacing is node's port cabled to peer, as ibfab status has it.
func portFacing(t *testing.T, fabric, node, peer string) nodeproc.PortStatus {
	t.Helper()
	st, err := harness.Status(t.Context(), fabric)
	require.NoError(t, err)
	for _, n := range st.Nodes {
		for _, p := range n.Ports {
			if n.Name == node && p.Peer == peer {
				return p
			}
		}
	}
	t.Fatalf("%s has no port cabled to %s", node, peer)
	return nodeproc.PortStatus{}
}

// leaveHosts returns every node of t but from and the last n HCAs, and
// those n.
func leaveHosts(t *topologies.Topology, from string, n int) (targets, left []string) {
	var hcas []string
	for _, nd := range t.Nodes() {
		if nd.Type == topologies.CA && nd.Name != from {
			hcas = append(hcas, nd.Name)
		}
	}
	left = hcas[len(hcas)-n:]
	for _, nd := range t.Nodes() {
		if nd.Name != from && !slices.Contains(left, nd.Name) {
			targets = append(targets, nd.Name)
		}
	}
	return targets, left
}

// TestLiveFindsPlantedBug runs the quick fuzz against an ibsm built with
// the tag ibfab_planted, which reverts a real fix (package rmpp: a DATA
// segment numbered 0 before any first segment panicked the receiver; the
// SA acknowledges RMPP requests with one). The fuzzer must find it in
// the run: the SA stops answering its check, the MADs reported with the
// failure hold such a segment, and ibsm died of the panic.
func TestLiveFindsPlantedBug(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-tags", "ibfab_planted", "-o", dir, "ibfab/cmd/ibsm").CombinedOutput()
	require.NoError(t, err, "go build -tags ibfab_planted: %s", out)
	f := fabrictest.Up(t, "fzpl", topologies.Default(), harness.UpOptions{})
	d := startSM(t, f, filepath.Join(dir, "ibsm"))
	r, err := madfuzz.Live(t.Context(), madfuzz.LiveConfig{Fabric: f.Name, From: "ca7", MADs: 10_000, Seed: 3, CheckEvery: 250})
	require.NoError(t, err)
	require.False(t, r.Passed, "the planted bug was not found in %d MADs", r.Sent)
	require.NotEmpty(t, r.Failures)
	fl := r.Failures[0]
	t.Logf("found after %d MADs: %s: %s", fl.AfterMAD, fl.Node, fl.Err)
	assert.Contains(t, fl.Node, "the SA at LID")
	assert.True(t, hasSegmentZero(t, fl.Last), "a DATA segment 0 among the %d MADs reported", len(fl.Last))
	exited, _ := d.Exited()
	assert.True(t, exited, "ibsm still runs")
	assert.Contains(t, d.Output(), "panic")
}

// hasSegmentZero reports whether one of the MADs (hex) is an SA request
// carrying an RMPP DATA segment numbered 0 without the First flag.
func hasSegmentZero(t *testing.T, mads []string) bool {
	for _, h := range mads {
		b, err := hex.DecodeString(h)
		require.NoError(t, err)
		m := mad.MAD(b)
		if m.MgmtClass() != mad.ClassSubnAdm || m.IsResponse() {
			continue
		}
		r := mad.RMPP(b)
		if r.Version() == mad.RMPPVersion1 && r.Active() && r.Type() == mad.RMPPTypeData &&
			r.Flags()&mad.RMPPFlagFirst == 0 && r.SegmentNumber() == 0 {
			return true
		}
	}
	return false
}
