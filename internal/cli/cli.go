// Package cli is what every binary's command line is built with: exit
// statuses, a command table with its usage text, and the errors that map
// to the statuses (a UsageError to ExitUsage, any other to ExitFailure).
package cli

import (
	"errors"
	"fmt"
	"io"
)

// Exit statuses of every binary.
const (
	ExitOK      = 0
	ExitFailure = 1 // the command ran and failed
	ExitUsage   = 2 // bad arguments
)

// Env is what a command runs against. Tests give it buffers.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
}

// Command is one subcommand of a program.
type Command struct {
	Name    string
	Summary string // one line for the program's usage text
	// Run runs the command with the arguments after its name. It returns a
	// *UsageError for bad arguments and prints help itself on -h.
	Run func(env *Env, args []string) error
}

// CommandError is the failure of a subcommand path such as "topo check";
// Main prints it as "PROG topo check: <Err>" and returns ExitFailure.
type CommandError struct {
	Cmd string
	Err error
}

// Error returns "cmd: message".
func (e *CommandError) Error() string { return e.Cmd + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *CommandError) Unwrap() error { return e.Err }

// UsageError reports bad arguments. Main prints it with the usage line and
// returns ExitUsage.
type UsageError struct {
	Cmd   string // the subcommand path, such as "topo fattree"
	Usage string // the synopsis after "PROG ", such as "topo fattree --leaves L ..."
	Err   error
}

// Error returns "cmd: message".
func (e *UsageError) Error() string { return e.Cmd + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *UsageError) Unwrap() error { return e.Err }

// ExitCodeError carries the exit status of a program a command ran for the
// user (ibfab exec); Main returns it as its own, printing nothing.
type ExitCodeError struct{ Code int }

func (e *ExitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Main runs program prog's command line args (without the program name)
// against the command table cmds and returns the exit status.
func Main(prog string, cmds []Command, args []string, stdout, stderr io.Writer) int {
	env := &Env{Stdout: stdout, Stderr: stderr}
	if len(args) == 0 {
		fmt.Fprintf(stderr, "%s: missing command\n", prog)
		Usage(stderr, prog, cmds)
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		Usage(stdout, prog, cmds)
		return ExitOK
	}
	for _, c := range cmds {
		if c.Name == name {
			return Exit(stderr, prog, name, c.Run(env, args[1:]))
		}
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n", prog, name)
	Usage(stderr, prog, cmds)
	return ExitUsage
}

// Exit prints err, the result of prog's command name, as Main does and
// returns its exit status.
func Exit(stderr io.Writer, prog, name string, err error) int {
	var ue *UsageError
	var ce *CommandError
	var xe *ExitCodeError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &xe):
		return xe.Code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s %v\nusage: %s %s\nrun '%s %s -h' for help\n", prog, ue, prog, ue.Usage, prog, ue.Cmd)
		return ExitUsage
	case errors.As(err, &ce):
		fmt.Fprintf(stderr, "%s %v\n", prog, ce)
		return ExitFailure
	default:
		fmt.Fprintf(stderr, "%s %s: %v\n", prog, name, err)
		return ExitFailure
	}
}

// Usage prints prog's usage: its commands with their summaries.
func Usage(w io.Writer, prog string, cmds []Command) {
	fmt.Fprintf(w, "usage: %s <command> [arguments]\n", prog)
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\nrun '%s <command> -h' for a command's help\n", prog)
}

// BadArgs prints "prefix: err" and, when synopsis is not "", the synopsis
// on the next line, as a program without a command table reports bad
// arguments (ibsm, the node programs), and returns ExitUsage.
func BadArgs(stderr io.Writer, prefix string, err error, synopsis string) int {
	if synopsis == "" {
		fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
	} else {
		fmt.Fprintf(stderr, "%s: %v\n%s\n", prefix, err, synopsis)
	}
	return ExitUsage
}
