package harness_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// hotSpotScale is the time scale of the hot-spot tests: a 4x SDR link
// (8 Gb/s) then carries 32 Mb/s of real time, which a 2-core machine
// moves across four hops for five senders with pacing holding, also while
// `go test ./...` runs other packages' fabrics and simulators beside it
// (at 100 a loaded run fell to 0.84 of the rate).
const hotSpotScale = 250

// hotSpotDuration is ibfab bench hotspot's --quick length; the bench runs
// 30 s by default.
const hotSpotDuration = 10 * time.Second

// hotSpotResult is what a hot-spot run measured.
type hotSpotResult struct {
	rate  float64           // hot-spot link's received data rate / its paced rate
	drops map[string]uint64 // drops by "node[port] cause" over the fabric
	sent  uint64            // packets the generators sent
	f     *fabrictest.Fabric
}

// runHotSpot brings up a two-leaf fat tree with three HCAs per leaf, makes
// every HCA but the SM's and the hot spot's send toward the hot spot at
// 100 % of its link rate for d (emulated: d × hotSpotScale real), and
// measures the hot-spot link's rate over the second half of the run.
func runHotSpot(t testing.TB, suffix string, d time.Duration, nodeArgs ...string) hotSpotResult {
	topo, err := topologies.FatTree(2, 1, 3)
	require.NoError(t, err)
	f := fabrictest.Up(t, suffix, topo, harness.UpOptions{TimeScale: hotSpotScale, NodeArgs: nodeArgs})
	sm := f.NewSM("ca1-1")
	require.NoError(t, sm.Configure())

	hot := "ca2-3"
	hotLID := sm.LID[f.Index(hot)]
	var senders []string
	for _, h := range f.Hosts() {
		if h != hot && h != sm.Node {
			senders = append(senders, h)
		}
	}
	for i, h := range senders {
		f.MustCall(h, "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 100, Payload: 2048,
			Dests: []uint16{hotLID}, Seed: uint64(i + 1)}, nil)
	}
	time.Sleep(d / 2)
	c0, t0 := f.Node(hot).Ports[0].Counters, time.Now()
	time.Sleep(d / 2)
	c1, t1 := f.Node(hot).Ports[0].Counters, time.Now()
	res := hotSpotResult{f: f}
	for _, h := range senders {
		var gs struct {
			Sent uint64 `json:"sent"`
		}
		f.MustCall(h, "traffic-stop", map[string]int{"port": 1}, &gs)
		res.sent += gs.Sent
	}
	// PortRcvData counts 4-byte words of whole packets, as the link rate
	// does (8b/10b already taken out).
	bits := float64(c1.PortRcvData-c0.PortRcvData) * 32
	emulated := t1.Sub(t0).Seconds() / hotSpotScale
	rate, err := mad.DataRate(mad.LinkWidth4X, mad.LinkSpeedSDR)
	require.NoError(t, err)
	res.rate = bits / emulated / float64(rate)
	res.drops = map[string]uint64{}
	for _, n := range f.Status().Nodes {
		for _, p := range n.Ports {
			for cause, v := range p.Drops {
				res.drops[fmt.Sprintf("%s[%d] %s", n.Name, p.Port, cause)] += v
			}
		}
	}
	t.Logf("hot spot: %.3f of the paced rate; %d packets sent; drops %v", res.rate, res.sent, res.drops)
	return res
}

// drained waits until no port of f queues or holds a data packet, and
// returns the status then, with the hot spot's received packets.
func drained(t testing.TB, f *fabrictest.Fabric, hot string) (*harness.FabricStatus, uint64) {
	t.Helper()
	var busy []string
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		st := f.Status()
		busy = busy[:0]
		var got uint64
		for _, n := range st.Nodes {
			for _, p := range n.Ports {
				for _, c := range p.Credits {
					if c.Queued > 0 || c.RxUsed > 0 {
						busy = append(busy, fmt.Sprintf("%s[%d] VL%d: %d queued, %d blocks held", n.Name, p.Port, c.VL, c.Queued, c.RxUsed))
					}
				}
				if n.Name == hot && p.Traffic != nil {
					got = p.Traffic.RxPackets
				}
			}
		}
		if len(busy) == 0 {
			return st, got
		}
	}
	t.Fatalf("not drained after 60 s (hung: this bound only stops the wait): %v", busy)
	return nil, 0
}

// TestHotSpotCredits: at 100 % offered load from every HCA toward one, the
// credits hold every packet back instead of losing it: none is dropped,
// every one sent arrives once the senders stop, and on every link the
// receiver has counted every block the sender counted (a block lost to
// the accounting would be credit gone for good). The rate the hot-spot
// link reaches is ibfab bench hotspot's.
func TestHotSpotCredits(t *testing.T) {
	res := runHotSpot(t, "hot", hotSpotDuration)
	assert.Empty(t, res.drops, "credit flow control lost packets")
	assert.NotZero(t, res.sent)
	st, got := drained(t, res.f, "ca2-3")
	assert.Equal(t, res.sent, got, "packets sent by the generators / received by the hot spot")
	ports := map[string]nodeproc.PortStatus{}
	for _, n := range st.Nodes {
		for _, p := range n.Ports {
			ports[fmt.Sprintf("%s[%d]", n.Name, p.Port)] = p
		}
	}
	links := 0
	for name, p := range ports {
		peer, ok := ports[p.Peer]
		if !ok || p.State != "Active" {
			continue
		}
		links++
		require.Len(t, peer.Credits, len(p.Credits), "%s and %s operate different VLs", name, p.Peer)
		for vl, c := range p.Credits {
			assert.Equal(t, c.FCTBS, peer.Credits[vl].ABR, "%s VL%d FCTBS / %s ABR", name, vl, p.Peer)
		}
	}
	assert.Equal(t, 2*8, links, "link ends checked: 6 HCAs and 2 leaf-spine links")
}

// TestHotSpotWithoutFlowControl is the same run with nodes that ignore
// credits and small buffers: drops appear, which shows the test above can
// fail.
func TestHotSpotWithoutFlowControl(t *testing.T) {
	res := runHotSpot(t, "nofc", 5*time.Second, "--no-flow-control", "--rx-blocks", "128")
	var overruns uint64
	for k, v := range res.drops {
		if strings.HasSuffix(k, " buffer_overrun") {
			overruns += v
		}
	}
	assert.NotZero(t, overruns, "no buffer overruns without flow control")
}
