package main

// ibsm arbtable-bench: the evaluation of the VL arbitration-table
// management models (sm/arbtable/arbbench), after the report that
// proposed them.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"ibfab/internal/cli"
	"ibfab/sm/arbtable"
	"ibfab/sm/arbtable/arbbench"
)

const arbSynopsis = `usage: ibsm arbtable-bench [--ops N | --quick] [--models 1,2,3,4] [--size 64] [--seed S] [--threshold D] [--out DIR]`

// parseArbBench reads the flags into a bench configuration and an output
// directory ("" for none).
func parseArbBench(args []string, stderr io.Writer) (arbbench.Config, string, error) {
	c := arbbench.Config{Threshold: arbbench.DefaultThreshold}
	var out string
	var quick bool
	fs := flag.NewFlagSet("ibsm arbtable-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nflags:\n", arbSynopsis)
		fs.PrintDefaults()
	}
	fs.IntVar(&c.Ops, "ops", arbbench.DefaultOps, "random operations per model")
	fs.BoolVar(&quick, "quick", false, fmt.Sprintf("%d operations per model (a smoke run)", arbbench.QuickOps))
	models := modelList(arbtable.Models)
	fs.TextVar(&models, "models", modelList(arbtable.Models), "the `models` to run, comma-separated (1-3 the report's, 4 best fit with defragmentation after deletion)")
	fs.IntVar(&c.Size, "size", arbbench.DefaultSize, "table entries, a power of two 4..64")
	fs.Uint64Var(&c.Seed, "seed", 1, "the workload's random seed")
	fs.DurationVar(&c.Threshold, "threshold", arbbench.DefaultThreshold, "drop timed samples above this")
	fs.StringVar(&out, "out", "", "directory for arbtable.json, report.md and the histograms")
	if err := fs.Parse(args); err != nil {
		return c, "", err
	}
	if fs.NArg() > 0 {
		return c, "", fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if quick {
		if flagSet(fs, "ops") {
			return c, "", fmt.Errorf("--quick and --ops both given")
		}
		c.Ops = arbbench.QuickOps
	}
	c.Models = models
	return c, out, c.Validate()
}

// flagSet reports whether the command line gave the named flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// modelList is --models: models comma-separated, each as
// arbtable.Model's UnmarshalText reads it ("1,2,3,4" or "M1,M2").
type modelList []arbtable.Model

// MarshalText writes the models' numbers, comma-separated.
func (l modelList) MarshalText() ([]byte, error) {
	var b []byte
	for i, m := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(m), 10)
	}
	return b, nil
}

// UnmarshalText reads the models, comma-separated.
func (l *modelList) UnmarshalText(text []byte) error {
	var ms modelList
	for f := range strings.SplitSeq(string(text), ",") {
		var m arbtable.Model
		if err := m.UnmarshalText([]byte(strings.TrimSpace(f))); err != nil {
			return err
		}
		ms = append(ms, m)
	}
	*l = ms
	return nil
}

func runArbBench(args []string, stdout, stderr io.Writer) int {
	c, out, err := parseArbBench(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return cli.BadArgs(stderr, "ibsm arbtable-bench", err, arbSynopsis)
	}
	rep, err := arbbench.Run(c)
	if err != nil {
		fmt.Fprintf(stderr, "ibsm arbtable-bench: %v\n", err)
		return exitFailure
	}
	printHeadline(stdout, rep)
	if out != "" {
		files, err := arbbench.Write(rep, out)
		if err != nil {
			fmt.Fprintf(stderr, "ibsm arbtable-bench: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "wrote %d files to %s\n", len(files), out)
	}
	return exitOK
}

// printHeadline is the run in a few lines: per model, then the ratios.
func printHeadline(w io.Writer, rep *arbbench.Report) {
	c := rep.Config
	fmt.Fprintf(w, "arbtable-bench: %d ops/model, %d entries, seed %d, threshold %v, %v\n",
		c.Ops, c.Size, c.Seed, c.Threshold, time.Duration(rep.ElapsedMs*float64(time.Millisecond)).Round(time.Millisecond))
	for _, r := range rep.Models {
		ops := float64(r.Ops) / 100
		fmt.Fprintf(w, "%s: ins %.1f%% fail %.1f%% del %.1f%%; exchanges/op %.4f (after ins %.4f, after del %.4f); mean op %.0f ns; dropped %.3f%%\n",
			r.Model, float64(r.Inserted)/ops, float64(r.Rejected)/ops, float64(r.Deleted)/ops,
			r.ExchangesPerOp, r.ExchangesAfterInsertionPerOp, r.ExchangesAfterDeletionPerOp, r.MeanOpNs, r.DroppedPct)
	}
	for _, r := range rep.Ratios {
		paper := "ours only"
		if r.Paper > 0 {
			paper = fmt.Sprintf("report %.4g, agrees %v", r.Paper, r.Agrees)
		}
		fmt.Fprintf(w, "  %s: %.4g (%s)\n", r.Name, r.Ours, paper)
	}
}
