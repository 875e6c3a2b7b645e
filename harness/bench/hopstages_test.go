package bench

import (
	"bytes"
	"os"
	"runtime/trace"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	xtrace "golang.org/x/exp/trace"
)

// TestHopStages: packets written by ca1 are followed to the next event of
// each kind, and each stage is the gap between them; a write with no
// packet after it at sw1 is not counted.
func TestHopStages(t *testing.T) {
	us := func(v ...int) []xtrace.Time {
		var s []xtrace.Time
		for _, x := range v {
			s = append(s, xtrace.Time(x*1000))
		}
		return s
	}
	// Two packets 1000 µs apart, the second slower at every stage; a
	// third write that sw1 never saw.
	wr := func(at, woke int) write {
		return write{at: xtrace.Time(at * 1000), woke: xtrace.Time(woke * 1000), woken: true}
	}
	ca1 := &procEvents{writes: []write{wr(10, 0), wr(1020, 1000), wr(5000, 4990)}}
	sw1 := &procEvents{runnable: us(40, 1070), running: us(41, 1072), writes: []write{wr(70, 40), wr(1120, 1070)}}
	ca2 := &procEvents{runnable: us(100, 1180), running: us(101, 1182)}
	st := hopStages(ca1, sw1, ca2)
	require.Len(t, st, len(hopStageNames))
	want := [][2]float64{{10, 20}, {30, 50}, {1, 2}, {29, 48}, {30, 60}, {1, 2}, {91, 162}}
	for i, s := range st {
		assert.Equal(t, 2, s.Packets, "%s", s.Stage)
		assert.InDelta(t, want[i][0], s.P50Us, 1e-9, "%s p50", s.Stage)
		assert.InDelta(t, want[i][1], s.P99Us, 1e-9, "%s p99", s.Stage)
	}
	assert.Contains(t, formatHopStages(st), "ca1 write → ca2 receiver running (the hop)")
}

// TestReadProcEvents: a goroutine that waits on a pipe in the runtime
// poller is a receiver; its wake-ups and runs are found in a real trace.
func TestReadProcEvents(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	var buf bytes.Buffer
	require.NoError(t, trace.Start(&buf))
	// Each byte is written once the reader took the one before, so that
	// it often finds the pipe empty and parks in the poller: in 50
	// rounds, surely once.
	const rounds = 50
	ack := make(chan struct{})
	go func() {
		defer close(ack)
		b := make([]byte, 1)
		for range rounds {
			if _, err := r.Read(b); err != nil {
				return
			}
			ack <- struct{}{}
		}
	}()
	for range rounds {
		_, err := w.Write([]byte{1})
		require.NoError(t, err)
		<-ack
	}
	trace.Stop()
	pe, err := readProcEvents(&buf)
	require.NoError(t, err)
	assert.NotEmpty(t, pe.runnable, "receiver wake-ups")
	assert.NotEmpty(t, pe.running, "receiver runs")
	assert.Empty(t, pe.writes, "no port wrote a data packet")
}
