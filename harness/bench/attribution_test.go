package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/hca"
	"ibfab/nodeproc"
	"ibfab/port"
)

func TestAttribute(t *testing.T) {
	const iv = 20 * time.Millisecond
	t0 := time.Unix(1000, 0).UnixNano()
	at := func(ms float64) int64 { return t0 + int64(ms*1e6) }
	// h1 (LID 1) → h2 (LID 2), dark from 0 to 300 ms.
	span := outageSpan{pair: pair{"h1", "h2"}, slid: 1, dlid: 2, start: at(0), end: at(300)}
	drop := func(ms float64, cause port.DropCause, dir nodeproc.DropDir, port uint8, slid, dlid uint16) nodeproc.DropRecord {
		return nodeproc.DropRecord{AtNs: at(ms), Port: port, Cause: cause, Dir: dir, SLID: slid, DLID: dlid}
	}
	every := func(from, to float64, cause port.DropCause, dir nodeproc.DropDir, port uint8) []nodeproc.DropRecord {
		var out []nodeproc.DropRecord
		for ms := from; ms <= to; ms += 20 {
			out = append(out, drop(ms, cause, dir, port, 1, 2))
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		ev            evidence
		latency       time.Duration // of the packet that ended the spell
		wantCause     string
		wantKinds     []string
		wantUnexplain float64
	}{
		{name: "no evidence", wantCause: "unknown", wantKinds: []string{"unknown"}, wantUnexplain: 260},
		{name: "unroutable then link down",
			ev: evidence{drops: map[string][]nodeproc.DropRecord{
				"sw5": every(20, 200, port.DropUnroutable, nodeproc.DropRx, 3),
				"sw2": append(every(220, 280, port.DropLinkDown, nodeproc.DropTx, 1),
					drop(100, port.DropUnroutable, nodeproc.DropRx, 1, 1, 7),  // another pair's
					drop(400, port.DropUnroutable, nodeproc.DropRx, 1, 1, 2)), // after the spell
			}},
			wantCause: "dropped at sw5[3]: unroutable ×10 20-200 ms, then dropped at sw2[1]: link_down_while_queued ×4 220-280 ms",
			wantKinds: []string{"dropped", "dropped"}},
		{name: "routed to a dead output",
			ev: evidence{drops: map[string][]nodeproc.DropRecord{"sw7": func() []nodeproc.DropRecord {
				rs := every(0, 280, port.DropLinkDown, nodeproc.DropRx, 4)
				for i := range rs {
					rs[i].Out = 1
				}
				return rs
			}()}},
			wantCause: "dropped at sw7[4→1]: link_down_while_queued ×15 0-280 ms",
			wantKinds: []string{"dropped"}},
		{name: "drops then an unexplained tail",
			ev:        evidence{drops: map[string][]nodeproc.DropRecord{"sw5": every(20, 60, port.DropUnroutable, nodeproc.DropRx, 3)}},
			wantCause: "dropped at sw5[3]: unroutable ×3 20-60 ms, then unknown 80-280 ms",
			wantKinds: []string{"dropped", "unknown"}, wantUnexplain: 200},
		{name: "port refused at the sender, to any destination",
			ev: evidence{drops: map[string][]nodeproc.DropRecord{"h1": {
				drop(10, port.DropNotActive, nodeproc.DropTx, 1, 1, 9), drop(100, port.DropNotActive, nodeproc.DropTx, 1, 1, 2),
				drop(190, port.DropNotActive, nodeproc.DropTx, 1, 1, 5), drop(280, port.DropNotActive, nodeproc.DropTx, 1, 1, 2)}}},
			wantCause: "not sent: port refused at h1[1] (port_not_active) ×4 10-280 ms",
			wantKinds: []string{"not_sent"}},
		{name: "generator stalled",
			ev: evidence{stalls: map[string][]hca.Stall{
				"h1": {{EndNs: at(290), LateNs: int64(280 * time.Millisecond)}},
				"h2": {{EndNs: at(290), LateNs: int64(280 * time.Millisecond)}}, // not the sender
			}},
			wantCause: "emulator short of CPU: h1's generator stalled ×1, 280 ms in all, 10-290 ms",
			wantKinds: []string{"cpu"}},
		{name: "held where nothing else explains it",
			ev: evidence{
				drops: map[string][]nodeproc.DropRecord{"sw5": every(20, 100, port.DropUnroutable, nodeproc.DropRx, 3)},
				held: []heldSample{
					{at: at(50), node: "sw2", port: 1, vl: 0, queued: 5}, // covered by the drops
					{at: at(200), node: "sw2", port: 1, vl: 0, queued: 5},
					{at: at(280), node: "sw2", port: 1, vl: 0, queued: 5},
				}},
			wantCause: "dropped at sw5[3]: unroutable ×5 20-100 ms, then held: waiting for credits at sw2[1] VL0 200-280 ms",
			wantKinds: []string{"dropped", "held"}},
		{name: "late, not lost", latency: 250 * time.Millisecond,
			wantCause: "delayed: the packet that ended it reached h2 after 250 ms on its way, 50-300 ms",
			wantKinds: []string{"delayed"}, wantUnexplain: 30},
		{name: "a latency within the threshold explains nothing", latency: 40 * time.Millisecond,
			wantCause: "unknown", wantKinds: []string{"unknown"}, wantUnexplain: 260},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.ev
			ev.t0, ev.interval = t0, iv
			ev.source = map[string]SourceCounts{"h1": {Sent: 10, Failed: 3}}
			sp := span
			sp.endLatency = int64(tc.latency)
			outs := attribute([]outageSpan{sp}, ev)
			require.Len(t, outs, 1)
			o := outs[0]
			assert.Equal(t, "h1→h2", o.Pair)
			assert.Equal(t, 300.0, o.DarkMs)
			assert.Equal(t, tc.wantCause, o.Cause)
			var kinds []string
			for _, c := range o.Causes {
				kinds = append(kinds, c.Kind)
			}
			assert.Equal(t, tc.wantKinds, kinds)
			assert.InDelta(t, tc.wantUnexplain, o.UnexplainedMs, 0.01)
			require.NotNil(t, o.Source)
			assert.Equal(t, uint64(3), o.Source.Failed)
		})
	}
}

func TestAttributeOrdersOutages(t *testing.T) {
	t0 := time.Unix(1000, 0).UnixNano()
	spans := []outageSpan{
		{pair: pair{"b", "a"}, start: t0 + 5e6, end: t0 + 200e6},
		{pair: pair{"a", "b"}, start: t0 + 5e6, end: t0 + 300e6},
		{pair: pair{"c", "a"}, start: t0 + 1e6, end: t0 + 300e6},
	}
	outs := attribute(spans, evidence{t0: t0, interval: 20 * time.Millisecond})
	var got []string
	for _, o := range outs {
		got = append(got, o.Pair)
	}
	assert.Equal(t, []string{"c→a", "a→b", "b→a"}, got)
	tl := outageTimeline(outs)
	require.Len(t, tl, 3)
	assert.Equal(t, "c→a dark until 300 ms: unknown", tl[0].What)
}
