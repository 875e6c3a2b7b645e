package main

// ibsm bench is ibfab bench sm now (package harness/bench/smbench): the
// bench brings up ibsim and OpenSM, which ibsm need not link. It stays
// as an alias that execs ibfab, so ibsm's import graph holds no harness.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// execve replaces the process; tests record the call instead.
var execve = syscall.Exec

// benchArgv is what 'ibsm ARGS...' with ARGS bench's becomes: ibfab
// (next to self, the running ibsm, or on PATH) bench sm, measuring self
// unless ARGS name another --ibsm (a later flag wins).
func benchArgv(self string, args []string) (string, []string, error) {
	bin := filepath.Join(filepath.Dir(self), "ibfab")
	if st, err := os.Stat(bin); err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		if bin, err = exec.LookPath("ibfab"); err != nil {
			return "", nil, errors.New("ibfab is not next to ibsm or on PATH")
		}
	}
	return bin, append([]string{"ibfab", "bench", "sm", "--ibsm", self}, args...), nil
}

// runBench execs ibfab bench sm with args; it returns only when it cannot.
func runBench(args []string, stderr io.Writer) int {
	self, err := os.Executable()
	if err == nil {
		var bin string
		var argv []string
		if bin, argv, err = benchArgv(self, args); err == nil {
			err = execve(bin, argv, os.Environ())
		}
	}
	fmt.Fprintf(stderr, "ibsm bench: moved to 'ibfab bench sm', which it runs: %v\n", err)
	return exitUsage
}
