package proccpu

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// tick is USER_HZ, the unit of /proc/PID/stat's CPU times, on Linux.
const tick = 10 * time.Millisecond

// Of returns the user and system CPU time process pid has used, from
// /proc/PID/stat (fields 14 and 15).
func Of(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count the fields
	// after its closing parenthesis (field 3 is the first there).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command", pid, len(f))
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(u+st) * tick, nil
}

// Runtime returns the time process pid's threads have run on a CPU, in
// nanoseconds, from /proc/PID/task/*/schedstat (its first field). Of's
// times come in ticks of 10 ms, truncated per process: an idle node
// process that runs for 50 µs a second reads 0 there for a minute, and
// two thousand such read 0 in all. A thread that has exited is no longer
// counted, so Runtime is for the short windows of a measurement.
func Runtime(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited meanwhile
		}
		if err != nil {
			return 0, err
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: empty", pid, task.Name())
		}
		ns, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: %w", pid, task.Name(), err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// RSS returns process pid's resident set size in bytes, from
// /proc/PID/status (VmRSS): what the benchmarks and the fuzzer watch for
// growth.
func RSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: %w", pid, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// Pss returns process pid's proportional set size in bytes, from
// /proc/PID/smaps_rollup: its private pages and its share of the pages it
// shares. Unlike RSS it does not count the shared libraries and binary
// pages of many processes over and over, so a soak's per-process growth
// is its own.
func Pss(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "Pss:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/smaps_rollup: %w", pid, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/smaps_rollup: no Pss", pid)
}

// FDs returns how many file descriptors process pid holds open, from
// /proc/PID/fd: what a leak check compares before and after.
func FDs(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	return len(ents), nil
}
