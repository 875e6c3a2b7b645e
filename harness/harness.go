package harness

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"ibfab/internal/cli"
)

// Exit statuses of Main (package cli's, as every binary's).
const (
	ExitOK      = cli.ExitOK
	ExitFailure = cli.ExitFailure
	ExitUsage   = cli.ExitUsage
)

// Env is what a command runs against. Tests give it buffers.
type Env = cli.Env

// Command is one ibfab subcommand.
type Command = cli.Command

// commands is the subcommand table; run (package suites) is added by
// Register.
var commands = []Command{
	{Name: "topo", Summary: "generate a fabric topology file, or check one", Run: runTopo},
	{Name: "up", Summary: "bring a fabric's namespaces and links up", Run: runUp},
	{Name: "down", Summary: "take a fabric down, removing all it created", Run: runDown},
	{Name: "status", Summary: "show a fabric's nodes, ports, LIDs and counters", Run: runStatus},
	{Name: "exec", Summary: "run a command in a node's network namespace", Run: runExec},
	{Name: "kill", Summary: "kill a node's process (SIGKILL), as a crash would", Run: runKill},
	{Name: "pcap", Summary: "write a sample capture of a fabric's discovery, or decode a capture", Run: runPcap},
	{Name: "fault", Summary: "drop, corrupt or delay a link's frames in the kernel (eBPF); list and clear faults", Run: runFault},
	{Name: "link", Summary: "set a node's link down, up, or flap it", Run: runLink},
	{Name: "restart", Summary: "restart a node's process with the arguments it had", Run: runRestart},
	{Name: "add", Summary: "add nodes and links to a running fabric (hot-add a switch with hosts)", Run: runAdd},
	{Name: "capture", Summary: "capture a port's frames, both directions, to an ERF pcap", Run: runCapture},
}

// Register appends c to the subcommand table. Subcommands of packages
// that build on harness (suites' run) cannot sit in the table literal
// without an import cycle: cmd/ibfab registers them before Main.
func Register(c Command) {
	if !slices.ContainsFunc(commands, func(x Command) bool { return x.Name == c.Name }) {
		commands = append(commands, c)
	}
}

// Commands returns the subcommand table.
func Commands() []Command { return append([]Command(nil), commands...) }

// CommandError is the failure of a subcommand path such as "topo check";
// Main prints it as "ibfab topo check: <Err>" and exits with ExitFailure.
type CommandError = cli.CommandError

// UsageError reports bad arguments. Main prints it with the usage line and
// exits with ExitUsage.
type UsageError = cli.UsageError

// Main runs the ibfab command line args (without the program name) and
// returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.Main("ibfab", commands, args, stdout, stderr)
}

// flagSet returns a FlagSet that reports errors to its caller instead of
// printing them, so Main prints every usage error the same way.
func flagSet(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet("ibfab "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// ParseFlags parses args with fs. On -h it prints the synopsis, the
// description and the flags to stdout and returns help true. Flag errors
// and positional arguments beyond maxArgs (unless it is negative) are
// UsageErrors.
func ParseFlags(env *Env, fs *flag.FlagSet, cmd, synopsis, desc string, args []string, maxArgs int) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(env.Stdout, "usage: ibfab %s\n\n%s\n", synopsis, strings.TrimSpace(desc))
			if hasFlags(fs) {
				fmt.Fprintln(env.Stdout, "\nflags:")
				fs.SetOutput(env.Stdout)
				fs.PrintDefaults()
				fs.SetOutput(io.Discard)
			}
			return true, nil
		}
		return false, &UsageError{Cmd: cmd, Usage: synopsis, Err: err}
	}
	if maxArgs >= 0 && fs.NArg() > maxArgs {
		return false, &UsageError{Cmd: cmd, Usage: synopsis, Err: fmt.Errorf("unexpected argument %q", fs.Arg(maxArgs))}
	}
	return false, nil
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}
