package testsupport

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// PollEvery calls cond every interval until it holds or limit has passed,
// and reports whether it held. It waits on a condition; a fixed sleep
// before an assertion guesses at one.
func PollEvery(limit, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}

// Poll is PollEvery with a millisecond's interval.
func Poll(limit time.Duration, cond func() bool) bool {
	return PollEvery(limit, time.Millisecond, cond)
}

// WaitFor polls cond for up to limit and fails t, naming what it waited
// for, when cond never held.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(limit, cond) {
		t.Fatalf("waiting for %s: not within %v", what, limit)
	}
}

// WaitBlocked waits up to limit until n goroutines are blocked (in a
// channel operation, a lock, the poller: any state but running, runnable
// or a system call) with every one of fns on their stacks, each as a
// stack trace names it ("ibfab/simclient.(*Client).Recv",
// "internal/poll.runtime_pollWait": blocked reading a socket in Recv),
// and fails t if they never are. It stands for "the goroutine has got as
// far as waiting there" where a test would otherwise sleep and hope.
func WaitBlocked(t testing.TB, limit time.Duration, n int, fns ...string) {
	t.Helper()
	if !Poll(limit, func() bool { return blockedIn(fns) >= n }) {
		t.Fatalf("waiting for %d goroutines blocked in %v: %d within %v", n, fns, blockedIn(fns), limit)
	}
}

// blockedIn counts the goroutines blocked with all of fns on their stacks.
func blockedIn(fns []string) int {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		header, body, _ := strings.Cut(string(g), "\n")
		// "goroutine 7 [chan receive]:" or "goroutine 7 [IO wait, 2 minutes]:"
		_, state, _ := strings.Cut(header, "[")
		state, _, _ = strings.Cut(state, "]")
		state, _, _ = strings.Cut(state, ",")
		switch state {
		case "running", "runnable", "syscall", "":
			continue
		}
		// A frame's function line, not the "created by" line.
		body, _, _ = strings.Cut(body, "\ncreated by ")
		body = "\n" + body
		all := true
		for _, fn := range fns {
			all = all && strings.Contains(body, "\n"+fn+"(")
		}
		if all {
			count++
		}
	}
	return count
}
