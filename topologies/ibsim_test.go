package topologies_test

// The ibsim round trip: for each topology, write a net file, load it into
// Debian's ibsim, discover the simulated fabric with ibnetdiscover through
// umad2sim, parse what it prints and compare it with the model.
//
//	  Write          ibsim -s FILE                  ibnetdiscover
//	model ──▶ file ─────────────▶ simulated fabric ───────────────▶ output ──▶ Parse ──▶ compare
//	                    (one fresh network namespace per ibsim: its socket is abstract)

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/ibsimrun"
	"ibfab/internal/testsupport"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

const (
	ibsimReadyTimeout = 60 * time.Second
	discoverTimeout   = 2 * time.Minute
)

var netnsSeq atomic.Int32

// umad2simLib finds Debian's libumad2sim.so where ibsimrun looks for it.
func umad2simLib(t *testing.T) string {
	t.Helper()
	return testenv.RequireFile(t, ibsimrun.UMAD2SimPackage, ibsimrun.UMAD2SimGlobs...)
}

// requireIbsim skips the test (through testenv) unless it can run ibsim
// and ibnetdiscover in a namespace.
func requireIbsim(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "ip", "iproute2")
	testenv.RequireProgram(t, "ibsim", "ibsim-utils")
	testenv.RequireProgram(t, "ibnetdiscover", "infiniband-diags")
	umad2simLib(t)
}

// startIbsim runs ibsim on file in a new network namespace and returns the
// namespace once ibsim says it is ready. Cleanup kills ibsim and deletes
// the namespace, also when the test fails.
func startIbsim(t *testing.T, file string) string {
	t.Helper()
	ns := fmt.Sprintf("ibf-t%d-%d", os.Getpid(), netnsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", ns, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete %s: %v: %s", ns, err, out)
		}
	})

	// ip netns exec execs ibsim in place, so the PID is ibsim's. ibsim reads
	// console commands from stdin and quits at EOF: keep the pipe open.
	cmd := exec.Command("ip", "netns", "exec", ns, "ibsim", "-s", file)
	out := &testsupport.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start(), "starting ibsim")
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("ibsim (pid %d) did not exit after kill", cmd.Process.Pid)
		}
	})

	deadline := time.After(ibsimReadyTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(out.String(), "Network simulator ready") {
		select {
		case <-exited:
			t.Fatalf("ibsim -s %s exited before it was ready:\n%s", file, out)
		case <-deadline:
			t.Fatalf("ibsim -s %s not ready after %v:\n%s", file, ibsimReadyTimeout, out)
		case <-tick.C:
		}
	}
	return ns
}

// discover runs ibnetdiscover against the ibsim in namespace ns and parses
// its output.
func discover(t *testing.T, ns string) (*topologies.Topology, string) {
	t.Helper()
	lib := umad2simLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), discoverTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "env", "LD_PRELOAD="+lib, "ibnetdiscover")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "ibnetdiscover in %s: %s", ns, stderr.String())
	got, err := topologies.Parse(bytes.NewReader(stdout.Bytes()), "ibnetdiscover output")
	require.NoError(t, err, "parsing ibnetdiscover's output:\n%s", stdout.String())
	return got, stdout.String()
}

// compareDiscovered checks a discovered fabric against the model, nodes
// mapped by GUID since ibsim keeps ours: the same nodes by type, ports and
// description, the same links at the same rates, the same degree per node.
func compareDiscovered(t *testing.T, model, disc *topologies.Topology) {
	t.Helper()
	for _, typ := range []topologies.NodeType{topologies.Switch, topologies.CA, topologies.Router} {
		assert.Equal(t, model.Count(typ), disc.Count(typ), "number of %v nodes", typ)
	}
	prefix := map[topologies.NodeType]string{topologies.Switch: "S-", topologies.CA: "H-", topologies.Router: "R-"}
	for i, n := range model.Nodes() {
		j, ok := disc.LookupGUID(n.GUID)
		if !assert.True(t, ok, "node %s (GUID %#x) was not discovered", n.Name, n.GUID) {
			continue
		}
		d := disc.Node(j)
		assert.Equal(t, fmt.Sprintf("%s%016x", prefix[n.Type], n.GUID), d.Name)
		assert.Equal(t, n.Type, d.Type, "type of %s", n.Name)
		assert.Equal(t, n.NumPorts, d.NumPorts, "ports of %s", n.Name)
		assert.Equal(t, n.Description, d.Description, "description of %s", n.Name)
		assert.Equal(t, model.Degree(i), disc.Degree(j), "degree of %s", n.Name)
	}
	assert.Equal(t, byGUID(model), byGUID(disc), "fabric by GUID (-model +discovered)")
}

func TestIbsimRoundTrip(t *testing.T) {
	requireIbsim(t)
	tops := generated(t)
	ft := tops["fattree"]
	require.GreaterOrEqual(t, ft.Count(topologies.CA), 400, "the fat tree must have at least 400 hosts")
	for _, name := range []string{"thesis8", "irregular", "mesh", "torus", "ktree", "fattree", "mixed"} {
		t.Run(name, func(t *testing.T) {
			model := tops[name]
			file := filepath.Join(t.TempDir(), name+".net")
			require.NoError(t, topologies.WriteFile(file, model))
			ns := startIbsim(t, file)
			disc, out := discover(t, ns)
			// ibsim puts the SM's port on the first node written, a CA.
			assert.Contains(t, out, fmt.Sprintf("# Initiated from node %016x", model.Node(0).GUID))
			compareDiscovered(t, model, disc)
		})
	}
}

// TestIbsimNetExamples loads ibsim's own examples, which have no GUID
// lines, and checks that Parse assigns the GUIDs ibsim assigns.
func TestIbsimNetExamples(t *testing.T) {
	requireIbsim(t)
	for _, name := range netExamples {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(netExamplesDir, name)
			model, err := topologies.ParseFile(file)
			require.NoError(t, err)
			ns := startIbsim(t, file)
			disc, _ := discover(t, ns)
			compareDiscovered(t, model, disc)
		})
	}
}
