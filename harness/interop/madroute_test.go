package interop_test

// MADs reach the right client with the right bytes (issue 16 items 3, 4,
// 9, 12): saquery's filtered queries against OpenSM's SA give the records
// Debian's ibsim gives on the same topology file; ibping and ibsysstat
// reach their servers on other HCAs; a request of a class nobody serves
// gets a MAD status; OpenSM hands the subnet over to a higher-priority
// OpenSM and a standby takes over from a dead master, in both orders.

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/ibsimrun"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/ibsimtest"
	"ibfab/topologies"
)

// madrouteWait bounds the waits on OpenSM; nothing asserts on time.
const madrouteWait = 90 * time.Second

// madrouteTopo is three switches in a row, one CA on each: ca0 (the SM's
// in ibsim: node 0), ca1, ca2.
func madrouteTopo(t *testing.T) *topologies.Topology {
	t.Helper()
	topo, err := topologies.Mesh(3)
	require.NoError(t, err)
	return topo
}

// madrouteRecords splits saquery's output into its records ("<Name>
// dump:" blocks), each the map of its "field....value" lines.
func madrouteRecords(out string) []map[string]string {
	var recs []map[string]string
	field := regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9_ ]*?)\.{2,}(.*)$`)
	entry := regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s*$`) // LFTR's "LID port" lines
	for _, block := range regexp.MustCompile(`[A-Za-z ]+Record dump:`).Split(out, -1)[1:] {
		m := map[string]string{}
		for _, l := range strings.Split(block, "\n") {
			if s := field.FindStringSubmatch(l); s != nil {
				m[strings.TrimSpace(s[1])] = strings.TrimSpace(s[2])
			} else if s := entry.FindStringSubmatch(l); s != nil {
				m["LFT "+s[1]] = s[2]
			}
		}
		recs = append(recs, m)
	}
	return recs
}

// madrouteSAQueries are the filtered queries the issue names, for a
// fabric whose LIDs lid gives by node name.
func madrouteSAQueries(lid func(string) uint16) [][]string {
	s := func(n string) string { return strconv.Itoa(int(lid(n))) }
	return [][]string{
		{"LR", s("ca2")},
		{"LR", s("sw1")},
		{"PR", "--src-to-dst", s("ca1") + ":" + s("ca2")},
		{"SWIR", s("sw1")},
		{"SMIR"},
		{"PIR", s("ca1")},
		{"LFTR", s("sw2")},
		{"-s"},
	}
}

// madrouteDeviceFields are the record fields that describe the
// simulated silicon, not the subnet, and differ between ibsim's nodes and
// ours (or are counters): left out of the comparison.
var madrouteDeviceFields = map[string]bool{
	"mtu":             true, // PathRecord: the ports' MTUCap, 2048 in ibsim, 4096 here
	"capability_mask": true, // PortInfoRecord: CapabilityMask of the ports
	"ActCount":        true, // SMInfoRecord: the SM's activity counter
	// SwitchInfoRecord: capabilities and defaults of the switch.
	"LinearFDBCap": true, "LIDsPerPort": true, "PartitionEnforcementCap": true,
	"DefaultMulticastPrimaryPort": true, "DefaultMulticastNotPrimaryPort": true, "flags": true,
}

// opensmOnIbsim runs OpenSM as a daemon on ibsim and returns a function
// that runs saquery there, and the LIDs OpenSM gave.
func madrouteIbsim(t *testing.T, topo *topologies.Topology) (func(args ...string) string, map[uint64]uint16) {
	sim := ibsimtest.StartT(t, topo)
	env, err := ibsimrun.DiagEnv()
	require.NoError(t, err)
	dir := t.TempDir()
	conf := filepath.Join(dir, "opensm.conf")
	require.NoError(t, os.WriteFile(conf, []byte("force_log_flush TRUE\n"), 0o644))
	log := filepath.Join(dir, "opensm.log")
	osm := sim.Command(context.Background(), env, "env", "OSM_CACHE_DIR="+dir, "opensm", "-F", conf, "-f", log)
	require.NoError(t, osm.Start())
	var once sync.Once
	stop := func() {
		once.Do(func() {
			osm.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { osm.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				osm.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	fabrictest.Wait(t, madrouteWait, "OpenSM's SUBNET UP on ibsim", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "SUBNET UP")
	})
	g2l := fabrictest.ReadGUID2LID(t, filepath.Join(dir, "guid2lid"))
	return func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := sim.Diag(ctx, "saquery", args...)
		require.NoError(t, err, "saquery %v on ibsim", args)
		return string(out)
	}, g2l
}

// madrouteLIDs maps node names to LIDs through a GUID→LID map: a switch's
// port 0 GUID is its node GUID; a CA's port 1 GUID is node GUID + 1
// (ibsim's rule, which ibhca follows).
func madrouteLIDs(t *testing.T, topo *topologies.Topology, g2l map[uint64]uint16) func(string) uint16 {
	return func(name string) uint16 {
		i, ok := topo.Lookup(name)
		require.True(t, ok, name)
		n := topo.Nodes()[i]
		if lid, ok := g2l[n.GUID]; ok {
			return lid
		}
		lid, ok := g2l[n.GUID+1]
		require.True(t, ok, "no LID for %s (GUID %#x) in %v", name, n.GUID, g2l)
		return lid
	}
}

// TestMadrouteSAQuery runs saquery's filtered queries against OpenSM's SA
// on ibsim and on the soft fabric (from the SM's HCA and from another):
// the same records, where before the tail of each 256-byte answer (stale
// bytes) came out as extra records.
func TestMadrouteSAQuery(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	topo := madrouteTopo(t)
	simQuery, simG2L := madrouteIbsim(t, topo)
	simLID := madrouteLIDs(t, topo, simG2L)
	want := map[string]string{}
	for _, q := range madrouteSAQueries(simLID) {
		want[strings.Join(q, " ")] = simQuery(q...)
	}

	f := fabrictest.Up(t, "mrsa", topo, harness.UpOptions{})
	osm := f.StartOpenSM("ca0")
	osm.WaitLog(t, madrouteWait, 0, "SUBNET UP")
	g2l := osm.GUID2LID(t)
	assert.Equal(t, simG2L, g2l, "OpenSM's LIDs on ibsim and here")
	lid := madrouteLIDs(t, topo, g2l)
	for _, at := range []string{"ca0", "ca2"} {
		for _, q := range madrouteSAQueries(lid) {
			name := strings.Join(q, " ")
			t.Run(at+" "+name, func(t *testing.T) {
				got := f.For(t).MustUMAD(at, append([]string{"saquery"}, q...)...)
				t.Logf("ibsim:\n%s\nhere:\n%s", want[name], got)
				w, g := madrouteRecords(want[name]), madrouteRecords(got)
				require.NotEmpty(t, w, "ibsim's answer has records")
				for _, recs := range [][]map[string]string{w, g} {
					for _, r := range recs {
						for k := range madrouteDeviceFields {
							delete(r, k)
						}
					}
				}
				assert.Equal(t, w, g, "records")
			})
		}
	}
}

// madrouteUp brings Mesh(3) up under an OpenSM daemon at ca0 and returns
// the fabric, the OpenSM and the LIDs by node name.
func madrouteUp(t *testing.T, suffix string) (*fabrictest.Fabric, *fabrictest.OpenSM, func(string) uint16) {
	t.Helper()
	fabrictest.UMAD2Sim(t)
	topo := madrouteTopo(t)
	f := fabrictest.Up(t, suffix, topo, harness.UpOptions{})
	osm := f.StartOpenSM("ca0")
	osm.WaitLog(t, madrouteWait, 0, "SUBNET UP")
	return f, osm, madrouteLIDs(t, topo, osm.GUID2LID(t))
}

// madrouteServer starts a server diagnostic (ibping -S, ibsysstat -S) at
// node and waits until it is attached: a client of the node's attach
// point that has sent nothing yet.
func madrouteServer(t *testing.T, f *fabrictest.Fabric, node string, argv ...string) *fabrictest.Daemon {
	t.Helper()
	before := f.Node(node).Sim.Connects
	d := f.StartUMAD(node, argv...)
	fabrictest.Wait(t, madrouteWait, argv[0]+" attached", func() bool {
		if exited, err := d.Exited(); exited {
			t.Fatalf("%v exited: %v\n%s", argv, err, d.Output())
		}
		return f.Node(node).Sim.Connects > before
	})
	return d
}

// TestMadroutePingSysstat: ibping and ibsysstat from ca1 reach their
// servers at ca2 (a request of a class only that client takes, where
// before every request went to the SM client or nowhere: 100% loss), and
// vendstat, whose class nobody at ca2 serves, gets a MAD status back
// instead of timing out.
func TestMadroutePingSysstat(t *testing.T) {
	f, _, lid := madrouteUp(t, "mrping")
	ca2 := strconv.Itoa(int(lid("ca2")))

	ping := madrouteServer(t, f, "ca2", "ibping", "-S")
	out := f.MustUMAD("ca1", "ibping", "-c", "5", ca2)
	t.Logf("ibping:\n%s", out)
	assert.Contains(t, out, "5 packets transmitted, 5 received, 0% packet loss")
	require.NoError(t, ping.Stop())

	sysstat := madrouteServer(t, f, "ca2", "ibsysstat", "-S")
	out = f.MustUMAD("ca1", "ibsysstat", ca2, "host")
	t.Logf("ibsysstat:\n%s", out)
	host, err := os.Hostname()
	require.NoError(t, err)
	assert.Contains(t, out, host, "the server's host name")
	require.NoError(t, sysstat.Stop())

	before := f.Node("ca2").Sim.Unmatched
	stdout, stderr, err := f.UMAD("ca1", "vendstat", "-N", ca2)
	t.Logf("vendstat: %v\n%s\n%s", err, stdout, stderr)
	assert.Error(t, err, "vendstat of a node with no vendor agent")
	// libibmad's report of a response with a nonzero MAD status (a
	// timeout is reported without it).
	assert.Contains(t, stderr, "method 1, attribute 1 failure", "answered with a status")
	assert.Greater(t, f.Node("ca2").Sim.Unmatched, before, "ca2 answered it with a status")
}

// madrouteOpenSMConf is an OpenSM configuration that makes SM election
// quick: its log flushed line by line, a sweep every 2 s (a master finds a
// new SM of higher priority at its next sweep), and a standby that polls
// the master every second and takes over after two polls fail.
const madrouteOpenSMConf = "force_log_flush TRUE\nsweep_interval 2\nsminfo_polling_timeout 1000\npolling_retry_number 2\n"

// madrouteStartOpenSM starts OpenSM with priority prio at node.
func madrouteStartOpenSM(t *testing.T, f *fabrictest.Fabric, node string, prio int) *fabrictest.OpenSM {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "opensm.conf")
	require.NoError(t, os.WriteFile(conf, []byte(madrouteOpenSMConf), 0o644))
	// The second -F is the one OpenSM reads.
	return f.StartOpenSM(node, "-F", conf, "-p", strconv.Itoa(prio))
}

// madrouteLIDsNow returns every port's LID from ibfab status.
func madrouteLIDsNow(f *fabrictest.Fabric) map[string]uint16 {
	m := map[string]uint16{}
	for _, n := range f.Status().Nodes {
		m[n.Name] = n.Ports[0].LID
	}
	return m
}

// TestMadrouteHandover: OpenSM hands the subnet to an OpenSM of higher
// priority started after it, and a standby takes over from a master that
// dies, LIDs kept, whichever priority starts first. It fails if the new
// master's Trap 144 is swallowed by its own HCA's SMA: its QP0 window then
// fills and it hangs in its heavy sweep with no SUBNET UP.
func TestMadrouteHandover(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	for _, tt := range []struct {
		name         string
		first, later int // priorities
	}{
		{"low first", 1, 15},
		{"high first", 15, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := fabrictest.Up(t, "mrho", madrouteTopo(t), harness.UpOptions{})
			a := madrouteStartOpenSM(t, f, "ca0", tt.first)
			a.WaitLog(t, madrouteWait, 0, "Entering MASTER state", "SUBNET UP")
			lids := madrouteLIDsNow(f)
			for n, l := range lids {
				require.NotZero(t, l, "%s has no LID", n)
			}
			b := madrouteStartOpenSM(t, f, "ca2", tt.later)
			master, standby := a, b
			if tt.later > tt.first {
				master, standby = b, a
				b.WaitLog(t, madrouteWait, 0, "Entering MASTER state", "SUBNET UP")
				a.WaitLog(t, madrouteWait, 0, "Entering STANDBY state")
			} else {
				b.WaitLog(t, madrouteWait, 0, "Entering STANDBY state")
			}
			assert.Equal(t, lids, madrouteLIDsNow(f), "LIDs after the election")
			for _, n := range []string{"ca0", "ca2"} {
				t.Logf("%s attach point: %+v", n, *f.Node(n).Sim)
			}
			sbLog := len(standby.LogText(t, 0))
			t.Logf("master %s, standby %s", master.Dir, standby.Dir)

			// The master dies: the standby takes over.
			require.NoError(t, master.D.Stop())
			standby.WaitLog(t, madrouteWait, sbLog, "Entering MASTER state", "SUBNET UP")
			assert.Equal(t, lids, madrouteLIDsNow(f), "LIDs after the failover")
		})
	}
}
