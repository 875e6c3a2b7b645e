package soak

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness/suites/runner"
	"ibfab/nodeproc"
	"ibfab/port"
	"ibfab/topologies"
)

func defaultTargets() Targets {
	return FindTargets(topologies.Default(), masterNode, []string{masterNode, standbyNode, observerNode}, trafficHosts)
}

// TestFindTargets: on the default fabric the links that may flap are the
// switch links on a cycle (not sw3's to the leaf switches sw8 and sw9),
// and the switches that may die are those whose loss cuts off only their
// own hosts, none of them the SMs' or the observer's.
func TestFindTargets(t *testing.T) {
	tg := defaultTargets()
	var links []string
	for _, l := range tg.Links {
		links = append(links, l.String())
	}
	assert.Equal(t, []string{"sw1[1]", "sw1[2]", "sw2[2]", "sw2[3]", "sw3[4]", "sw5[1]", "sw6[3]"}, links)
	assert.Equal(t, []string{"sw5", "sw8", "sw9", "sw10"}, tg.Switches)
	assert.Equal(t, trafficHosts, tg.Hosts)
}

// TestScheduleSeeded: the same seed gives the same schedule, another seed
// another; a quick schedule holds every kind in its first round, and
// every entry has a target of its kind within the ranges.
func TestScheduleSeeded(t *testing.T) {
	tg := defaultTargets()
	for _, c := range []struct {
		name  string
		quick bool
		n     int
	}{{"quick", true, quickRounds * len(kinds.Values())}, {"full", false, 200}} {
		t.Run(c.name, func(t *testing.T) {
			a, b := Schedule(7, c.n, c.quick, tg), Schedule(7, c.n, c.quick, tg)
			require.Len(t, a, c.n)
			assert.Equal(t, a, b, "same seed, same schedule")
			assert.NotEqual(t, a, Schedule(8, c.n, c.quick, tg), "another seed, another schedule")
			seen := map[Kind]bool{}
			for i, d := range a {
				if !c.quick || i < len(kinds.Values()) {
					seen[d.Kind] = true
				}
				checkEntry(t, d, c.quick, tg)
			}
			assert.Len(t, seen, len(kinds.Values()), "every kind drawn (quick: in the first round)")
		})
	}
	assert.Empty(t, Schedule(1, 0, true, tg))
}

// checkEntry checks one schedule entry's ranges and target.
func checkEntry(t *testing.T, d Disturbance, quick bool, tg Targets) {
	t.Helper()
	gapMax := maxGap
	if quick {
		gapMax = quickGapMax
	}
	assert.True(t, d.Gap >= minGap && d.Gap <= gapMax, "gap %v", d.Gap)
	assert.True(t, d.Hold >= minHold && d.Hold <= maxHold, "hold %v", d.Hold)
	switch d.Kind {
	case KindLinkFlap, KindMADLoss:
		require.NotNil(t, d.Link)
		assert.Contains(t, tg.Links, *d.Link)
		if d.Kind == KindMADLoss {
			assert.Contains(t, []int{1, 2, 5, 10}, d.LossPct, "loss %d %%", d.LossPct)
		}
	case KindSwitchRestart:
		assert.Contains(t, tg.Switches, d.Switch)
	case KindQoS:
		require.Len(t, d.Hosts, 2)
		assert.NotEqual(t, d.Hosts[0], d.Hosts[1])
	case KindPartition:
		assert.NotEmpty(t, d.Hosts)
		assert.Subset(t, tg.Hosts, d.Hosts)
	}
}

// TestDownPorts: a flap downs both ends of its link; a switch restart
// every cabled port of the switch and the ports facing it.
func TestDownPorts(t *testing.T) {
	topo := topologies.Default()
	keys := func(m map[string]bool) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	assert.Equal(t, []string{"sw3[4]", "sw6[2]"}, keys(downPorts(topo, Disturbance{Kind: KindLinkFlap, Link: &Port{"sw3", 4}})))
	assert.Equal(t, []string{"ca13[1]", "sw3[2]", "sw8[1]", "sw8[2]"}, keys(downPorts(topo, Disturbance{Kind: KindSwitchRestart, Switch: "sw8"})))
	assert.Empty(t, downPorts(topo, Disturbance{Kind: KindSMFailover}))
}

func rec(node string, p, out uint8, c port.DropCause) DropRec {
	return DropRec{Node: node, DropRecord: nodeproc.DropRecord{Port: p, Out: out, Cause: c}}
}

// TestBadDrops: a disturbance that downs a link may drop with a dead
// link's causes, those that name the link's port only at its ports (a
// switch's routed drop names its output); any drop while quiet, or of
// another cause, is unexplained.
func TestBadDrops(t *testing.T) {
	down := map[string]bool{"sw3[4]": true, "sw6[2]": true}
	for _, c := range []struct {
		name      string
		recs      []DropRec
		takesDown bool
		bad       int
	}{
		{"queued at the link", []DropRec{rec("sw3", 4, 0, port.DropLinkDown), rec("sw6", 2, 0, port.DropNotActive)}, true, 0},
		{"routed to the link", []DropRec{rec("sw3", 2, 4, port.DropLinkDown)}, true, 0},
		{"routed elsewhere", []DropRec{rec("sw3", 4, 2, port.DropLinkDown)}, true, 1},
		{"unroutable anywhere", []DropRec{rec("sw10", 3, 0, port.DropUnroutable), rec("sw1", 1, 0, port.DropInputDown)}, true, 0},
		{"not a link's cause", []DropRec{rec("sw6", 2, 0, port.DropVLMapping), rec("sw6", 2, 0, port.DropPKey)}, true, 2},
		{"a blocked turn while rerouting", []DropRec{rec("sw10", 2, 1, port.DropVLMapping)}, true, 0},
		{"a blocked turn while quiet", []DropRec{rec("sw10", 2, 1, port.DropVLMapping)}, false, 1},
		{"quiet", []DropRec{rec("sw3", 4, 0, port.DropLinkDown), rec("sw10", 3, 0, port.DropUnroutable)}, false, 2},
		{"none", nil, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := badDrops(c.recs, c.takesDown, down)
			assert.Len(t, bad, c.bad, "%v", bad)
		})
	}
	assert.Equal(t, map[string]uint64{"sw3[4] link_down_while_queued": 2}, countDrops([]DropRec{rec("sw3", 2, 4, port.DropLinkDown), rec("sw3", 4, 0, port.DropLinkDown)}))
}

func series(t0, every float64, kib ...uint64) []MemSample {
	var out []MemSample
	for i, k := range kib {
		out = append(out, MemSample{T: t0 + float64(i)*every, PssKiB: k})
	}
	return out
}

// TestSlope: the least-squares slope in KiB a minute over the samples
// from the warm-up on, with their span and count.
func TestSlope(t *testing.T) {
	for _, c := range []struct {
		name       string
		ss         []MemSample
		from       float64
		slope, min float64
		n          int
	}{
		{"flat", series(0, 60, 100, 100, 100), 0, 0, 2, 3},
		{"rising 1 MiB a minute", series(0, 60, 0, 1024, 2048, 3072), 0, 1024, 3, 4},
		{"warm-up left out", series(0, 60, 0, 5000, 6000, 6000, 6000), 120, 0, 2, 3},
		{"sawtooth", series(0, 30, 100, 200, 100, 200, 100, 200), 0, 17.1, 2.5, 6},
		{"one sample", series(0, 60, 100), 0, 0, 0, 1},
		{"none after", series(0, 60, 100, 200), 600, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, span, n := slope(c.ss, c.from)
			assert.InDelta(t, c.slope, s, 0.1)
			assert.InDelta(t, c.min, span, 1e-9)
			assert.Equal(t, c.n, n)
		})
	}
}

// TestJudgeMemory: a series is judged with enough samples after the
// warm-up; flat within max(64 KiB/min, 2 MiB over the window); a leak of
// 1 MiB a minute over an hour is not, nor 4 MiB over two minutes.
func TestJudgeMemory(t *testing.T) {
	hour := make([]uint64, 61)
	leak := make([]uint64, 61)
	for i := range hour {
		hour[i] = 50_000 + uint64(i%2)*500
		leak[i] = 50_000 + uint64(i)*1024
	}
	ss := []MemSeries{
		{Proc: "sw1/ibswitch", Samples: series(0, 60, hour...)},
		{Proc: "sw2/ibswitch", Samples: series(0, 60, leak...)},
		{Proc: "ca4/ibsm", Samples: series(0, 30, 10_000, 10_000, 10_000, 12_000, 14_000, 16_000, 18_000)},
		{Proc: "ca4/ibsm", Samples: series(3000, 60, 10_000, 90_000)},
		// Restarted at 600 s: its own first minute is its warm-up.
		{Proc: "sw3/ibswitch", Samples: series(600, 30, 3_000, 6_000, 7_000, 7_000, 7_100, 7_000, 7_000)},
		{Proc: "sw4/ibswitch", Samples: series(600, 30, 3_000, 3_500, 6_000, 9_000, 12_000, 15_000, 18_000)},
	}
	judgeMemory(ss, 60)
	assert.True(t, ss[4].Judged && ss[4].Flat, "a late process's warm-up is its own: %+v", ss[4])
	assert.Equal(t, 5, ss[4].Fitted, "fitted from 660 s on")
	assert.True(t, ss[5].Judged && !ss[5].Flat, "rising after its own warm-up: %.0f", ss[5].SlopeKiBPerMin)
	ss = ss[:4]
	assert.True(t, ss[0].Judged && ss[0].Flat, "%+v", ss[0])
	assert.True(t, ss[1].Judged && !ss[1].Flat, "1 MiB/min over an hour: %.0f", ss[1].SlopeKiBPerMin)
	assert.True(t, ss[2].Judged && !ss[2].Flat, "8 MiB over two minutes: %.0f, bound %.0f", ss[2].SlopeKiBPerMin, ss[2].BoundKiBPerMin)
	assert.False(t, ss[3].Judged, "two samples are not judged")
	assert.False(t, memoryFlat(ss))
	assert.True(t, memoryFlat(ss[:1]))
	assert.False(t, memoryFlat(ss[3:]), "nothing judged is not flat")
	assert.InDelta(t, 64, slopeBound(60), 1e-9)
	assert.InDelta(t, 1024, slopeBound(2), 1e-9)
	assert.Zero(t, slopeBound(0))
	assert.False(t, math.IsInf(ss[3].BoundKiBPerMin, 0), "the report's JSON takes no infinity")
}

// TestProcLeaks: a process more or fewer of a kind is a leak, and so are
// descriptors beyond the slack; a few more within it are not.
func TestProcLeaks(t *testing.T) {
	before := ProcSnap{Procs: map[string]int{"ca4/ibhca": 1, "ca4/ibsm": 1}, FDs: map[string]int{"ca4/ibhca": 40, "ca4/ibsm": 12}}
	for _, c := range []struct {
		name       string
		after      ProcSnap
		procs, fds int
	}{
		{"same", before, 0, 0},
		{"within slack", ProcSnap{Procs: before.Procs, FDs: map[string]int{"ca4/ibhca": 40 + fdSlack, "ca4/ibsm": 10}}, 0, 0},
		{"descriptors leaked", ProcSnap{Procs: before.Procs, FDs: map[string]int{"ca4/ibhca": 41 + fdSlack, "ca4/ibsm": 12}}, 0, 1},
		{"a process more", ProcSnap{Procs: map[string]int{"ca4/ibhca": 1, "ca4/ibsm": 2, "ca4/sminfo": 1}, FDs: before.FDs}, 2, 0},
		{"a process gone", ProcSnap{Procs: map[string]int{"ca4/ibhca": 1}, FDs: map[string]int{"ca4/ibhca": 40}}, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			procs, fds := procLeaks(before, c.after)
			assert.Len(t, procs, c.procs, "%v", procs)
			assert.Len(t, fds, c.fds, "%v", fds)
		})
	}
}

// TestPartitionsConf: the Default partition stays full for every port;
// the soak partition lists its members' port GUIDs in full.
func TestPartitionsConf(t *testing.T) {
	assert.Equal(t, "Default=0x7fff : ALL=full ;\n", partitionsConf(nil))
	assert.Equal(t, "Default=0x7fff : ALL=full ;\nsoak=0x8001 : 0x2=full, 0x10=full ;\n", partitionsConf([]uint64{2, 16}))
}

func settled(ms float64) *float64 { return &ms }

// TestDisturbanceChecks: settled within the bound and no unexplained
// drop pass; late, never, an error or an unexplained drop fail.
func TestDisturbanceChecks(t *testing.T) {
	bound := float64(Bound(KindLinkFlap).Milliseconds())
	for _, c := range []struct {
		name string
		d    DisturbanceRun
		ok   bool
	}{
		{"settled", DisturbanceRun{SettleMs: settled(300), BoundMs: bound}, true},
		{"late", DisturbanceRun{SettleMs: settled(bound + 1), BoundMs: bound}, false},
		{"never", DisturbanceRun{BoundMs: bound}, false},
		{"error", DisturbanceRun{SettleMs: settled(300), BoundMs: bound, Error: "ports not settled"}, false},
		{"unexplained drop", DisturbanceRun{SettleMs: settled(300), BoundMs: bound, BadDrops: []string{"sw6[2] rx vl_mapping"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.d.Disturbance = Disturbance{Kind: KindLinkFlap}
			cs := disturbanceChecks(&c.d)
			require.Len(t, cs, 2)
			assert.Equal(t, c.ok, allOK(cs), "%+v", cs)
		})
	}
}

// TestSoakChecks: a clean quick soak with every kind passes; a kind
// missing from a quick soak, drops while quiet, a leak or a rising
// process each fail their check.
func TestSoakChecks(t *testing.T) {
	clean := func() *Report {
		rep := &Report{Quick: true}
		for i, k := range kinds.Values() {
			d := DisturbanceRun{N: i + 1, Disturbance: Disturbance{Kind: k}, SettleMs: settled(100), BoundMs: 1000}
			d.Checks = disturbanceChecks(&d)
			rep.Disturbances = append(rep.Disturbances, d)
		}
		snap := ProcSnap{Procs: map[string]int{"sw1/ibswitch": 1}, FDs: map[string]int{"sw1/ibswitch": 20}}
		rep.Leaks = Leaks{GoroutinesBefore: 3, GoroutinesAfter: 3, Start: snap, End: snap}
		rep.Memory = []MemSeries{{Proc: "sw1/ibswitch", Judged: true, Flat: true}}
		return rep
	}
	failing := func(rep *Report) []string {
		var out []string
		for _, c := range soakChecks(rep) {
			if !c.OK {
				out = append(out, c.Name)
			}
		}
		return out
	}
	assert.Empty(t, failing(clean()))
	for _, c := range []struct {
		name  string
		spoil func(*Report)
		check string
	}{
		{"a kind missing", func(r *Report) { r.Disturbances = r.Disturbances[1:] }, "disturbances ran"},
		{"dropped while quiet", func(r *Report) { r.Counters.QuietDrops = []string{"sw1[1] tx port_not_active"} }, "data lost only on downed links"},
		{"namespace left", func(r *Report) { r.Leaks.NamespacesLeft = []string{"ibf-sk-sw1"} }, "no leaked namespace"},
		{"process alive", func(r *Report) { r.Leaks.PIDsAlive = []string{"123 ibswitch"} }, "no leaked process"},
		{"goroutine", func(r *Report) { r.Leaks.GoroutinesAfter = 4 }, "no leaked goroutine"},
		{"descriptors", func(r *Report) { r.Leaks.FDLeaks = []string{"sw1/ibswitch: 30"} }, "no leaked file descriptor"},
		{"rising", func(r *Report) { r.Memory[0].Flat = false }, "memory flat"},
		{"late", func(r *Report) {
			r.Disturbances[0].Checks[0] = runner.Check{Name: "settled within bound"}
		}, "every disturbance settled within its bound"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := clean()
			c.spoil(rep)
			got := failing(rep)
			assert.Contains(t, got, c.check)
			assert.Len(t, got, 1+boolInt(c.check == "disturbances ran"), "only %s (and what follows from it): %s", c.check, strings.Join(got, ", "))
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSoakChecksQuickMemory: a quick soak whose memory nothing could be
// judged of (it ends within the warm-up) skips the memory check, naming
// the steepest slope over the whole run; a full soak with nothing judged
// fails it.
func TestSoakChecksQuickMemory(t *testing.T) {
	mem := []MemSeries{{Proc: "sw1/ibswitch", WholeKiBPerMin: 900}, {Proc: "ca4/ibhca", WholeKiBPerMin: 1200}}
	find := func(cs []runner.Check) runner.Check {
		for _, c := range cs {
			if c.Name == "memory flat" {
				return c
			}
		}
		t.Fatal("no memory check")
		return runner.Check{}
	}
	c := find(soakChecks(&Report{Quick: true, Memory: mem}))
	assert.True(t, c.Skipped, "%+v", c)
	assert.Contains(t, c.Detail, "ca4/ibhca 1200 KiB/min")
	c = find(soakChecks(&Report{Memory: mem}))
	assert.False(t, c.OK || c.Skipped, "%+v", c)
}

// TestBounds: every kind has a bound, none longer than a minute.
func TestBounds(t *testing.T) {
	for _, k := range kinds.Values() {
		assert.True(t, Bound(k) > 0 && Bound(k) <= time.Minute, "%s: %v", k, Bound(k))
	}
}

// TestWentDown: a port whose LinkDownedCounter grew is a downed link,
// with its far end, unless the disturbance's own; a port read only at
// the end (its switch restarted) is not one; nor one whose counter kept
// or was cleared.
func TestWentDown(t *testing.T) {
	topo := topologies.Thesis8()
	before := map[string]uint8{"sw1[1]": 2, "sw2[1]": 2, "sw3[4]": 0, "sw6[2]": 0, "sw5[1]": 1, "sw5[2]": 4}
	after := map[string]uint8{"sw1[1]": 3, "sw2[1]": 3, "sw3[4]": 1, "sw6[2]": 1, "sw5[1]": 1, "sw5[2]": 0, "sw10[1]": 1}
	got := wentDown(topo, before, after, map[string]bool{"sw3[4]": true, "sw6[2]": true})
	assert.Equal(t, []string{"sw1[1]", "sw2[1]"}, got)
	assert.Empty(t, wentDown(topo, before, before, nil))
}
