package bench

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// A hop's stages, read from execution traces of the three processes a
// packet crosses (ca1 → sw1 → ca2) taken at once: each trace's clock is
// the machine's monotonic clock, so the events of one packet line up
// across processes. At light traffic a packet's events are the next ones
// of each kind after the one before, which is how a packet is followed.
//
//	write   ca1 writes the data packet (the syscall starts); the writer
//	        (the generator sending inline, or the port's transmitter
//	        after a hand-off) was woken at woke
//	rx      sw1's receive goroutine is runnable (the kernel delivered
//	        the frame and woke the thread polling the socket)
//	run     it runs
//	write2  sw1 writes it on port 2 (inline from the receive goroutine,
//	        or the transmitter's after a hand-off)
//	rx2     ca2's receive goroutine is runnable
//	run2    it runs
var hopStageNames = []string{
	"ca1 writer woken → write (generate, seal, send; hand-off if any)",
	"ca1 write → sw1 receiver runnable (kernel, wake-up)",
	"sw1 receiver runnable → running (scheduler)",
	"sw1 running → write (read, verify, route; hand-off if any)",
	"sw1 write → ca2 receiver runnable (kernel, wake-up)",
	"ca2 receiver runnable → running (scheduler)",
	"ca1 write → ca2 receiver running (the hop)",
}

// HopStage is one stage's durations over the packets followed.
type HopStage struct {
	Stage   string  `json:"stage"`
	Packets int     `json:"packets"`
	P50Us   float64 `json:"p50_us"`
	P90Us   float64 `json:"p90_us"`
	P99Us   float64 `json:"p99_us"`
}

// procEvents is what a hop needs of one process's trace, each sorted.
type procEvents struct {
	writes   []write      // data packets' write syscalls
	runnable []trace.Time // a receive goroutine made runnable
	running  []trace.Time // a receive goroutine starts running
}

// write is a data packet's write: when the syscall began, and when the
// goroutine making it was last woken (woken: if the trace saw that).
type write struct {
	at, woke trace.Time
	woken    bool
}

// writeFunc is the function every data packet's write goes through.
const writeFunc = "ibfab/port.(*Port).writeDataLocked"

// readProcEvents reads one execution trace. It takes two passes: a
// goroutine is known as a receiver only once it waited on the network.
func readProcEvents(r io.Reader) (*procEvents, error) {
	evs, roles, err := goroutineTransitions(r)
	if err != nil {
		return nil, err
	}
	pe := procEvents{}
	woke := map[trace.GoID]trace.Time{}
	for _, ev := range evs {
		pe.add(ev, roles, woke)
	}
	slices.SortFunc(pe.writes, func(a, b write) int { return cmp.Compare(a.at, b.at) })
	slices.Sort(pe.runnable)
	slices.Sort(pe.running)
	return &pe, nil
}

// goroutineRoles are the receive goroutines of a trace.
type goroutineRoles struct{ rx map[trace.GoID]bool }

// goroutineTransitions returns the goroutine state transitions of the
// trace r, and which goroutines receive.
func goroutineTransitions(r io.Reader) ([]trace.Event, goroutineRoles, error) {
	roles := goroutineRoles{rx: map[trace.GoID]bool{}}
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, roles, err
	}
	var evs []trace.Event
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			return evs, roles, nil
		}
		if err != nil {
			return nil, roles, err
		}
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		from, to := st.Goroutine()
		if from == trace.GoRunning && to == trace.GoWaiting && st.Reason == "network" {
			roles.rx[st.Resource.Goroutine()] = true
		}
		evs = append(evs, ev)
	}
}

// add records ev, a goroutine's state transition, if it is one a hop
// needs: a receiver made runnable or running, a data packet's write (with
// when its goroutine was woken, which woke tracks).
func (pe *procEvents) add(ev trace.Event, roles goroutineRoles, woke map[trace.GoID]trace.Time) {
	st := ev.StateTransition()
	g := st.Resource.Goroutine()
	from, to := st.Goroutine()
	switch {
	case to == trace.GoRunnable && from != trace.GoRunning:
		// Woken, or created (a clock timer's callback runs on a
		// goroutine of its own: the generator's next packet).
		woke[g] = ev.Time()
		if from == trace.GoWaiting && roles.rx[g] {
			pe.runnable = append(pe.runnable, ev.Time())
		}
	case from == trace.GoRunnable && to == trace.GoRunning && roles.rx[g]:
		pe.running = append(pe.running, ev.Time())
	case from == trace.GoRunning && to == trace.GoSyscall && inStack(st.Stack, writeFunc):
		w, ok := woke[g]
		pe.writes = append(pe.writes, write{at: ev.Time(), woke: w, woken: ok})
	}
}

func inStack(s trace.Stack, fn string) bool {
	for f := range s.Frames() {
		if f.Func == fn {
			return true
		}
	}
	return false
}

// hopStages follows each data packet ca1 wrote through sw1 to ca2.
func hopStages(ca1, sw1, ca2 *procEvents) []HopStage {
	d := make([][]time.Duration, len(hopStageNames))
	at := func(ws []write) []trace.Time {
		t := make([]trace.Time, len(ws))
		for i, w := range ws {
			t[i] = w.at
		}
		return t
	}
	sw1Writes := at(sw1.writes)
	for _, w := range ca1.writes {
		t := []trace.Time{w.at}
		for _, s := range [][]trace.Time{sw1.runnable, sw1.running, sw1Writes, ca2.runnable, ca2.running} {
			n, ok := next(s, t[len(t)-1])
			if !ok {
				break
			}
			t = append(t, n)
		}
		if len(t) < 6 {
			continue
		}
		if w.woken && w.at.Sub(w.woke) <= time.Millisecond {
			d[0] = append(d[0], w.at.Sub(w.woke))
		}
		for i := 1; i < 6; i++ {
			d[i] = append(d[i], t[i].Sub(t[i-1]))
		}
		d[6] = append(d[6], t[5].Sub(t[0]))
	}
	out := make([]HopStage, len(hopStageNames))
	for i, name := range hopStageNames {
		out[i] = HopStage{Stage: name, Packets: len(d[i])}
		if len(d[i]) == 0 {
			continue
		}
		slices.Sort(d[i])
		// Nearest rank, as the latency histogram's quantiles.
		q := func(f float64) float64 { return float64(d[i][int(math.Ceil(f*float64(len(d[i]))))-1]) / 1e3 }
		out[i].P50Us, out[i].P90Us, out[i].P99Us = q(0.5), q(0.9), q(0.99)
	}
	return out
}

// next returns the first time in s at or after t.
func next(s []trace.Time, t trace.Time) (trace.Time, bool) {
	i, _ := slices.BinarySearch(s, t)
	if i == len(s) {
		return 0, false
	}
	return s[i], true
}

// hopStagesFrom reads the traces NODE.trace.pprof of ca1, sw1 and ca2 in
// dir (fabric.profile's names).
func hopStagesFrom(dir string) ([]HopStage, error) {
	var pes [3]*procEvents
	for i, n := range []string{"ca1", "sw1", "ca2"} {
		f, err := os.Open(filepath.Join(dir, n+".trace.pprof"))
		if err != nil {
			return nil, err
		}
		pes[i], err = readProcEvents(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s's trace: %w", n, err)
		}
	}
	st := hopStages(pes[0], pes[1], pes[2])
	if st[len(st)-1].Packets == 0 {
		return nil, errors.New("no packet followed through the traces")
	}
	return st, nil
}

// formatHopStages formats the stages as a table.
func formatHopStages(st []HopStage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-62s %7s %8s %8s %8s\n", "stage", "packets", "p50 µs", "p90 µs", "p99 µs")
	for _, s := range st {
		fmt.Fprintf(&b, "%-62s %7d %8.1f %8.1f %8.1f\n", s.Stage, s.Packets, s.P50Us, s.P90Us, s.P99Us)
	}
	return b.String()
}
