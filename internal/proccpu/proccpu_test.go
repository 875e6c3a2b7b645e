package proccpu_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ibfab/internal/proccpu"
)

// TestOf: a process's CPU time grows while it works, and a PID that does
// not exist is an error.
func TestOf(t *testing.T) {
	a, err := proccpu.Of(os.Getpid())
	require.NoError(t, err)
	b := a
	for deadline := time.Now().Add(10 * time.Second); b == a && time.Now().Before(deadline); {
		for end := time.Now().Add(5 * time.Millisecond); time.Now().Before(end); {
		}
		b, err = proccpu.Of(os.Getpid())
		require.NoError(t, err)
	}
	require.Greater(t, b, a, "CPU time did not grow while spinning")
	_, err = proccpu.Of(1 << 30) // above any pid_max
	require.Error(t, err)
}

// TestRuntime: a process's run time grows by what it spun, to well under
// a tick, and a PID that does not exist is an error. The kernel adds a
// running thread's time to its schedstat at a tick or when it leaves the
// CPU, so each spin ends in a sleep: the stop's CI read 0 after 2 ms of
// spinning alone.
func TestRuntime(t *testing.T) {
	a, err := proccpu.Runtime(os.Getpid())
	require.NoError(t, err)
	b := a
	for deadline := time.Now().Add(10 * time.Second); b-a < time.Millisecond && time.Now().Before(deadline); {
		for end := time.Now().Add(2 * time.Millisecond); time.Now().Before(end); {
		}
		time.Sleep(time.Millisecond)
		b, err = proccpu.Runtime(os.Getpid())
		require.NoError(t, err)
	}
	require.GreaterOrEqual(t, b-a, time.Millisecond, "2 ms of spinning")
	_, err = proccpu.Runtime(1 << 30)
	require.Error(t, err)
}

// TestRSS: a test binary's resident memory reads in bytes; a PID that
// does not exist is an error.
func TestRSS(t *testing.T) {
	n, err := proccpu.RSS(os.Getpid())
	require.NoError(t, err)
	require.Greater(t, n, uint64(1<<20), "a Go test binary holds more than 1 MiB")
	_, err = proccpu.RSS(-1)
	require.Error(t, err)
}

// TestPss: a test binary's proportional set size reads in bytes, above
// zero and at most its RSS; a PID that does not exist is an error.
func TestPss(t *testing.T) {
	pss, err := proccpu.Pss(os.Getpid())
	require.NoError(t, err)
	rss, err := proccpu.RSS(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, pss)
	require.LessOrEqual(t, pss, rss+1<<20, "Pss beyond RSS (read a moment apart)")
	_, err = proccpu.Pss(-1)
	require.Error(t, err)
}

// TestFDs: a file opened shows as one descriptor more, closed as one
// fewer; a PID that does not exist is an error.
func TestFDs(t *testing.T) {
	before, err := proccpu.FDs(os.Getpid())
	require.NoError(t, err)
	f, err := os.Open(os.Args[0])
	require.NoError(t, err)
	during, err := proccpu.FDs(os.Getpid())
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, before+1, during)
	_, err = proccpu.FDs(-1)
	require.Error(t, err)
}
