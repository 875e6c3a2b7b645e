package linktest_test

import (
	"fmt"
	"testing"
	"time"

	"ibfab/link/linktest"
)

// fakeTB collects cleanups and errors instead of acting on them.
type fakeTB struct {
	*testing.T
	cleanups []func()
	errors   []string
}

func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestLeakCheck(t *testing.T) {
	old := linktest.Wait
	linktest.Wait = 50 * time.Millisecond
	t.Cleanup(func() { linktest.Wait = old })
	tests := []struct {
		name     string
		leak     bool
		wantErrs int
	}{
		{"clean", false, 0},
		{"leaked", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTB{T: t}
			linktest.LeakCheck(f)
			stop := make(chan struct{})
			exited := make(chan struct{})
			go func() { <-stop; close(exited) }()
			if !tt.leak {
				close(stop)
				<-exited
			}
			f.runCleanups()
			if tt.leak {
				close(stop)
				<-exited
			}
			if len(f.errors) != tt.wantErrs {
				t.Errorf("LeakCheck reported %d errors, want %d: %q", len(f.errors), tt.wantErrs, f.errors)
			}
		})
	}
}
