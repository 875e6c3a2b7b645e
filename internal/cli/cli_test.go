package cli

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMainStatuses: the exit statuses and what Main prints for each kind of result.
func TestMainStatuses(t *testing.T) {
	cmds := []Command{{Name: "x", Summary: "does x", Run: func(env *Env, args []string) error {
		switch args[0] {
		case "usage":
			return &UsageError{Cmd: "x", Usage: "x ARG", Err: errors.New("bad")}
		case "fail":
			return &CommandError{Cmd: "x y", Err: errors.New("broke")}
		case "code":
			return &ExitCodeError{Code: 7}
		case "plain":
			return errors.New("oops")
		}
		return nil
	}}}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"x", "ok"}, ExitOK, ""},
		{[]string{"x", "usage"}, ExitUsage, "p x: bad\nusage: p x ARG\nrun 'p x -h' for help\n"},
		{[]string{"x", "fail"}, ExitFailure, "p x y: broke\n"},
		{[]string{"x", "code"}, 7, ""},
		{[]string{"x", "plain"}, ExitFailure, "p x: oops\n"},
		{nil, ExitUsage, "p: missing command\nusage: p <command> [arguments]\n\ncommands:\n  x          does x\n\nrun 'p <command> -h' for a command's help\n"},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, tc.code, Main("p", cmds, tc.args, &out, &errb), "%v", tc.args)
		assert.Equal(t, tc.stderr, errb.String(), "%v", tc.args)
	}
	var errb bytes.Buffer
	assert.Equal(t, ExitUsage, BadArgs(&errb, "p sub", errors.New("bad"), "usage: p sub"))
	assert.Equal(t, "p sub: bad\nusage: p sub\n", errb.String())
}
