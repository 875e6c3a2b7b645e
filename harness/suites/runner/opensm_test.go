package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ibfab/sm"
)

// osmLines builds an OpenSM log: each entry is "SS.UUUUUU text" (seconds
// and microseconds after 14:41:00 on Nov 25); text "*BOX" is a message
// box, the way OpenSM's verbose level writes one.
func osmLines(entries ...string) string {
	var b strings.Builder
	for _, e := range entries {
		at, text, _ := strings.Cut(e, " ")
		sec, us, _ := strings.Cut(at, ".")
		stamp := fmt.Sprintf("Nov 25 14:41:%s %s [B7A536C0]", sec, us)
		if box, ok := strings.CutPrefix(text, "*"); ok {
			fmt.Fprintf(&b, "%s 0x04 -> state_mgr:\n\n\n%s\n*** %s ***\n%s\n\n\n", stamp, strings.Repeat("*", 20), box, strings.Repeat("*", 20))
			continue
		}
		fmt.Fprintf(&b, "%s 0x02 -> %s\n", stamp, text)
	}
	return b.String()
}

func TestOpenSMLog(t *testing.T) {
	start := time.Date(2026, time.November, 25, 14, 40, 0, 0, time.Local)
	at := func(sec, us int) time.Time {
		return time.Date(2026, time.November, 25, 14, 41, sec, us*1000, time.Local)
	}
	log := osmLines(
		"32.470925 Entering DISCOVERING state",
		"32.473699 *INITIATING HEAVY SWEEP",
		"32.500000 ni_rcv_process_new: Discovered new Switch node,",
		"32.534064 *HEAVY SWEEP COMPLETE",
		"32.535146 *ENTERING SM MASTER STATE",
		"32.538906 *PKEY setup completed - STARTING SM LID CONFIG",
		"32.546513 *LID ASSIGNMENT COMPLETE - STARTING SWITCH TABLE CONFIG",
		"32.551887 *SWITCHES CONFIGURED FOR UNICAST",
		"32.551935 *SWITCHES CONFIGURED FOR MULTICAST",
		"32.551939 *ALIAS GUIDS CONFIGURED",
		"32.569740 *LINKS PORTS CONFIGURED - SET LINKS TO ARMED STATE",
		"32.586014 *LINKS ARMED - SET LINKS TO ACTIVE STATE",
		"32.604000 SUBNET UP",
		"32.604005 *SUBNET UP",
		"35.471608 *INITIATING LIGHT SWEEP",
		"35.477774 *LIGHT SWEEP COMPLETE",
		"38.488019 log_trap_info: Received Generic Notice type:1 num:128 (Link state change) Producer:2 (Switch) from LID:3 TID:0x0000020000000201",
		"38.686743 *INITIATING HEAVY SWEEP",
		// A trap during discovery: OpenSM discovers again.
		"38.700000 *INITIATING HEAVY SWEEP",
		"38.766485 *HEAVY SWEEP COMPLETE",
		"38.768062 *LID ASSIGNMENT COMPLETE - STARTING SWITCH TABLE CONFIG",
		"38.772632 *SWITCHES CONFIGURED FOR UNICAST",
		"38.773939 SUBNET UP",
		"40.548925 *INITIATING HEAVY SWEEP",
		"40.616792 *HEAVY SWEEP COMPLETE",
		"40.620000 *ERRORS DURING INITIALIZATION",
	)
	// Fed in pieces that cut lines in two.
	l := &osmLog{start: start}
	var got []osmSweep
	for i := 0; i < len(log); i += 97 {
		got = append(got, l.feed(log[i:min(i+97, len(log))])...)
	}
	require.Zero(t, l.bad)
	require.Len(t, got, 3)

	first := got[0]
	require.True(t, first.Up)
	require.Equal(t, "start", first.Trigger)
	require.Equal(t, 1, first.N)
	require.True(t, at(32, 473699).Equal(first.Begin), "%v", first.Begin)
	require.True(t, at(32, 604000).Equal(first.End), "%v", first.End)
	var names []string
	for _, p := range first.Phases {
		names = append(names, p.Name)
	}
	require.Equal(t, []string{"discovery", "lid-assignment", "unicast-tables", "multicast", "alias-guids", "port-config", "arm", "activation"}, names)
	require.InDelta(t, 60.365, first.Phases[0].Ms, 1e-6)
	require.InDelta(t, 12.449, first.Phases[1].Ms, 1e-6, "from HEAVY SWEEP COMPLETE through the master state and SM LID boxes")
	var sum float64
	for _, p := range first.Phases {
		sum += p.Ms
	}
	require.InDelta(t, float64(first.End.Sub(first.Begin).Microseconds())/1000, sum, 1e-6)

	second := got[1]
	require.True(t, second.Up)
	require.Equal(t, "trap", second.Trigger)
	require.Equal(t, []string{"trap 128"}, second.Traps)
	require.Equal(t, "discovery", second.Phases[0].Name)
	require.InDelta(t, 79.742, second.Phases[0].Ms, 1e-6, "both discoveries")
	require.Equal(t, "multicast", second.Phases[len(second.Phases)-1].Name, "no verbose box before the info line's SUBNET UP")

	third := got[2]
	require.False(t, third.Up)
	require.Equal(t, "sweep", third.Trigger)
	require.Contains(t, third.Reason, "errors during initialization")

	x := osmResult(first, 480, true)
	require.Equal(t, "sweep", x.Event)
	require.EqualValues(t, 480, x.SMPsTotal)
	require.InDelta(t, 130.301, x.MsTotal, 1e-6)
	require.True(t, x.At.Equal(first.End))
	require.Empty(t, x.Warnings)
	y := osmResult(second, 0, false)
	require.Equal(t, "heavy-sweep", y.Event)
	require.Equal(t, []string{"trap 128"}, y.Changes)
	require.NotEmpty(t, y.Warnings)
}

func TestOpenSMLogIgnores(t *testing.T) {
	l := &osmLog{start: time.Now()}
	// Boxes of a sweep begun before the log was read, continuation lines,
	// an unfinished line.
	got := l.feed(osmLines("10.000001 *HEAVY SWEEP COMPLETE", "10.000002 SUBNET UP") +
		"0000000400, TID 0x1234\n\tTID........0x1\nNov 25 14:41:11 000001 [1] 0x02 -> SUBN")
	require.Empty(t, got)
	require.Zero(t, l.bad)
	require.Equal(t, "Nov 25 14:41:11 000001 [1] 0x02 -> SUBN", l.partial)
	got = l.feed("ET UP\nFoo 25 14:41:11 1 [1] 0x02 -> x\n")
	require.Empty(t, got)
	require.Equal(t, 1, l.bad, "a line whose time stamp does not parse")
}

func TestSMPsBetween(t *testing.T) {
	t0 := time.Now()
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	cs := []madCount{{ms(0), ms(2), 100}, {ms(50), ms(52), 100}, {ms(100), ms(103), 400}, {ms(150), ms(151), 480}, {ms(200), ms(201), 490}}
	n, ok := smpsBetween(cs, ms(60), ms(120))
	require.True(t, ok)
	require.EqualValues(t, 380, n, "from the read done before the sweep to the first begun after it")
	_, ok = smpsBetween(cs, ms(60), ms(230))
	require.False(t, ok, "no read after the end yet")
	_, ok = smpsBetween(cs, ms(1), ms(120))
	require.False(t, ok, "no read done before the begin")
	_, ok = smpsBetween(append(cs, madCount{ms(300), ms(301), 5}), ms(160), ms(250))
	require.False(t, ok, "the count went back: the HCA restarted")
}

func TestPhaseReport(t *testing.T) {
	rep := &Report{SMKind: SMIbsm, SM: []SMResult{{}, {}}}
	rep.SM[0].Event, rep.SM[0].SubnetUp = "sweep", true
	rep.SM[0].Phases = []sm.Phase{{Name: "discovery", Ms: 10, SMPs: 100}, {Name: "routing", Ms: 1}, {Name: "distribution", Ms: 5, SMPs: 40}}
	rep.SM[1].Event, rep.SM[1].Trigger = "assimilation", "trap"
	rep.SM[1].Phases = []sm.Phase{{Name: "detection", Ms: 0.5, SMPs: 2}, {Name: "discovery", Ms: 3, SMPs: 12}, {Name: "discovery", Ms: 1, SMPs: 4}}
	pr := phaseReport(rep)
	require.True(t, pr.SMPsPerPhase)
	require.Equal(t, []string{"discovery", "routing", "distribution", "detection"}, pr.Names)
	require.Equal(t, "2 assimilation (trap)", pr.Rows[1].Label)
	require.Equal(t, map[string]uint64{"detection": 2, "discovery": 16}, pr.Rows[1].SMPs)
	require.Equal(t, 4.0, pr.Rows[1].Ms["discovery"])

	rep.SMKind = SMOpenSM
	pr = phaseReport(rep)
	require.False(t, pr.SMPsPerPhase)
	require.Nil(t, pr.Rows[0].SMPs)
	require.Contains(t, pr.Note, "per phase not available")
	require.Nil(t, phaseReport(&Report{}))
}

// FuzzOpenSMLog: any log, fed in any pieces, reads without a panic, and
// every sweep it yields ends with SUBNET UP or a reason.
func FuzzOpenSMLog(f *testing.F) {
	f.Add(osmLines("32.473699 *INITIATING HEAVY SWEEP", "32.534064 *HEAVY SWEEP COMPLETE", "32.604000 SUBNET UP"), 7)
	f.Add(osmLines("38.488019 log_trap_info: Received Generic Notice type:1 num:128", "38.686743 *INITIATING HEAVY SWEEP", "40.62 *ERRORS DURING INITIALIZATION"), 1)
	f.Add("Nov 25 14:41:32 1 [1] 0x02 -> SUBNET UP\n***\n", 3)
	f.Fuzz(func(t *testing.T, log string, piece int) {
		if piece <= 0 {
			piece = 1
		}
		l := &osmLog{start: time.Date(2026, time.November, 25, 0, 0, 0, 0, time.Local)}
		n := 0
		for i := 0; i < len(log); i += piece {
			for _, s := range l.feed(log[i:min(i+piece, len(log))]) {
				n++
				if s.N != n || (!s.Up && s.Reason == "") {
					t.Fatalf("sweep %d: %+v", n, s)
				}
			}
		}
	})
}

func TestOpenSMDiag(t *testing.T) {
	dir := t.TempDir()
	log := "x ERR 3120: Timeout\ny ERR 3120: Timeout\nIgnoring noisy traps.\n** LIGHT SWEEP COMPLETE **\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "opensm.log"), []byte(log), 0o644))
	end := time.Now()
	p := &SMProc{kind: SMOpenSM, done: make(chan struct{})}
	p.results = []SMResult{{At: end.Add(-time.Second)}, {At: end.Add(1500 * time.Millisecond)}}
	p.results[1].Trigger, p.results[1].Changes, p.results[1].SubnetUp = "trap", []string{"trap 128", "trap 128"}, true
	r := &SuiteRun{o: Options{SM: SMOpenSM}, smDir: dir, sms: []*SMProc{p}}
	require.Equal(t, "; OpenSM since the last step: 1 heavy sweeps (last 1.5 s after the last step (trap, up true)) on 2 traps; "+
		"whole log: 2 SMP timeouts (ERR 3120), 1 noisy traps ignored, 1 light sweeps", r.opensmDiag(end))
	r.o.SM = SMIbsm
	require.Empty(t, r.opensmDiag(end))
}
