package ibfabcli

import (
	"flag"
	"io"

	"ibfab/harness/bench"
	"ibfab/harness/suites"
	"ibfab/internal/cli"
)

// Env is what a command runs against. Tests give it buffers.
type Env = cli.Env

// CommandError and UsageError are what a subcommand returns when it fails
// or was given bad arguments (package cli's, as every binary's).
type (
	CommandError = cli.CommandError
	UsageError   = cli.UsageError
)

// commands is the subcommand table, in the order ibfab -h lists it.
var commands = []cli.Command{
	{Name: "topo", Summary: "generate a fabric topology file, or check one", Run: runTopo},
	{Name: "up", Summary: "bring a fabric's namespaces and links up", Run: runUp},
	{Name: "down", Summary: "take a fabric down, removing all it created", Run: runDown},
	{Name: "status", Summary: "show a fabric's nodes, ports, LIDs and counters", Run: runStatus},
	{Name: "graph", Summary: "draw a fabric with its ports' state: Graphviz DOT, JSON or SVG", Run: runGraph},
	{Name: "exec", Summary: "run a command in a node's network namespace", Run: runExec},
	{Name: "kill", Summary: "kill a node's process (SIGKILL), as a crash would", Run: runKill},
	{Name: "pcap", Summary: "write a sample capture of a fabric's discovery, or decode a capture", Run: runPcap},
	{Name: "fault", Summary: "drop, corrupt or delay a link's frames in the kernel (eBPF); list and clear faults", Run: runFault},
	{Name: "link", Summary: "set a node's link down, up, or flap it", Run: runLink},
	{Name: "restart", Summary: "restart a node's process with the arguments it had", Run: runRestart},
	{Name: "add", Summary: "add nodes and links to a running fabric (hot-add a switch with hosts)", Run: runAdd},
	{Name: "fuzz", Summary: "send MADs built to break the agents, checking every node still answers", Run: runFuzz},
	{Name: "capture", Summary: "capture a port's frames, both directions, to an ERF pcap", Run: runCapture},
	{Name: "serve", Summary: "serve a live web page of a fabric: map, link states, utilization, timeline", Run: runServe},
	{Name: "metrics", Summary: "serve a fabric's port counters and states to Prometheus (/metrics)", Run: runMetrics},
	{Name: "export", Summary: "write a fabric for containerlab over several hosts: a topology per host, VXLAN links between them", Run: runExport},
	{Name: "sysfs", Summary: "write a fabric's HCAs as the kernel's sysfs class (class/infiniband) under a directory", Run: runSysfs},
	suites.Command,
	bench.Command,
}

// Commands returns the subcommand table.
func Commands() []cli.Command { return append([]cli.Command(nil), commands...) }

// Main runs the ibfab command line args (without the program name) and
// returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.Main("ibfab", commands, args, stdout, stderr)
}

// flagSet returns the FlagSet of ibfab's command cmd.
func flagSet(cmd string) *flag.FlagSet { return cli.FlagSet("ibfab", cmd) }

// help is what ibfab cmd -h prints.
func help(cmd, synopsis, desc string) cli.Help {
	return cli.Help{Prog: "ibfab", Cmd: cmd, Synopsis: synopsis, Desc: desc}
}

// parseFlags parses the flags of ibfab's command cmd (cli.ParseFlags).
func parseFlags(env *Env, fs *flag.FlagSet, cmd, synopsis, desc string, args []string, maxArgs int) (bool, error) {
	return cli.ParseFlags(env, fs, help(cmd, synopsis, desc), args, maxArgs)
}

// parseInterleaved parses flags around positional arguments
// (cli.ParseInterleaved).
func parseInterleaved(env *Env, fs *flag.FlagSet, cmd, synopsis, desc string, args []string) ([]string, bool, error) {
	return cli.ParseInterleaved(env, fs, help(cmd, synopsis, desc), args)
}

// parseInterspersed parses flags and positional arguments in any order
// (cli.ParseInterspersed).
func parseInterspersed(env *Env, fs *flag.FlagSet, cmd, synopsis, desc string, args []string) ([]string, bool, error) {
	return cli.ParseInterspersed(env, fs, help(cmd, synopsis, desc), args)
}
