package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// FlagSet returns a FlagSet for prog's command cmd that reports errors to
// its caller instead of printing them, so that Main prints every usage
// error the same way.
func FlagSet(prog, cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet(prog+" "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// Help is what a command's -h prints: "usage: PROG SYNOPSIS", the
// description and the flags.
type Help struct {
	Prog     string // the program, such as "ibfab"
	Cmd      string // the subcommand path, such as "topo check"
	Synopsis string // after "PROG ", such as "topo check FILE"
	Desc     string
}

// usage returns the UsageError of err for h's command.
func (h Help) usage(err error) error { return &UsageError{Cmd: h.Cmd, Usage: h.Synopsis, Err: err} }

// ParseFlags parses args with fs. On -h it prints h to env.Stdout and
// returns help true. Flag errors and positional arguments beyond maxArgs
// (unless it is negative) are UsageErrors.
func ParseFlags(env *Env, fs *flag.FlagSet, h Help, args []string, maxArgs int) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(env.Stdout, "usage: %s %s\n\n%s\n", h.Prog, h.Synopsis, strings.TrimSpace(h.Desc))
			if hasFlags(fs) {
				fmt.Fprintln(env.Stdout, "\nflags:")
				fs.SetOutput(env.Stdout)
				fs.PrintDefaults()
				fs.SetOutput(io.Discard)
			}
			return true, nil
		}
		return false, h.usage(err)
	}
	if maxArgs >= 0 && fs.NArg() > maxArgs {
		return false, h.usage(fmt.Errorf("unexpected argument %q", fs.Arg(maxArgs)))
	}
	return false, nil
}

// ParseInterleaved parses flags that may come before, between and after
// the positional arguments (ibfab capture N NODE -w F), and returns the
// positional ones; those after "--" are all positional. -h prints help.
func ParseInterleaved(env *Env, fs *flag.FlagSet, h Help, args []string) (pos []string, help bool, err error) {
	if help, err := ParseFlags(env, fs, h, args, -1); help || err != nil {
		return nil, help, err
	}
	rest := fs.Args()
	for len(rest) > 0 {
		if rest[0] == "--" {
			return append(pos, rest[1:]...), false, nil
		}
		pos = append(pos, rest[0])
		if err := fs.Parse(rest[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return ParseInterleaved(env, fs, h, []string{"-h"})
			}
			return nil, false, h.usage(err)
		}
		rest = fs.Args()
	}
	return pos, false, nil
}

// ParseInterspersed parses flags and positional arguments in any order
// (ibfab fault N NODE --drop 5%) and returns the positional ones.
func ParseInterspersed(env *Env, fs *flag.FlagSet, h Help, args []string) (pos []string, help bool, err error) {
	for {
		if help, err := ParseFlags(env, fs, h, args, -1); help || err != nil {
			return nil, help, err
		}
		if fs.NArg() == 0 {
			return pos, false, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// CPUList is a flag.Value of CPU numbers as taskset and /sys write them:
// "0", "0,2", "0-3,6".
type CPUList []int

func (l *CPUList) String() string {
	var parts []string
	for _, c := range *l {
		parts = append(parts, strconv.Itoa(c))
	}
	return strings.Join(parts, ",")
}

// Set parses a list, refusing empty items, bad numbers and backward
// ranges.
func (l *CPUList) Set(s string) error {
	var out []int
	for _, item := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(item), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return fmt.Errorf("CPU list %q: want numbers and ranges such as 0,2-3", s)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	*l = out
	return nil
}
