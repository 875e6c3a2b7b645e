package nodeproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"time"
)

// ProfileArgs are the "profile" op's arguments: a CPU profile of the node
// process over Seconds, written to Path (read it with `go tool pprof`).
type ProfileArgs struct {
	Path    string  `json:"path"`
	Seconds float64 `json:"seconds"`
}

// maxProfile bounds a profile so a typo cannot keep the op busy for hours.
const maxProfile = 10 * time.Minute

// profileCPU records the CPU profile; it returns when the time is up or
// the request's context ends (the profile written so far is kept).
func profileCPU(ctx context.Context, a ProfileArgs) error {
	d := time.Duration(a.Seconds * float64(time.Second))
	switch {
	case a.Path == "":
		return errors.New("profile: no path")
	case d <= 0 || d > maxProfile:
		return fmt.Errorf("profile: seconds %g out of range (0, %g]", a.Seconds, maxProfile.Seconds())
	}
	f, err := os.Create(a.Path)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("profile: %w", err)
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	pprof.StopCPUProfile()
	return f.Close()
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
