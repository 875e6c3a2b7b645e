package nodeproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"ibfab/internal/enum"
)

// ProfileKind is what a "profile" op records.
type ProfileKind uint8

const (
	// ProfileCPU samples where the process spends CPU time.
	ProfileCPU ProfileKind = iota // cpu
	// ProfileBlock records where goroutines wait (channels, conditions,
	// selects, locks) and for how long: the hand-offs of a packet's path.
	ProfileBlock // block
	// ProfileMutex records contended locks and who held them.
	ProfileMutex // mutex
	// ProfileTrace is an execution trace (`go tool trace`): every
	// goroutine's wake-ups, runs and system calls, with their times.
	ProfileTrace // trace
	// ProfileHeap is the heap at the end of the seconds, after a
	// collection: what is live and where it was allocated, in pprof's
	// text form, which ends with the runtime's MemStats (the heap in use,
	// idle and released, the stacks). Two of them (`go tool pprof -base`)
	// tell a leak from a heap that grew to its working size, which a
	// process's Pss alone does not.
	ProfileHeap // heap
)

var profileKinds = enum.New("profile kind", ProfileCPU, ProfileBlock, ProfileMutex, ProfileTrace, ProfileHeap)

// MarshalText implements encoding.TextMarshaler.
func (k ProfileKind) MarshalText() ([]byte, error) { return profileKinds.Marshal(k) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *ProfileKind) UnmarshalText(b []byte) error { return profileKinds.Unmarshal(k, b) }

// ProfileArgs are the "profile" op's arguments: a profile of the node
// process over Seconds, written to Path (read it with `go tool pprof`).
// Kind defaults to CPU.
type ProfileArgs struct {
	Path    string      `json:"path"`
	Seconds float64     `json:"seconds"`
	Kind    ProfileKind `json:"kind,omitempty"`
}

// maxProfile bounds a profile so a typo cannot keep the op busy for hours.
const maxProfile = 10 * time.Minute

// profile records the profile a asks for; it returns when the time is up
// or the request's context ends (the profile taken so far is kept).
func profile(ctx context.Context, a ProfileArgs) error {
	d := time.Duration(a.Seconds * float64(time.Second))
	switch {
	case a.Path == "":
		return errors.New("profile: no path")
	case d <= 0 || d > maxProfile:
		return fmt.Errorf("profile: seconds %g out of range (0, %g]", a.Seconds, maxProfile.Seconds())
	case a.Kind > ProfileHeap:
		return fmt.Errorf("profile: %v unknown", a.Kind)
	}
	f, err := os.Create(a.Path)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	wait := func() {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	switch a.Kind {
	case ProfileCPU:
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("profile: %w", err)
		}
		wait()
		pprof.StopCPUProfile()
	case ProfileBlock:
		// Every blocking event, only while the profile runs: the rate
		// costs the data path a clock read per wait.
		runtime.SetBlockProfileRate(1)
		wait()
		runtime.SetBlockProfileRate(0)
		err = pprof.Lookup("block").WriteTo(f, 0)
	case ProfileMutex:
		runtime.SetMutexProfileFraction(1)
		wait()
		runtime.SetMutexProfileFraction(0)
		err = pprof.Lookup("mutex").WriteTo(f, 0)
	case ProfileTrace:
		if err := trace.Start(f); err != nil {
			f.Close()
			return fmt.Errorf("profile: %w", err)
		}
		wait()
		trace.Stop()
	case ProfileHeap:
		wait()
		runtime.GC() // the profile's in-use figures are as of the last collection
		err = pprof.Lookup("heap").WriteTo(f, 1)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	return nil
}

// Stacks is the "stacks" op's answer: every goroutine's stack, as a
// panic prints them, to see where a port that holds packets is waiting.
type Stacks struct {
	Goroutines string `json:"goroutines"`
}

func goroutineStacks() (Stacks, error) {
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		return Stacks{}, fmt.Errorf("stacks: %w", err)
	}
	return Stacks{Goroutines: b.String()}, nil
}
