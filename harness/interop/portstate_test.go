package interop_test

// Port state Sets of ibportstate against the soft fabric: what the SM
// does to one end of a link reaches the other end at once, as the loss of
// signal does on silicon.

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// portstateNet is two switches in a line with a host on each: the link
// sw1[2]-sw2[1] is the one the tests take down, from ca1 through sw1[1].
const portstateNet = `
Switch 2 "sw1"
[1] "ca1"[1]
[2] "sw2"[1]

Switch 2 "sw2"
[1] "sw1"[2]
[2] "ca2"[1]

Hca 1 "ca1"
[1] "sw1"[1]

Hca 1 "ca2"
[1] "sw2"[2]
`

// portstateWait bounds the waits on tools and links; the one timing the
// test asserts is the 50 ms.
const portstateWait = 30 * time.Second

// portstateParse parses a net file given as text.
func portstateParse(t *testing.T, net string) *topologies.Topology {
	t.Helper()
	topo, err := topologies.Parse(strings.NewReader(net), t.Name())
	require.NoError(t, err)
	return topo
}

// portstateUp brings the fabric of net up and configures it with one
// OpenSM sweep from ca1.
func portstateUp(t *testing.T, suffix, net string) *fabrictest.Fabric {
	t.Helper()
	f, _ := portstateUpOSM(t, suffix, net)
	return f
}

// portstateUpOSM is portstateUp, with the OpenSM it runs.
func portstateUpOSM(t *testing.T, suffix, net string) (*fabrictest.Fabric, *fabrictest.OpenSM) {
	t.Helper()
	f := fabrictest.Up(t, suffix, portstateParse(t, net), harness.UpOptions{})
	osm := f.StartOpenSM("ca1")
	osm.WaitLog(t, portstateWait, 0, "SUBNET UP")
	fabrictest.Wait(t, portstateWait, "every port Active", func() bool {
		for _, n := range f.Status().Nodes {
			for _, p := range n.Ports {
				if p.Port > 0 && p.Peer != "" && p.State != "Active" {
					return false
				}
			}
		}
		return true
	})
	return f, osm
}

// portstateOf returns "Phys/State" of port num of node. It does not fail
// the test (the watch calls it from its own goroutine).
func portstateOf(f *fabrictest.Fabric, node string, num int) string {
	var st nodeproc.Status
	if err := f.Call(node, "status", nil, &st); err != nil {
		return "status: " + err.Error()
	}
	for _, p := range st.Ports {
		if p.Port == num {
			return p.Phys + "/" + p.State
		}
	}
	return "missing"
}

// portstateWatch polls two ports' states until stop is closed and returns
// when each first left LinkUp/Active.
type portstateWatch struct {
	mu         sync.Mutex
	left       [2]time.Time
	last       [2]string
	stop, done chan struct{}
}

func portstateStartWatch(f *fabrictest.Fabric, a, b [2]string) *portstateWatch {
	w := &portstateWatch{stop: make(chan struct{}), done: make(chan struct{})}
	ends := [2][2]string{a, b}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			for i, e := range ends {
				num, _ := strconv.Atoi(e[1])
				s := portstateOf(f, e[0], num)
				now := time.Now()
				w.mu.Lock()
				w.last[i] = s
				if s != "LinkUp/Active" && w.left[i].IsZero() {
					w.left[i] = now
				}
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// wait waits until both ports have left LinkUp/Active and stops polling.
func (w *portstateWatch) wait(t *testing.T) (local, peer time.Time, last [2]string) {
	t.Helper()
	fabrictest.Wait(t, portstateWait, "both ends down", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return !w.left[0].IsZero() && !w.left[1].IsZero()
	})
	close(w.stop)
	<-w.done
	return w.left[0], w.left[1], w.last
}

// TestPortStateSetReachesPeer runs ibportstate disable and reset on
// sw1[2], through sw1's LID: sw2[1], the far end, leaves LinkUp/Active
// at once after sw1[2] (Polling/Down by the veth's carrier, not after the
// liveness timeout; fabrictest.PeerLossBound tells the two apart). Disable holds
// the link down until enable; reset retrains it by itself; both ends come
// back LinkUp.
func TestPortStateSetReachesPeer(t *testing.T) {
	f := portstateUp(t, "pstate", portstateNet)
	var lid uint16
	for _, n := range f.Status().Nodes {
		if n.Name == "sw1" {
			lid = n.Ports[0].LID
		}
	}
	require.NotZero(t, lid, "sw1 has no LID")
	sw1 := strconv.Itoa(int(lid))
	for _, tt := range []struct {
		op        string
		wantLocal string // sw1[2] once down
		enable    bool
	}{
		{op: "disable", wantLocal: "Disabled/Down", enable: true},
		{op: "reset"},
	} {
		t.Run(tt.op, func(t *testing.T) {
			f := f.For(t)
			w := portstateStartWatch(f, [2]string{"sw1", "2"}, [2]string{"sw2", "1"})
			f.MustUMAD("ca1", "ibportstate", sw1, "2", tt.op)
			local, peer, last := w.wait(t)
			lag := peer.Sub(local)
			t.Logf("ibportstate %s: sw2[1] left LinkUp/Active %v after sw1[2] (then %s, %s)",
				tt.op, lag.Round(time.Millisecond), last[0], last[1])
			assert.LessOrEqual(t, lag, f.PeerLossBound(), "the far end learned late")
			if tt.enable {
				assert.Equal(t, tt.wantLocal, portstateOf(f, "sw1", 2))
				assert.Equal(t, "Polling/Down", portstateOf(f, "sw2", 1), "far end of a disabled port")
				f.MustUMAD("ca1", "ibportstate", sw1, "2", "enable")
			}
			// OpenSM, told by the switches' traps, takes the link back
			// to Active.
			fabrictest.Wait(t, portstateWait, "the link back to Active", func() bool {
				return portstateOf(f, "sw1", 2) == "LinkUp/Active" && portstateOf(f, "sw2", 1) == "LinkUp/Active"
			})
		})
	}
}
