// Package bench holds ibfab's measurement programs, the subcommands of
// ibfab bench: each brings up real fabrics (and ibsim, and OpenSM), prints
// its progress on standard error and one JSON document of typed figures on
// standard output (and to --out), and judges its goal with package goal:
// met only when every case was measured and met.
package bench

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"ibfab/internal/cli"
)

// Command is ibfab's bench subcommand (cmd/ibfab registers it).
var Command = cli.Command{
	Name:    "bench",
	Summary: "measure fabrics, OpenSM, change assimilation, a hot spot or ibsm against OpenSM; JSON out (needs root)",
	Run:     run,
}

const synopsis = "bench fabric|opensm|assimilation|hotspot|sm|scale [flags]"

// benchmark is one subcommand of bench.
type benchmark struct {
	name, synopsis, desc string
	// flags adds the benchmark's own flags to fs; the returned function
	// runs it, after parsing, and returns its report and whether a run
	// failed.
	flags func(fs *flag.FlagSet, c *common) func() (report any, failed bool, err error)
}

// common are every benchmark's flags.
type common struct {
	out   string
	quick bool
	name  string
	log   io.Writer
}

var benchmarks = []benchmark{fabricBench, opensmBench, assimilationBench, hotspotBench, smBench, scaleBench}

func run(env *cli.Env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintf(env.Stdout, "usage: ibfab %s\n\nbenchmarks:\n", synopsis)
			for _, b := range benchmarks {
				fmt.Fprintf(env.Stdout, "  %-13s %s\n", b.name, firstLine(b.desc))
			}
			return nil
		}
		return &cli.UsageError{Cmd: "bench", Usage: synopsis, Err: errors.New("missing benchmark")}
	}
	for _, b := range benchmarks {
		if b.name == args[0] {
			return runOne(env, b, args[1:])
		}
	}
	return &cli.UsageError{Cmd: "bench", Usage: synopsis, Err: fmt.Errorf("unknown benchmark %q", args[0])}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func runOne(env *cli.Env, b benchmark, args []string) error {
	cmd := "bench " + b.name
	fs := flag.NewFlagSet("ibfab "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &common{log: env.Stderr}
	fs.StringVar(&c.out, "out", "", "also write the JSON report to `FILE`")
	fs.BoolVar(&c.quick, "quick", false, "small sizes and one run each, about a minute")
	fs.StringVar(&c.name, "name", "bench", "prefix of the fabrics' names")
	runIt := b.flags(fs, c)
	usage := func(err error) error { return &cli.UsageError{Cmd: cmd, Usage: b.synopsis, Err: err} }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(env.Stdout, "usage: ibfab %s\n\n%s\n\nflags:\n", b.synopsis, strings.TrimSpace(b.desc))
			fs.SetOutput(env.Stdout)
			fs.PrintDefaults()
			return nil
		}
		return usage(err)
	}
	if fs.NArg() > 0 {
		return usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if c.name == "" || strings.ContainsAny(c.name, "/ ") {
		return usage(fmt.Errorf("--name %q: want a plain fabric name", c.name))
	}
	rep, failed, err := runIt()
	if err != nil {
		var ue *cli.UsageError
		if errors.As(err, &ue) {
			return err
		}
		return &cli.CommandError{Cmd: cmd, Err: err}
	}
	if err := emit(env.Stdout, c.out, rep); err != nil {
		return &cli.CommandError{Cmd: cmd, Err: err}
	}
	if failed {
		return &cli.CommandError{Cmd: cmd, Err: errors.New("a run failed; the report says which and why")}
	}
	return nil
}

// requireRoot is checked once the flags are: every benchmark brings
// fabrics up in network namespaces.
func requireRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("brings fabrics up in network namespaces: run it as root")
	}
	return nil
}

// emit prints rep as indented JSON and writes it to out too, if given.
func emit(stdout io.Writer, out string, rep any) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := stdout.Write(b); err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	return writeFile(out, b)
}

// writeFile writes b to path, making its directory.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// intList parses a comma-separated list of positive integers; "" and
// "none" are none.
type intList []int

func (l *intList) String() string {
	var s []string
	for _, n := range *l {
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	*l = nil
	if v == "" || v == "none" {
		return nil
	}
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%q: want positive integers, comma-separated", v)
		}
		*l = append(*l, n)
	}
	return nil
}

// positive checks a count flag.
func positive(name string, n int) error {
	if n < 1 {
		return fmt.Errorf("--%s %d: want at least 1", name, n)
	}
	return nil
}

var assimilationBench = benchmark{
	name:     "assimilation",
	synopsis: "bench assimilation [--sizes 8,16,32] [--fattree 0|144|432] [--runs N] [--configs goal|all] [--probe-interval D] [--quick] [--out FILE] [--name PREFIX]",
	desc: `ibsm's change assimilation against OpenSM's reaction to the same faults.
On irregular networks (and a fat tree with --fattree), each SM in turn, at
the first switch's host, meets a link cut between two switches and the kill
of a switch with hosts. The time to restored connectivity is measured from
the data plane, the same way for both SMs: periodic probes between pairs
of surviving hosts (every pair on small fabrics), from the fault until every
pair delivers again; the SMs' own accounts are kept beside it. Goal: ibsm
with partial discovery and provisional routes restores the data plane in
at most 0.2 of OpenSM's time on every fault. --quick: irregular8, one run,
the goal configuration only.`,
	flags: func(fs *flag.FlagSet, c *common) func() (any, bool, error) {
		sizes := intList{8, 16, 32}
		fs.Var(&sizes, "sizes", "irregular networks of these many switches, one host each (comma-separated; none for none)")
		fat := fs.Int("fattree", 0, "add a fat tree of 144 or 432 hosts (0: none)")
		runs := fs.Int("runs", 3, "runs of each SM against each fault (medians reported)")
		configs := fs.String("configs", "all", "ibsm configurations: goal (partial discovery, provisional routes) or all four (partial/full × provisional or not)")
		interval := fs.Duration("probe-interval", 0, "each probed pair hears from its sender this often; an outage is five of them (default 10ms, 20ms with --quick)")
		return func() (any, bool, error) {
			o := AssimilationOptions{Sizes: sizes, FatTree: *fat, Runs: *runs, Prefix: c.name + "a", Quick: c.quick, Log: c.log, ProbeInterval: *interval}
			if err := positive("runs", *runs); err != nil {
				return nil, false, &cli.UsageError{Cmd: "bench assimilation", Usage: "bench assimilation -h", Err: err}
			}
			if *interval != 0 && (*interval < time.Millisecond || *interval > time.Second) {
				return nil, false, &cli.UsageError{Cmd: "bench assimilation", Usage: "bench assimilation -h", Err: fmt.Errorf("--probe-interval %v: want 1ms to 1s", *interval)}
			}
			switch *configs {
			case "all":
				o.Configs = allConfigs
			case "goal":
				o.Configs = []ibsmConfig{goalConfig}
			default:
				return nil, false, &cli.UsageError{Cmd: "bench assimilation", Usage: "bench assimilation -h", Err: fmt.Errorf("--configs %q: want goal or all", *configs)}
			}
			switch *fat {
			case 0, 144, 432:
			default:
				return nil, false, &cli.UsageError{Cmd: "bench assimilation", Usage: "bench assimilation -h", Err: fmt.Errorf("--fattree %d: want 0, 144 or 432", *fat)}
			}
			if c.quick {
				o.Sizes, o.FatTree, o.Runs, o.Configs = []int{8}, 0, 1, []ibsmConfig{goalConfig}
			}
			if len(o.Sizes) == 0 && o.FatTree == 0 {
				return nil, false, &cli.UsageError{Cmd: "bench assimilation", Usage: "bench assimilation -h", Err: errors.New("no network: --sizes none and no --fattree")}
			}
			if err := requireRoot(); err != nil {
				return nil, false, err
			}
			checkpoint := func(r *AssimilationReport) {
				if c.out != "" {
					b, _ := json.MarshalIndent(r, "", "  ")
					writeFile(c.out, append(b, '\n')) // a later network's failure keeps this one's figures
				}
			}
			rep := Assimilation(o, checkpoint)
			return rep, assimilationFailed(rep), nil
		}
	},
}

// assimilationFailed reports whether a network or a run failed.
func assimilationFailed(rep *AssimilationReport) bool {
	for _, f := range rep.Fabrics {
		if f.Error != "" {
			return true
		}
		for _, ft := range f.Faults {
			sides := []SMSide{ft.OpenSM}
			for _, s := range ft.IBSM {
				sides = append(sides, s.SMSide)
			}
			for _, s := range sides {
				if runErrors(s.Runs) != "" {
					return true
				}
			}
		}
	}
	return false
}
