package fabrictest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/ctl"
	"ibfab/internal/testsupport"
	"ibfab/internal/testsupport/testenv"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Bin returns the path of a binary BuildBinaries built.
func Bin(tb testing.TB, name string) string {
	BuildBinaries(tb)
	return filepath.Join(buildDir, name)
}

// BuildBinaries builds ibswitch, ibhca, ibsm and ibfab once per test process into a
// temporary directory and points the harness at it (harness.BinEnv).
func BuildBinaries(tb testing.TB) {
	tb.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "ibfab-bin-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", buildDir, "ibfab/cmd/ibswitch", "ibfab/cmd/ibhca", "ibfab/cmd/ibsm", "ibfab/cmd/ibfab", "ibfab/cmd/ibmgmt").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		buildErr = os.Setenv(harness.BinEnv, buildDir)
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
}

// Fabric is a running fabric of a test.
type Fabric struct {
	Name string
	Topo *topologies.Topology
	// Scale is the fabric's time scale (emulated time runs Scale times
	// slower), Liveness its nodes' liveness timeout in emulated time.
	Scale    float64
	Liveness time.Duration
	tb       testing.TB
}

// Name returns a fabric name for tb unique on the machine: "t", the PID and
// a suffix.
func Name(suffix string) string {
	return fmt.Sprintf("t%d_%s", os.Getpid(), suffix)
}

// Up brings topo up as fabric Name(suffix) with processes and registers a
// teardown that fails tb if anything is left behind: a namespace, the run
// directory (sockets, state), or a process in the fabric's namespaces.
func Up(tb testing.TB, suffix string, topo *topologies.Topology, o harness.UpOptions) *Fabric {
	tb.Helper()
	testenv.RequireRoot(tb)
	BuildBinaries(tb)
	f := &Fabric{Name: Name(suffix), Topo: topo, Scale: max(o.TimeScale, 1), Liveness: liveness(o.NodeArgs), tb: tb}
	tb.Cleanup(func() {
		ns, _ := fabricnet.Namespaces(f.Name)
		if err := harness.Down(f.Name); err != nil {
			tb.Errorf("down: %v", err)
		}
		if left, _ := fabricnet.Namespaces(f.Name); len(left) > 0 {
			tb.Errorf("namespaces left behind: %v", left)
		}
		if pids, _ := fabricnet.Processes(ns); len(pids) > 0 {
			tb.Errorf("processes left behind: %v", pids)
		}
		if _, err := os.Stat(filepath.Join(harness.RunDir, f.Name)); err == nil {
			tb.Errorf("run directory %s left behind", filepath.Join(harness.RunDir, f.Name))
		}
	})
	if _, err := harness.Up(f.Name, topo, o); err != nil {
		tb.Fatalf("up: %v", err)
	}
	return f
}

// Call makes one control call to node.
func (f *Fabric) Call(node, op string, args, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return ctl.Call(ctx, nodeproc.SocketPath(f.Name, node), op, args, result)
}

// MustCall is Call failing the test on error.
func (f *Fabric) MustCall(node, op string, args, result any) {
	f.tb.Helper()
	if err := f.Call(node, op, args, result); err != nil {
		f.tb.Fatalf("%s %s: %v", node, op, err)
	}
}

// Status returns the status of the whole fabric.
func (f *Fabric) Status() *harness.FabricStatus {
	f.tb.Helper()
	s, err := harness.Status(context.Background(), f.Name)
	if err != nil {
		f.tb.Fatal(err)
	}
	return s
}

// Node returns the status of one node.
func (f *Fabric) Node(name string) nodeproc.Status {
	f.tb.Helper()
	var s nodeproc.Status
	f.MustCall(name, "status", nil, &s)
	return s
}

// Index returns the topology index of node name.
func (f *Fabric) Index(name string) int {
	f.tb.Helper()
	i, ok := f.Topo.Lookup(name)
	if !ok {
		f.tb.Fatalf("no node %q", name)
	}
	return i
}

// PortName is "node[port]", as status prints peers.
func PortName(t *topologies.Topology, p topologies.PortRef) string {
	return fmt.Sprintf("%s[%d]", t.Node(p.Node).Name, p.Port)
}

// liveness is the --liveness of node args ("-liveness D", "--liveness=D",
// …), else the nodes' default.
func liveness(args []string) time.Duration {
	for i, a := range args {
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "liveness" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			v = args[i+1]
		}
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return nodeproc.DefaultLiveness
}

// PeerLossBound is how soon after a node dies (or its veth goes down) its
// neighbours must have seen it: they see it at once, by loss of signal
// (peerwatch, the veth's carrier), where without it only the liveness
// timeout (f.Liveness, scaled by the time scale) would take their ports
// down. Half of that timeout still tells the two apart and leaves the rest
// to a loaded machine: two cores shared with every node process.
func (f *Fabric) PeerLossBound() time.Duration {
	return time.Duration(float64(f.Liveness) * f.Scale / 2)
}

// Wait polls cond every 10 ms until it holds. timeout only stops a test
// that hangs: nothing asserts on how long cond took (Within does).
func Wait(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !poll(timeout, cond) {
		tb.Fatalf("%s: still not after %v: hung (this timeout only stops a stuck test)", what, timeout)
	}
}

// Within fails tb unless cond holds within bound, a time the test asserts
// on: the caller derives it from the fabric's own timers and scale (as
// PeerLossBound) and says why next to it.
func Within(tb testing.TB, bound time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !poll(bound, cond) {
		tb.Fatalf("%s: not within %v", what, bound)
	}
}

// poll reports whether cond held, polled every 10 ms, before timeout.
func poll(timeout time.Duration, cond func() bool) bool {
	return testsupport.PollEvery(timeout, 10*time.Millisecond, cond)
}

// Hosts returns the names of the fabric's HCAs.
func (f *Fabric) Hosts() []string {
	var out []string
	for _, n := range f.Topo.Nodes() {
		if n.Type == topologies.CA {
			out = append(out, n.Name)
		}
	}
	return out
}

// Exec runs argv in node's namespace and returns its combined output.
func (f *Fabric) Exec(node string, env []string, argv ...string) ([]byte, error) {
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(os.Environ(), env...)
	var out []byte
	err := fabricnet.Do(fabricnet.Namespace(f.Name, node), func() error {
		var err error
		out, err = c.CombinedOutput()
		return err
	})
	return out, err
}

// Star is one 4-port switch, sw1 (GUID 0x1000), with two HCAs, ca1 and
// ca2 (0x2000, 0x3000), on its ports 1 and 2: the smallest fabric with a
// hop between two hosts and two free switch ports.
func Star(tb testing.TB) *topologies.Topology {
	tb.Helper()
	topo := topologies.New()
	for _, n := range []topologies.Node{
		{Type: topologies.Switch, Name: "sw1", NumPorts: 4, GUID: 0x1000},
		{Type: topologies.CA, Name: "ca1", NumPorts: 1, GUID: 0x2000},
		{Type: topologies.CA, Name: "ca2", NumPorts: 1, GUID: 0x3000},
	} {
		if _, err := topo.AddNode(n); err != nil {
			tb.Fatal(err)
		}
	}
	for ca := 1; ca <= 2; ca++ {
		if err := topo.Connect(topologies.PortRef{Node: ca, Port: 1}, topologies.PortRef{Node: 0, Port: ca}, 0, 0); err != nil {
			tb.Fatal(err)
		}
	}
	return topo
}
