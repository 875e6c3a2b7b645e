package linktest

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// LeakCheck fails t if, when t's cleanups run, goroutines exist that did
// not exist when LeakCheck was called. Call it first in a test, so that its
// cleanup runs last, after the test's own Close calls. Goroutines that are
// on their way out get up to Wait to finish; the check yields the processor
// while it waits instead of sleeping.
func LeakCheck(t testing.TB) {
	t.Helper()
	before := goroutines()
	t.Cleanup(func() {
		deadline := time.Now().Add(Wait)
		var extra []string
		for {
			extra = extra[:0]
			for id, stack := range goroutines() {
				if _, ok := before[id]; !ok {
					extra = append(extra, stack)
				}
			}
			if len(extra) == 0 || time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
		}
		for _, s := range extra {
			t.Errorf("leaked goroutine:\n%s", s)
		}
	})
}

// goroutines returns the stacks of the running goroutines by id, leaving
// out the test framework's own (created by package testing), which come and
// go with subtests.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	m := map[string]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		s := string(g)
		header, _, _ := strings.Cut(s, "\n")
		id, _, _ := strings.Cut(strings.TrimPrefix(header, "goroutine "), " ")
		if _, creator, ok := strings.Cut(s, "\ncreated by "); ok && strings.HasPrefix(creator, "testing.") {
			continue
		}
		m[id] = s
	}
	return m
}
