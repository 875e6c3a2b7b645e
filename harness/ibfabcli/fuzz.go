package ibfabcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"ibfab/fabricnet"
	"ibfab/harness/madfuzz"
)

const (
	fuzzSynopsis = "fuzz [--name N] [--from HCA] [--mads N | --quick] [--seed S] [--target NODE,...|all [--bystanders]] [--check-every N] [--frames] [--corpus FILE] [--out FILE]"
	fuzzDesc     = `
Sends MADs built to break the fabric's agents from an HCA's attach point:
directed-route SMPs of every attribute, valid and not, with modifiers out
of range; directed routes made wrong (hop counts past 63, hop pointers
past the count, loops, the return bit on the way out, ports no switch
has); LID-routed SMPs and GMPs of every class the fabric serves and some
it does not (LIDs from the SM, when one ran); bad versions and keys; RMPP
headers with random types, lengths and segment numbers; and mutations of
what it sent or of a capture's MADs (--corpus; SubnAdm ones to the
master SM). Every --check-every MADs a
NodeInfo Get by directed route must reach every node and, with an SM, the
SA must answer a ClassPortInfo Get; the run stops at the first that does
not answer and names the MADs sent before. A successful answer must have
zeros past its attribute's length. After the run every node process must
still run, none having grown its resident memory by more than 32 MiB or
its goroutines by more than 32, and the MADs no one answered must be
no more than the fabric's drop counters grew by (with what the HCAs
handed their own SMs and clients): silence no counter explains fails
the run. --bystanders runs a light flow among the
HCAs that --target leaves out (each to the next), which must lose no
packet. --frames sends the MADs as raw frames on --from's veth end
instead, each broken at the packet layer one way (bad LRH, BTH or DETH
fields, VL15 with a data QP, wrong ICRC or VCRC, runt, jumbo, junk; by
shape in by_frame), to the switch it is cabled to; the checks still go
through the attach point. --quick sends 10,000 MADs. The report (JSON, --out or standard
output) has the MADs per shape, the answers per status, the rate and any
failure; the exit status is 1 when a check failed or a process died.`
)

func runFuzz(env *Env, args []string) error {
	const cmd = "fuzz"
	fs := flagSet(cmd)
	name := fs.String("name", defaultName, "fabric `N`ame")
	from := fs.String("from", "", "the `HCA` to send from (default: the fabric's first)")
	mads := fs.Int("mads", 1_000_000, "`N` MADs to send")
	quick := fs.Bool("quick", false, "send 10,000 MADs")
	seed := fs.Uint64("seed", 1, "the generator's `seed`: the same seed sends the same MADs")
	target := fs.String("target", "all", "the `NODE`s to aim at, comma-separated, or all")
	every := fs.Int("check-every", 10_000, "`N` MADs between liveness checks")
	out := fs.String("out", "", "write the JSON report to `FILE`")
	corpus := fs.String("corpus", "", "a capture (`FILE`: ibfab pcap sample, ibfab capture) whose MADs mutations start from too")
	frames := fs.Bool("frames", false, "send the MADs as raw frames broken at the packet layer (bad LRH/BTH/DETH, VL15 with a data QP, bad ICRC/VCRC, runt, jumbo, junk) on --from's veth end")
	byst := fs.Bool("bystanders", false, "run traffic among the HCAs --target leaves out; every packet must arrive")
	if help, err := parseFlags(env, fs, cmd, fuzzSynopsis, fuzzDesc, args, 0); help || err != nil {
		return err
	}
	if err := fabricnet.CheckFabricName(*name); err != nil {
		return &UsageError{Cmd: cmd, Usage: fuzzSynopsis, Err: err}
	}
	if *quick {
		*mads = 10_000
	}
	if *mads <= 0 || *every <= 0 {
		return &UsageError{Cmd: cmd, Usage: fuzzSynopsis, Err: errors.New("--mads and --check-every must be positive")}
	}
	var targets []string
	if *target != "all" {
		targets = strings.Split(*target, ",")
	}
	var real [][]byte
	if *corpus != "" {
		var err error
		if real, err = readCorpus(*corpus); err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := madfuzz.Live(ctx, madfuzz.LiveConfig{Fabric: *name, From: *from, Targets: targets, MADs: *mads, Bystanders: *byst, Frames: *frames, Corpus: real,
		Seed: *seed, CheckEvery: *every, Progress: func(sent int, r *madfuzz.Report) {
			fmt.Fprintf(env.Stderr, "ibfab fuzz: %d MADs sent, %d answered, %d checks, %d failures\n", sent, r.Answered, r.Checks, len(r.Failures))
		}})
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	b = append(b, '\n')
	if *out != "" {
		err = os.WriteFile(*out, b, 0o644)
	} else {
		_, err = env.Stdout.Write(b)
	}
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	if !rep.Passed {
		return &CommandError{Cmd: cmd, Err: fmt.Errorf("%d failed checks, %d answers with reserved bytes set, %d bystander packets lost, %d unanswered MADs no drop counter explains, dead processes %v, RSS growth %d KiB (%s), goroutine growth %d (%s) (report: %s)",
			len(rep.Failures), rep.Dirty, rep.BystandersLost, unexplained(rep), rep.Dead, rep.RSSGrowth>>10, rep.RSSNode, rep.GoroutineGrowth, rep.GoroutineNode, reportWhere(*out))}
	}
	fmt.Fprintf(env.Stderr, "ibfab fuzz: %d MADs at %.0f/s, %d answered (%d judged, none dirty), %d checks passed, no process died, RSS grew %d KiB at most (%s), goroutines %d (%s)\n",
		rep.Sent, rep.MADsPerS, rep.Answered, rep.Judged, rep.Checks, rep.RSSGrowth>>10, rep.RSSNode, rep.GoroutineGrowth, rep.GoroutineNode)
	return nil
}

func readCorpus(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := madfuzz.ReadCorpus(f)
	if err != nil {
		return nil, fmt.Errorf("--corpus %s: %w", path, err)
	}
	return m, nil
}

func unexplained(r *madfuzz.LiveReport) uint64 {
	if r.Accounting == nil {
		return 0
	}
	return r.Accounting.Unexplained
}

func reportWhere(out string) string {
	if out == "" {
		return "standard output"
	}
	return out
}
