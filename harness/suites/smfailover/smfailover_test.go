package smfailover

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness/suites/runner"
	"ibfab/sm"
)

func TestFailoverPlan(t *testing.T) {
	full := failoverPlan(false)
	require.Len(t, full, 6)
	seen := map[string]bool{}
	for _, c := range full {
		assert.False(t, seen[c.id()], "case %s twice", c)
		seen[c.id()] = true
	}
	for _, p := range FailoverPairings {
		for _, s := range []FailoverScenario{FailoverKill, FailoverHandover} {
			assert.True(t, seen[failoverCase{p, s}.id()], "%s %s in the full plan", p, s)
		}
	}
	quick := failoverPlan(true)
	require.NotEmpty(t, quick)
	assert.Less(t, len(quick), len(full))
	for _, c := range quick {
		assert.True(t, seen[c.id()], "quick case %s is one of the full plan's", c)
	}
}

func TestFailoverRoles(t *testing.T) {
	topo, err := failoverTopology()
	require.NoError(t, err)
	a, b, obs, hosts, err := failoverRoles(topo)
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	assert.GreaterOrEqual(t, len(hosts), 2, "traffic needs two non-SM hosts")
	assert.Contains(t, hosts, obs)
	assert.NotContains(t, hosts, a)
	assert.NotContains(t, hosts, b)
}

func TestFailoverConf(t *testing.T) {
	assert.Equal(t, "sweep_interval 2\nsminfo_polling_timeout 1000\npolling_retry_number 2\nqos TRUE\n", failoverOpenSMConf())
	assert.Equal(t, []string{"--priority", "10", "--pre-block=false", "--sweep-interval", "2s", "--polling-interval", "1s", "--polling-retries", "2"}, failoverIbsmArgs(10))
	assert.Equal(t, 4*time.Second, sm.PollingBound(FailoverPollInterval, FailoverPollRetries))
}

// smSamples builds readings 200 ms apart from t0, each "A,B" states
// ("M" Master, "S" Standby, "-" no answer, "D" Discovering).
func smSamples(t0 time.Time, rows ...string) []runner.SMSample {
	name := map[string]string{"M": "Master", "S": "Standby", "-": "", "D": "Discovering"}
	var out []runner.SMSample
	for i, r := range rows {
		a, b, _ := strings.Cut(r, ",")
		out = append(out, runner.SMSample{At: t0.Add(time.Duration(i) * 200 * time.Millisecond), States: runner.SMState{"ca0": name[a], "ca5": name[b]}})
	}
	return out
}

func TestSMStateMasters(t *testing.T) {
	for _, tc := range []struct {
		s      runner.SMState
		master string
		n      int
	}{
		{runner.SMState{"a": "Master", "b": "Standby"}, "a", 1},
		{runner.SMState{"a": "Master", "b": "Master"}, "", 2},
		{runner.SMState{"a": "", "b": "Standby"}, "", 0},
		{runner.SMState{}, "", 0},
	} {
		assert.Equal(t, tc.master, tc.s.Master(), "%v", tc.s)
		assert.Len(t, tc.s.Masters(), tc.n, "%v", tc.s)
	}
}

func TestNotOneMaster(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ss := smSamples(t0, "M,S", "M,S", "-,S", "-,D", "-,M", "M,M", "S,M")
	for _, tc := range []struct {
		name     string
		from, to time.Time
		want     int
	}{
		{"all readings", time.Time{}, time.Time{}, 3},
		{"the kill's gap left out", t0.Add(400 * time.Millisecond), t0.Add(800 * time.Millisecond), 1},
		{"open-ended gap", t0.Add(400 * time.Millisecond), time.Time{}, 0},
	} {
		assert.Equal(t, tc.want, notOneMaster(ss, tc.from, tc.to), tc.name)
	}
}

func TestFirstStateAndLeft(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ss := smSamples(t0, "M,S", "-,S", "-,-", "-,D", "-,M")
	at, ok := firstState(ss, t0, "ca5", "Master")
	require.True(t, ok)
	assert.Equal(t, t0.Add(800*time.Millisecond), at)
	at, ok = firstLeft(ss, t0, "ca5")
	require.True(t, ok)
	assert.Equal(t, t0.Add(600*time.Millisecond), at, "an unanswered read is not leaving Standby")
	_, ok = firstState(ss, t0.Add(time.Second), "ca5", "Master")
	assert.False(t, ok)
	_, ok = firstLeft(ss, t0, "nobody")
	assert.False(t, ok)
}

func TestMastersAround(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ss := smSamples(t0, "M,S", "M,S", "S,M", "S,M")
	assert.Equal(t, map[string]bool{"ca0": true}, mastersAround(ss, t0.Add(100*time.Millisecond), t0.Add(150*time.Millisecond)))
	assert.Equal(t, map[string]bool{"ca0": true, "ca5": true}, mastersAround(ss, t0.Add(300*time.Millisecond), t0.Add(350*time.Millisecond)))
	assert.Equal(t, map[string]bool{"ca5": true}, mastersAround(ss, t0.Add(500*time.Millisecond), t0.Add(time.Second)), "no reading after: the one before")
	assert.Empty(t, mastersAround(nil, t0, t0))
}

const sminfoOut = "sminfo: sm lid 1 sm guid 0x2c90000000101, activity count 42 priority 10 state 3 SMINFO_MASTER\n"

func TestParseSMInfo(t *testing.T) {
	a, err := runner.ParseSMInfo(sminfoOut)
	require.NoError(t, err)
	assert.Equal(t, runner.SMInfoAnswer{LID: 1, GUID: 0x2c90000000101, Priority: 10, State: "SMINFO_MASTER"}, a)
	for _, bad := range []string{"", "ibwarn: [123] mad_rpc: _do_madrpc failed; dport (Lid 1)\nsminfo: iberror: failed: query\n",
		"sminfo: sm lid 99999 sm guid 0x1, activity count 1 priority 1 state 3 SMINFO_MASTER"} {
		_, err := runner.ParseSMInfo(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func FuzzParseSMInfo(f *testing.F) {
	f.Add(sminfoOut)
	f.Add("sminfo: sm lid 65535 sm guid 0xffffffffffffffffff, activity count 1 priority 99999999999999999999 state 1 SMINFO_STANDBY")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := runner.ParseSMInfo(s)
		if err == nil && !strings.HasPrefix(a.State, "SMINFO_") {
			t.Fatalf("state %q", a.State)
		}
	})
}

func TestJudgeSMInfo(t *testing.T) {
	guids := map[uint64]string{0x2c90000000101: "ca0", 0x2c90000000601: "ca5"}
	standby := strings.Replace(sminfoOut, "SMINFO_MASTER", "SMINFO_STANDBY", 1)
	other := strings.Replace(sminfoOut, "0x2c90000000101", "0x2c90000000601", 1)
	for _, tc := range []struct {
		name    string
		out     string
		err     error
		masters map[string]bool
		ok      bool
		named   string
	}{
		{"names the master", sminfoOut, nil, map[string]bool{"ca0": true}, true, "ca0"},
		{"either side of a handover", sminfoOut, nil, map[string]bool{"ca0": true, "ca5": true}, true, "ca0"},
		{"names the other SM", other, nil, map[string]bool{"ca0": true}, false, "ca5"},
		{"its master is Standby", standby, nil, map[string]bool{"ca0": true}, false, "ca0"},
		{"failed", "", errors.New("exit status 255"), map[string]bool{"ca0": true}, false, ""},
		{"no master to name", sminfoOut, nil, map[string]bool{}, false, "ca0"},
	} {
		v := judgeSMInfo(tc.out, tc.err, guids, tc.masters)
		assert.Equal(t, tc.ok, v.OK, tc.name)
		assert.Equal(t, tc.named, v.Named, tc.name)
		if tc.err != nil {
			assert.NotEmpty(t, v.Error, tc.name)
		}
	}
}

func TestLIDChanges(t *testing.T) {
	before := map[string]uint16{"sw1[0]": 1, "ca0[1]": 2, "ca1[1]": 3}
	assert.Empty(t, lidChanges(before, map[string]uint16{"sw1[0]": 1, "ca0[1]": 2, "ca1[1]": 3}))
	assert.Equal(t, []string{"ca0[1] 2→7", "ca1[1] 3→0", "ca9[1] new 9"},
		lidChanges(before, map[string]uint16{"sw1[0]": 1, "ca0[1]": 7, "ca9[1]": 9}))
}

func TestFailoverMasterEvent(t *testing.T) {
	t0 := time.Unix(1000, 0)
	evs := []sm.SMEvent{
		{Event: "sm", Action: sm.SMActionElection, State: "Standby"},
		{Event: "sm", Action: sm.SMActionPollingTimeout, State: "Discovering"},
		{Event: "sm", Action: sm.SMActionElection, State: "Master"},
	}
	ats := []time.Time{t0, t0.Add(3 * time.Second), t0.Add(3500 * time.Millisecond)}
	at, ok := failoverMasterEvent(evs, ats, t0.Add(time.Second), sm.SMActionElection, sm.SMActionHandover)
	require.True(t, ok)
	assert.Equal(t, ats[2], at)
	_, ok = failoverMasterEvent(evs, ats, t0.Add(4*time.Second), sm.SMActionElection)
	assert.False(t, ok)
	at, ok = failoverPollingTimeout(evs, ats, t0.Add(time.Second))
	require.True(t, ok)
	assert.Equal(t, ats[1], at)
}

func ptr(v float64) *float64 { return &v }

// goodKill is a kill case whose every check passes.
func goodKill() FailoverCase {
	return FailoverCase{Pairing: FailoverPairing{runner.SMOpenSM, runner.SMIbsm}, Scenario: FailoverKill, FirstNode: "ca0", SecondNode: "ca5",
		BoundMs: 4000, DetectMs: ptr(3100), MasterMs: ptr(3300), UpMs: ptr(3600), MasterFrom: "ibsm's event",
		PortsRead: 24, LIDsChanged: []string{}, Flows: 12, Sent: 5000, Received: 5000,
		Samples: []FailoverSample{{T: 1, States: runner.SMState{"ca0": "Master", "ca5": "Standby"}}}, FinalMaster: "ca5",
		SMInfo: []FailoverSMInfo{{T: 1, Want: "ca0", Named: "ca0", State: "SMINFO_MASTER", OK: true}}}
}

func TestFailoverChecks(t *testing.T) {
	failed := func(c FailoverCase) []string {
		var out []string
		for _, ch := range failoverChecks(&c) {
			if !ch.OK {
				out = append(out, ch.Name)
			}
		}
		return out
	}
	assert.Empty(t, failed(goodKill()))
	ho := goodKill()
	ho.Scenario, ho.DetectMs = FailoverHandover, nil
	assert.Empty(t, failed(ho), "a handover has no detection time")

	for _, tc := range []struct {
		name   string
		change func(*FailoverCase)
		want   []string
	}{
		{"gave up late", func(c *FailoverCase) { c.DetectMs = ptr(4200) }, []string{"master given up within bound"}},
		{"never gave up", func(c *FailoverCase) { c.DetectMs = nil }, []string{"master given up within bound"}},
		{"the old master back", func(c *FailoverCase) { c.FinalMaster = "ca0" }, []string{"standby became Master"}},
		{"two masters once", func(c *FailoverCase) { c.NotOneMaster = 1 }, []string{"one Master at every reading"}},
		{"a LID moved", func(c *FailoverCase) { c.LIDsChanged = []string{"ca1[1] 3→9"} }, []string{"LIDs unchanged"}},
		{"a packet lost", func(c *FailoverCase) { c.Lost = 1 }, []string{"no packet lost"}},
		{"refused at the source", func(c *FailoverCase) { c.Refused = 3 }, []string{"no packet lost"}},
		{"no traffic", func(c *FailoverCase) { c.Sent, c.Received = 0, 0 }, []string{"no packet lost"}},
		{"sminfo wrong", func(c *FailoverCase) {
			c.SMInfo = append(c.SMInfo, FailoverSMInfo{T: 9, Want: "ca5", Named: "ca0", State: "SMINFO_STANDBY"})
		}, []string{"sminfo names the master"}},
		{"no sminfo", func(c *FailoverCase) { c.SMInfo = nil }, []string{"sminfo names the master"}},
	} {
		c := goodKill()
		tc.change(&c)
		assert.Equal(t, tc.want, failed(c), tc.name)
	}
	c := goodKill()
	c.SMInfo = append(c.SMInfo, FailoverSMInfo{T: 9, Want: "ca5", Named: "ca0", State: "SMINFO_STANDBY"})
	for _, ch := range failoverChecks(&c) {
		if ch.Name == "sminfo names the master" {
			assert.Contains(t, ch.Detail, "at 9.0 s want ca5, got ca0 SMINFO_STANDBY")
		}
	}
}

func TestFailoverMarkdown(t *testing.T) {
	k := goodKill()
	k.Checks = failoverChecks(&k)
	k.Passed = true
	h := goodKill()
	h.Pairing, h.Scenario, h.DetectMs, h.MasterMs = FailoverPairing{runner.SMIbsm, runner.SMOpenSM}, FailoverHandover, nil, ptr(2500)
	h.Lost, h.Sent = 2, 4000
	h.Checks = failoverChecks(&h)
	rep := &FailoverReport{Suite: "sm-failover", Fabric: "smfo", Topology: "mesh", PollInterval: 1, PollRetries: 2, BoundMs: 4000,
		SMNodes: []string{"ca0", "ca5"}, Observer: "ca1", Hosts: []string{"ca1", "ca2"}, Cases: []FailoverCase{k, h}}
	md := failoverMarkdown(rep)
	assert.True(t, strings.HasPrefix(md, "# sm-failover: FAIL"), md)
	assert.Contains(t, md, "| opensm/ibsm | master-killed | 3100 / 3300 ms (bound 4000) | 3600 ms | 0 of 24 ports | 0 (5000) | 0 of 1 | 1/1 | PASS |")
	assert.Contains(t, md, "| ibsm/opensm | handover | 2500 ms |")
	assert.Contains(t, md, "| 2 (4000) |")
	assert.Contains(t, md, "| no packet lost | FAIL |")

	var b strings.Builder
	PrintFailover(&b, rep, "out/index.md")
	assert.Contains(t, b.String(), "FAIL sm-failover")
	assert.Contains(t, b.String(), "PASS opensm/ibsm   master-killed")
}

func TestInTransition(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sms := map[string]bool{"ca0": true, "ca5": true}
	oldStandby := FailoverSMInfo{Named: "ca0", State: "SMINFO_STANDBY"}
	wFrom, wTo := t0.Add(2*time.Second), t0.Add(2300*time.Millisecond)
	for _, tc := range []struct {
		name     string
		v        FailoverSMInfo
		from, to time.Time
		wFrom    time.Time
		want     bool
	}{
		{"overlaps the window", oldStandby, t0.Add(1900 * time.Millisecond), t0.Add(2100 * time.Millisecond), wFrom, true},
		{"before it", oldStandby, t0.Add(time.Second), t0.Add(1100 * time.Millisecond), wFrom, false},
		{"after it", oldStandby, t0.Add(3 * time.Second), t0.Add(3100 * time.Millisecond), wFrom, false},
		{"no window (a kill)", oldStandby, t0.Add(1900 * time.Millisecond), t0.Add(2100 * time.Millisecond), time.Time{}, false},
		{"a failed run", FailoverSMInfo{Error: "timeout"}, t0.Add(2 * time.Second), t0.Add(2100 * time.Millisecond), wFrom, false},
		{"names another port", FailoverSMInfo{Named: "0x99", State: "SMINFO_MASTER"}, t0.Add(2 * time.Second), t0.Add(2100 * time.Millisecond), wFrom, false},
		{"discovering", FailoverSMInfo{Named: "ca5", State: "SMINFO_DISCOVERING"}, t0.Add(2 * time.Second), t0.Add(2100 * time.Millisecond), wFrom, false},
		{"right anyway", FailoverSMInfo{Named: "ca5", State: "SMINFO_MASTER", OK: true}, t0.Add(2 * time.Second), t0.Add(2100 * time.Millisecond), wFrom, false},
	} {
		assert.Equal(t, tc.want, inTransition(tc.v, tc.from, tc.to, tc.wFrom, wTo, sms), tc.name)
	}

	c := goodKill()
	c.Scenario, c.DetectMs = FailoverHandover, nil
	c.SMInfo = append(c.SMInfo, FailoverSMInfo{T: 2, Want: "ca5", Named: "ca0", State: "SMINFO_STANDBY", Transition: true})
	for _, ch := range failoverChecks(&c) {
		if ch.Name == "sminfo names the master" {
			assert.True(t, ch.OK, ch.Detail)
			assert.Contains(t, ch.Detail, "1 of 2 runs right, 1 more during the handover")
		}
	}
	assert.Equal(t, "1/2 (+1 in the handover)", sminfoRight(c))
	c.SMInfo = c.SMInfo[1:]
	for _, ch := range failoverChecks(&c) {
		if ch.Name == "sminfo names the master" {
			assert.False(t, ch.OK, "a run in the handover alone shows no master named: %s", ch.Detail)
		}
	}
}

func TestOSMStates(t *testing.T) {
	log := "Nov 28 01:07:45 113275 [A775D740] 0x80 -> Entering DISCOVERING state\n" +
		"***************** ENTERING SM DISCOVERING STATE ******************\n" +
		"Nov 28 01:07:45 225104 [A47566C0] 0x80 -> Entering STANDBY state\n" +
		"Nov 28 01:07:49 230473 [A775C6C0] 0x04 -> osm_sm_state_mgr_polling_callback: SM State 2 (STANDBY), Retry number:2\n" +
		"Nov 28 01:07:50 240673 [A775C6C0] 0x80 -> Entering DISCOVERING state\n" +
		"garbage -> Entering MASTER state\n" +
		"Nov 28 01:07:51 023198 [A47566C0] 0x80 -> Entering MASTER state\n"
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006 Jan 2 15:04:05.000000", "2026 "+s, time.Local)
		require.NoError(t, err)
		return tm
	}
	states, ats := osmStates(log, at("Nov 28 01:07:45.000000"))
	assert.Equal(t, []string{"DISCOVERING", "STANDBY", "DISCOVERING", "MASTER"}, states)
	require.Len(t, ats, 4)
	assert.Equal(t, at("Nov 28 01:07:50.240673"), ats[2])
	states, ats = osmStates(log, at("Nov 28 01:07:46.000000"))
	assert.Equal(t, []string{"DISCOVERING", "MASTER"}, states, "only those after from")
	m, ok := firstOSMState(states, ats, "MASTER")
	require.True(t, ok)
	assert.Equal(t, at("Nov 28 01:07:51.023198"), m)
	_, ok = firstOSMState(states, ats, "STANDBY")
	assert.False(t, ok)
}

func FuzzOSMStates(f *testing.F) {
	f.Add("Nov 28 01:07:51 023198 [A47566C0] 0x80 -> Entering MASTER state\n")
	f.Add("x -> Entering  state")
	f.Fuzz(func(t *testing.T, log string) {
		states, ats := osmStates(log, time.Unix(0, 0))
		if len(states) != len(ats) {
			t.Fatalf("%d states, %d times", len(states), len(ats))
		}
	})
}

func TestSelectFailover(t *testing.T) {
	plan := failoverPlan(false)
	got, err := selectFailover(plan, nil)
	require.NoError(t, err)
	assert.Equal(t, plan, got)
	got, err = selectFailover(plan, []string{"opensm-ibsm-handover", " ibsm-ibsm-master-killed"})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "ibsm-ibsm-master-killed", got[0].id(), "in the plan's order")
	assert.Equal(t, "opensm-ibsm-handover", got[1].id())
	_, err = selectFailover(failoverPlan(true), []string{"ibsm-ibsm-handover"})
	assert.ErrorContains(t, err, "no case ibsm-ibsm-handover")
}

func TestFailoverMarkdownSettings(t *testing.T) {
	rep := &FailoverReport{SMNodes: []string{"ca0", "ca5"}, OpenSMConf: failoverOpenSMConf(), IbsmArgs: failoverIbsmArgs(0)[2:]}
	md := failoverMarkdown(rep)
	assert.Contains(t, md, "`ibsm --port sim --json --priority P --pre-block=false --sweep-interval 2s")
	assert.Contains(t, md, "qos TRUE`")
}
