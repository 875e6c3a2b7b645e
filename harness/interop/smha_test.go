package interop_test

// SM election, handover and failover between ibsm and unmodified OpenSM,
// and between two ibsm (issue 21, part 1): on a row of three switches
// with a CA on each, an SM on ca0 and one on ca2 while ca1 watches.
// Every 200 ms the test reads both SMs' SMInfo from ca1 and requires
// exactly one Master; `sminfo` from ca1 names the master at the end;
// every port keeps its LID; a standby gives a dead master up within its
// polling bound.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/sm"
)

// How the SMs of these tests poll: every second, giving the master up
// once three polls in a row go unanswered (ibsm as the third times out,
// OpenSM at its poll after; both within PollingBound of the master's
// death); the master sweeps every 2 s. OpenSM gets the same through its
// options.
const (
	smhaPollInterval = time.Second
	smhaPollRetries  = 2
	smhaOpenSMConf   = "force_log_flush TRUE\nsweep_interval 2\nsminfo_polling_timeout 1000\npolling_retry_number 2\n"
	// smhaSampleEvery is the sampling period of the SMs' states.
	smhaSampleEvery = 200 * time.Millisecond
)

// smhaOpenSM starts OpenSM with priority prio at node.
func smhaOpenSM(t *testing.T, f *fabrictest.Fabric, node string, prio int) *fabrictest.OpenSM {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "opensm.conf")
	require.NoError(t, os.WriteFile(conf, []byte(smhaOpenSMConf), 0o644))
	return f.StartOpenSM(node, "-F", conf, "-p", strconv.Itoa(prio))
}

// smhaIbsm is ibsm running at an HCA, its JSON lines read as they come.
type smhaIbsm struct {
	node string
	d    *fabrictest.Daemon
}

// startIbsm runs ibsm with priority prio at node (through its attach
// point, --port sim), with extra flags.
func startIbsm(t *testing.T, f *fabrictest.Fabric, node string, prio int, extra ...string) *smhaIbsm {
	t.Helper()
	argv := append([]string{fabrictest.Bin(t, "ibsm"), "--port", "sim", "--json", "--priority", strconv.Itoa(prio),
		"--sweep-interval", "2s", "--polling-interval", smhaPollInterval.String(),
		"--polling-retries", strconv.Itoa(smhaPollRetries)}, extra...)
	return &smhaIbsm{node: node, d: f.StartUMAD(node, argv...)}
}

// smhaLine is one JSON line of ibsm: an SM event or a sweep's result.
type smhaLine struct {
	sm.SMEvent
	SubnetUp   bool   `json:"subnet_up"`
	RoutesKept bool   `json:"routes_kept"`
	SMState    string `json:"sm_state"`
}

// lines returns ibsm's JSON lines so far.
func (s *smhaIbsm) lines() []smhaLine {
	var out []smhaLine
	sc := bufio.NewScanner(strings.NewReader(s.d.Output()))
	for sc.Scan() {
		var l smhaLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Event != "" {
			out = append(out, l)
		}
	}
	return out
}

// wait waits for a line of ibsm that want accepts, after the first from,
// and returns its index and the time it was seen.
func (s *smhaIbsm) wait(t *testing.T, what string, from int, want func(smhaLine) bool) (int, time.Time) {
	t.Helper()
	at := -1
	fabrictest.Wait(t, madrouteWait, fmt.Sprintf("ibsm at %s: %s", s.node, what), func() bool {
		if exited, err := s.d.Exited(); exited {
			t.Fatalf("ibsm at %s exited (%v):\n%s", s.node, err, s.d.Output())
		}
		ls := s.lines()
		for i := from; i < len(ls); i++ {
			if want(ls[i]) {
				at = i
				return true
			}
		}
		return false
	})
	return at, time.Now()
}

func smhaEvent(action sm.SMAction, state string) func(smhaLine) bool {
	return func(l smhaLine) bool {
		return l.Event == "sm" && l.Action == action && (state == "" || l.State == state)
	}
}

func smhaUp(l smhaLine) bool { return l.Event == "sweep" && l.SubnetUp }

// smhaSampler reads the SMInfo of the SMs at their HCAs' LIDs from one
// HCA every smhaSampleEvery (the failover suite's reader).
type smhaSampler struct{ *runner.SMInfoSampler }

func newSampler(f *fabrictest.Fabric, from string, sms ...string) *smhaSampler {
	lids := map[string]uint16{}
	for _, n := range sms {
		lids[n] = f.Node(n).Ports[0].LID
	}
	return &smhaSampler{runner.NewSMInfoSampler(f.Name, from, lids)}
}

func (s *smhaSampler) start() { s.Start(smhaSampleEvery) }

// finish stops sampling, checks that every sample had exactly one Master
// and returns the samples.
func (s *smhaSampler) finish(t *testing.T) []runner.SMSample {
	t.Helper()
	samples := s.Stop()
	require.NotEmpty(t, samples)
	for i, st := range samples {
		assert.Len(t, st.States.Masters(), 1, "sample %d of %d: %v", i, len(samples), st.States)
	}
	t.Logf("%d samples (%d reads taken again), first %v, last %v", len(samples), s.Rereads(), samples[0].States, samples[len(samples)-1].States)
	return samples
}

// masterOf returns the SM node a sample finds Master.
func masterOf(st runner.SMSample) string { return st.States.Master() }

// sminfoNames checks that `sminfo` on node names the SM whose port is
// port 1 of master as the master.
func sminfoNames(t *testing.T, f *fabrictest.Fabric, node, master string) {
	t.Helper()
	guid := f.Topo.Node(f.Index(master)).Ports[1].GUID
	out := f.For(t).MustUMAD(node, "sminfo")
	assert.Contains(t, out, fmt.Sprintf("sm guid %#x,", guid), "sminfo on %s: %s", node, out)
	assert.Contains(t, out, "SMINFO_MASTER", out)
}

// TestSMHandoverIbsmToOpenSM: ibsm runs the subnet; OpenSM of higher
// priority starts, goes Standby, tells ibsm with Trap 144 at its poll;
// ibsm hands over and goes Standby; one Master at every sample, LIDs
// kept.
func TestSMHandoverIbsmToOpenSM(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	f := fabrictest.Up(t, "smho", madrouteTopo(t), harness.UpOptions{})
	ib := startIbsm(t, f, "ca0", 1)
	ib.wait(t, "subnet up", 0, smhaUp)
	lids := madrouteLIDsNow(f)
	smp := newSampler(f, "ca1", "ca0", "ca2")
	smp.start()

	o := smhaOpenSM(t, f, "ca2", 15)
	end := o.WaitLog(t, madrouteWait, 0, "Entering STANDBY state", "Entering MASTER state", "SUBNET UP")
	ib.wait(t, "handover", 0, smhaEvent(sm.SMActionHandoverSent, "Standby"))
	time.Sleep(2 * time.Second) // the SMs settled: samples after the handover
	samples := smp.finish(t)
	assert.Equal(t, "ca0", masterOf(samples[0]))
	assert.Equal(t, "ca2", masterOf(samples[len(samples)-1]))
	assert.Equal(t, lids, madrouteLIDsNow(f), "LIDs")
	sminfoNames(t, f, "ca1", "ca2")
	ib.wait(t, "Trap 144", 0, smhaEvent(sm.SMActionTrap144, "Master"))
	assert.NotContains(t, o.LogText(t, 0), "ERR 2F04", "OpenSM took ibsm's SMInfo Sets")
	assert.NotContains(t, o.LogText(t, end), "Entering STANDBY state", "OpenSM stays master")
	assert.NotContains(t, ib.d.Output(), "subnet not up", "a standby ibsm is no failure")
}

// TestSMFailoverOpenSMToIbsm: OpenSM runs the subnet with ibsm standby
// (which only polls); OpenSM dies; ibsm gives it up within its polling
// bound, takes over with every LID and OpenSM's forwarding tables kept,
// and every pair of hosts still talks.
func TestSMFailoverOpenSMToIbsm(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	f := fabrictest.Up(t, "smfo", madrouteTopo(t), harness.UpOptions{})
	o := smhaOpenSM(t, f, "ca0", 15)
	o.WaitLog(t, madrouteWait, 0, "Entering MASTER state", "SUBNET UP")
	lids := madrouteLIDsNow(f)
	ib := startIbsm(t, f, "ca2", 1)
	i, _ := ib.wait(t, "standby", 0, smhaEvent(sm.SMActionElection, "Standby"))
	// A standby only polls (one SMP a second) and answers OpenSM's
	// SMInfo Gets (at most one a sweep, every 2 s); it used to discover
	// the fabric again every sweep interval (27 SMPs here).
	const watch = 5 * smhaPollInterval
	before := f.Node("ca2").Sim.MADsIn
	time.Sleep(watch)
	sent := f.Node("ca2").Sim.MADsIn - before
	assert.GreaterOrEqual(t, sent, uint64(watch/smhaPollInterval)-1, "the polls")
	assert.LessOrEqual(t, sent, uint64(watch/smhaPollInterval+watch/(2*time.Second)+2), "polls and answers only")

	takeOver(t, f, o.D.Stop, ib, i, lids, "ca2")
}

// handedOver checks that ibsm on ca2, of a higher priority than the
// master on ca0, goes Standby first, is handed the subnet, acknowledges
// and brings it up, with one master at every sample of smp (which it
// finishes) and the LIDs kept.
func handedOver(t *testing.T, f *fabrictest.Fabric, smp *smhaSampler, ib *smhaIbsm, lids map[string]uint16) {
	t.Helper()
	ib.wait(t, "standby first", 0, smhaEvent(sm.SMActionElection, "Standby"))
	j, _ := ib.wait(t, "handover", 0, smhaEvent(sm.SMActionHandover, "Master"))
	ib.wait(t, "acknowledged", j, smhaEvent(sm.SMActionAcknowledgeSent, "Master"))
	ib.wait(t, "subnet up", j, smhaUp)
	time.Sleep(2 * time.Second)
	samples := smp.finish(t)
	assert.Equal(t, "ca0", masterOf(samples[0]))
	assert.Equal(t, "ca2", masterOf(samples[len(samples)-1]))
	assert.Equal(t, lids, madrouteLIDsNow(f), "LIDs after the handover")
	sminfoNames(t, f, "ca1", "ca2")
}

// takeOver stops the master with stop and checks that standby, whose
// events from line from on follow, gives it up within the polling bound
// and becomes master (named so by SMInfo from ca1) with the LIDs and the
// forwarding tables kept, every pair of hosts reaching each other.
func takeOver(t *testing.T, f *fabrictest.Fabric, stop func() error, standby *smhaIbsm, from int, lids map[string]uint16, name string) {
	t.Helper()
	require.NoError(t, stop())
	dead := time.Now() // the master has exited: it died no later than this
	_, gone := standby.wait(t, "polling timeout", from, smhaEvent(sm.SMActionPollingTimeout, "Discovering"))
	bound := sm.PollingBound(smhaPollInterval, smhaPollRetries)
	assert.LessOrEqual(t, gone.Sub(dead), bound, "the standby gave the master up after %v", gone.Sub(dead))
	t.Logf("master dead, the standby gave it up %v later (bound %v)", gone.Sub(dead), bound)
	j, _ := standby.wait(t, "master", from, smhaEvent(sm.SMActionElection, "Master"))
	k, _ := standby.wait(t, "subnet up", j, smhaUp)
	assert.True(t, standby.lines()[k].RoutesKept, "the dead master's tables kept")
	assert.Equal(t, lids, madrouteLIDsNow(f), "LIDs after the failover")
	sminfoNames(t, f, "ca1", name)
	f.CheckAllPairs(f.Hosts())
}

// TestSMIbsmPair: two ibsm, a shared LID file. The later one has the
// higher priority and is handed the subnet (one Master at every sample);
// then it dies and the first takes the subnet back within its polling
// bound, LIDs kept.
func TestSMIbsmPair(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	f := fabrictest.Up(t, "smpair", madrouteTopo(t), harness.UpOptions{})
	lidFile := filepath.Join(t.TempDir(), "guid2lid")
	a := startIbsm(t, f, "ca0", 1, "--lid-file", lidFile)
	a.wait(t, "subnet up", 0, smhaUp)
	lids := madrouteLIDsNow(f)
	smp := newSampler(f, "ca1", "ca0", "ca2")
	smp.start()
	b := startIbsm(t, f, "ca2", 5, "--lid-file", lidFile)
	handedOver(t, f, smp, b, lids)
	i, _ := a.wait(t, "acknowledge", 0, smhaEvent(sm.SMActionAcknowledge, "Standby"))

	takeOver(t, f, b.d.Stop, a, i, lids, "ca0")
}

// TestSMHandoverOpenSMToIbsm: OpenSM runs the subnet; ibsm of higher
// priority starts, goes Standby, and its Trap 144 has OpenSM hand over;
// ibsm acknowledges, which OpenSM takes (its legality check wants an
// ACKNOWLEDGE from a Standby SM's SMInfo). Then ibsm dies and OpenSM
// takes the subnet back, LIDs kept.
func TestSMHandoverOpenSMToIbsm(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	f := fabrictest.Up(t, "smhi", madrouteTopo(t), harness.UpOptions{})
	o := smhaOpenSM(t, f, "ca0", 1)
	o.WaitLog(t, madrouteWait, 0, "Entering MASTER state", "SUBNET UP")
	lids := madrouteLIDsNow(f)
	smp := newSampler(f, "ca1", "ca0", "ca2")
	smp.start()
	ib := startIbsm(t, f, "ca2", 15)
	handedOver(t, f, smp, ib, lids)
	standby := o.WaitLog(t, madrouteWait, 0, "Entering STANDBY state")
	for _, l := range ib.lines() {
		if l.Action == sm.SMActionAcknowledgeSent {
			assert.Empty(t, l.Reason, "OpenSM answered the ACKNOWLEDGE")
		}
	}
	assert.NotContains(t, o.LogText(t, 0), "ERR 2F04", "OpenSM took ibsm's ACKNOWLEDGE")

	require.NoError(t, ib.d.Stop())
	o.WaitLog(t, madrouteWait, standby, "Entering MASTER state", "SUBNET UP")
	assert.Equal(t, lids, madrouteLIDsNow(f), "LIDs after OpenSM took over")
}
