package opensmrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ibfab/internal/ibsimrun"
	"ibfab/internal/opensmrun"
	"ibfab/internal/testsupport/ibsimtest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

func TestLogTimes(t *testing.T) {
	start := time.Date(2026, time.November, 22, 2, 38, 10, 0, time.Local)
	at := func(y int, mo time.Month, d, h, mi, s, us int) time.Time {
		return time.Date(y, mo, d, h, mi, s, us*1000, time.Local)
	}
	for _, tc := range []struct {
		name      string
		start     time.Time
		log       string
		disc, up  time.Time
		errSubstr string
	}{
		{"sweep", start,
			"Nov 22 02:38:11 000100 [1F] 0x02 -> osm_vendor_init: 1000 pending umads specified\n" +
				"Nov 22 02:38:11 865218 [1F] 0x02 -> Entering DISCOVERING state\n" +
				"Nov 22 02:38:12 000007 [1F] 0x02 -> SUBNET UP\n",
			at(2026, time.November, 22, 2, 38, 11, 865218), at(2026, time.November, 22, 2, 38, 12, 7), ""},
		{"first of each", start,
			"Nov 22 02:38:11 000001 [1F] 0x02 -> Entering DISCOVERING state\n" +
				"Nov 22 02:38:11 000002 [1F] 0x02 -> SUBNET UP\n" +
				"Nov 22 02:38:13 000003 [1F] 0x02 -> Entering DISCOVERING state\n" +
				"Nov 22 02:38:14 000004 [1F] 0x02 -> SUBNET UP\n",
			at(2026, time.November, 22, 2, 38, 11, 1), at(2026, time.November, 22, 2, 38, 11, 2), ""},
		{"single-digit day", time.Date(2026, time.March, 2, 9, 0, 0, 0, time.Local),
			"Mar  2 09:00:01 5 [1F] 0x02 -> Entering DISCOVERING state\nMar  2 09:00:02 6 [1F] 0x02 -> SUBNET UP",
			at(2026, time.March, 2, 9, 0, 1, 5), at(2026, time.March, 2, 9, 0, 2, 6), ""},
		{"across new year", time.Date(2026, time.December, 31, 23, 59, 59, 0, time.Local),
			"Dec 31 23:59:59 900000 [1F] 0x02 -> Entering DISCOVERING state\nJan  1 00:00:00 100000 [1F] 0x02 -> SUBNET UP\n",
			at(2026, time.December, 31, 23, 59, 59, 900000), at(2027, time.January, 1, 0, 0, 0, 100000), ""},
		{"no subnet up", start, "Nov 22 02:38:11 865218 [1F] 0x02 -> Entering DISCOVERING state\n",
			time.Time{}, time.Time{}, "no \"Entering DISCOVERING state\" and \"SUBNET UP\""},
		{"empty", start, "", time.Time{}, time.Time{}, "no \"Entering"},
		{"no time", start, "-> SUBNET UP", time.Time{}, time.Time{}, "has no time"},
		{"bad microseconds", start, "Nov 22 02:38:11 1234567 [1F] -> SUBNET UP", time.Time{}, time.Time{}, "bad time"},
		{"bad month", start, "Foo 22 02:38:11 1 [1F] -> SUBNET UP", time.Time{}, time.Time{}, "bad time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disc, up, err := opensmrun.LogTimes(tc.log, tc.start)
			if tc.errSubstr != "" {
				require.ErrorContains(t, err, tc.errSubstr)
				return
			}
			require.NoError(t, err)
			require.True(t, tc.disc.Equal(disc), "discovering at %v, want %v", disc, tc.disc)
			require.True(t, tc.up.Equal(up), "up at %v, want %v", up, tc.up)
		})
	}
}

func TestPerfCounter(t *testing.T) {
	out := []byte("# Port counters: Lid 1 port 1 (CapMask: 0x00)\nPortSelect:......................1\nPortXmitPkts:....................371\nPortRcvPkts:.....................18446744073709551615\nPortXmitData:....................x\n")
	for _, tc := range []struct {
		counter   string
		want      uint64
		errSubstr string
	}{
		{"PortXmitPkts", 371, ""},
		{"PortRcvPkts", 1<<64 - 1, ""},
		{"PortXmitData", 0, `"PortXmitData:....................x"`},
		{"PortXmit", 0, "printed no PortXmit:"},
		{"VL15Dropped", 0, "printed no VL15Dropped"},
	} {
		t.Run(tc.counter, func(t *testing.T) {
			v, err := opensmrun.PerfCounter(out, tc.counter)
			if tc.errSubstr != "" {
				require.ErrorContains(t, err, tc.errSubstr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, v)
		})
	}
}

func FuzzLogTimes(f *testing.F) {
	f.Add("Nov 22 02:38:11 865218 [1F] 0x02 -> Entering DISCOVERING state\nNov 22 02:38:12 7 [1F] 0x02 -> SUBNET UP\n")
	f.Add("Feb 30 99:99:99 -1 -> SUBNET UP")
	start := time.Date(2026, time.November, 22, 0, 0, 0, 0, time.Local)
	f.Fuzz(func(t *testing.T, log string) {
		disc, up, err := opensmrun.LogTimes(log, start)
		if err == nil && (disc.IsZero() || up.IsZero()) {
			t.Fatalf("no error but a zero time: %v %v", disc, up)
		}
	})
}

func FuzzPerfCounter(f *testing.F) {
	f.Add([]byte("PortXmitPkts:....................371\n"), "PortXmitPkts")
	f.Add([]byte("PortXmitPkts:"), "PortXmitPkts")
	f.Fuzz(func(t *testing.T, out []byte, counter string) {
		opensmrun.PerfCounter(out, counter) // must not panic
	})
}

// TestOnceIbsim: OpenSM brings the default fabric up on ibsim; its times
// are in order and perfquery at its port counts the SMPs it sent.
func TestOnceIbsim(t *testing.T) {
	testenv.RequireProgram(t, "opensm", "opensm")
	sim := ibsimtest.StartT(t, topologies.Default())
	env, err := ibsimrun.DiagEnv()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	r, err := opensmrun.Once(ctx, opensmrun.Options{NS: sim.NS, Env: env, Dir: dir})
	require.NoError(t, err)
	require.Positive(t, r.MsSweep)
	require.LessOrEqual(t, r.MsSweep, r.MsToUp)
	require.LessOrEqual(t, r.MsToUp, r.MsProcess)
	require.Positive(t, r.CPUMs)
	require.FileExists(t, r.Log)
	require.FileExists(t, dir+"/guid2lid", "OpenSM's cache goes to Dir")
	out, err := opensmrun.Run(ctx, sim.NS, env, "perfquery")
	require.NoError(t, err)
	smps, err := opensmrun.PerfCounter(out, "PortXmitPkts")
	require.NoError(t, err)
	// At least one SMP per node besides the SM's own, which is local.
	require.Greater(t, smps, uint64(topologies.Default().NumNodes()-1))
	t.Logf("up in %.1f ms (sweep %.1f ms, exit %.1f ms), %d SMPs on the wire", r.MsToUp, r.MsSweep, r.MsProcess, smps)

	_, err = opensmrun.Run(ctx, sim.NS, env, "perfquery", "--no-such-flag")
	require.ErrorContains(t, err, "perfquery --no-such-flag")
}

// frameLog is an OpenSM log with FRAMES dumps as 3.3.23 writes them
// (shortened: no payload).
const frameLog = `Nov 25 11:49:36 742842 [511C3740] 0x02 -> osm_opensm_bind: Setting IS_SM on port 0x02fab00000000401
Nov 25 11:49:36 790889 [4E9BD6C0] 0x20 -> SMP dump:
				base_ver................0x1
				mgmt_class..............0x81
				method..................0x1 (SubnGet)
				hop_count...............0x0
				attr_id.................0x11 (NodeInfo)
				attr_mod................0x0
Nov 25 11:49:36 806121 [4D1BA6C0] 0x20 -> SMP dump:
				method..................0x81 (SubnGetResp)
				hop_count...............0x0
				attr_id.................0x11 (NodeInfo)
Nov 25 11:49:36 806200 [4D1BA6C0] 0x20 -> SMP dump:
				method..................0x1 (SubnGet)
				hop_count...............0x1
				attr_id.................0x11 (NodeInfo)
				attr_mod................0x0
Nov 25 11:49:36 806300 [4D1BA6C0] 0x20 -> SMP dump:
				method..................0x2 (SubnSet)
				hop_count...............0x2
				attr_id.................0x15 (PortInfo)
				attr_mod................0x80000001
Nov 25 11:49:36 806400 [4D1BA6C0] 0x20 -> SMP dump:
				method..................0x2 (SubnSet)
				hop_count...............0x2
				attr_id.................0x15 (PortInfo)
				attr_mod................0x3
Nov 25 11:49:36 806500 [4D1BA6C0] 0x20 -> SMP dump:
				method..................0x2 (SubnSet)
				attr_mod................0x3
Nov 25 11:49:36 890272 [4E1BC6C0] 0x02 -> SUBNET UP
`

func TestFrameCounts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		log   string
		want  map[string]int
		local int
	}{
		{"dumps", frameLog, map[string]int{"SubnGet(NodeInfo)": 2, "SubnSet(PortInfo)": 1, "SubnSet(PortInfo) am31": 1}, 1},
		{"no frames", "Nov 25 11:49:36 890272 [4E1BC6C0] 0x02 -> SUBNET UP\n", map[string]int{}, 0},
		{"empty", "", map[string]int{}, 0},
		{"cut short", "-> SMP dump:\n method....", map[string]int{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, local := opensmrun.FrameCounts(tc.log)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.local, local)
		})
	}
}

func FuzzFrameCounts(f *testing.F) {
	f.Add(frameLog)
	f.Add("-> SMP dump:\nmethod...(Subn\nattr_id.. x (y)\nhop_count.\n")
	f.Fuzz(func(t *testing.T, log string) {
		counts, local := opensmrun.FrameCounts(log)
		n := 0
		for _, v := range counts {
			n += v
		}
		if local < 0 || local > n {
			t.Fatalf("%d local of %d", local, n)
		}
	})
}
