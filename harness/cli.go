package harness

import (
	"flag"

	"ibfab/internal/cli"
)

// The ibfab command line is package harness/ibfabcli. What follows is
// what the subcommands of the packages below it (harness/suites,
// harness/bench) are written against, so that they need not import the
// command above them: package cli's types under the names they have
// always had, and ibfab's flag parsing.

// Exit statuses of ibfab (package cli's, as every binary's).
const (
	ExitOK      = cli.ExitOK
	ExitFailure = cli.ExitFailure
	ExitUsage   = cli.ExitUsage
)

// Env is what a command runs against. Tests give it buffers.
type Env = cli.Env

// Command is one ibfab subcommand.
type Command = cli.Command

// CommandError is the failure of a subcommand path such as "topo check";
// ibfab prints it as "ibfab topo check: <Err>" and exits with ExitFailure.
type CommandError = cli.CommandError

// UsageError reports bad arguments: ibfab prints it with the usage line
// and exits with ExitUsage.
type UsageError = cli.UsageError

// ExitCodeError carries the exit status of a command ibfab ran for the
// user (exec): ibfab exits with it and prints nothing more.
type ExitCodeError = cli.ExitCodeError

// ParseFlags parses args with fs, as cli.ParseFlags for ibfab's command
// cmd: -h prints "usage: ibfab SYNOPSIS", desc and the flags and returns
// help true; bad flags and arguments beyond maxArgs (unless it is
// negative) are UsageErrors.
func ParseFlags(env *Env, fs *flag.FlagSet, cmd, synopsis, desc string, args []string, maxArgs int) (help bool, err error) {
	return cli.ParseFlags(env, fs, cli.Help{Prog: "ibfab", Cmd: cmd, Synopsis: synopsis, Desc: desc}, args, maxArgs)
}

// ParseInterleaved parses flags that may come before, between and after
// the positional arguments, as cli.ParseInterleaved for ibfab's command
// cmd, and returns the positional ones.
func ParseInterleaved(env *Env, fs *flag.FlagSet, cmd, synopsis, desc string, args []string) (pos []string, help bool, err error) {
	return cli.ParseInterleaved(env, fs, cli.Help{Prog: "ibfab", Cmd: cmd, Synopsis: synopsis, Desc: desc}, args)
}
