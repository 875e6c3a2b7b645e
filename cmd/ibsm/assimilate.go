package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"ibfab/sm"
)

// The flags of change assimilation (package sm, assimilate.go): once the
// subnet is up, ibsm takes every change in as the thesis's chapters 5-7
// describe and prints each as a result with event "assimilation".
func addAssimilationFlags(fs *flag.FlagSet, cfg *sm.Config) {
	fs.TextVar(&cfg.Detect, "detect", sm.DetectBoth, "`how` changes are detected: trap, sweep or both")
	fs.Float64Var(&cfg.SweepFactor, "sweep-factor", 0,
		"time between sweeps as a multiple `F` of the last sweep's duration (1: back to back; 0: --sweep-interval)")
	fs.TextVar(&cfg.Discovery, "discovery", sm.DiscoveryPartial, "`kind` of discovery after a change: partial or full")
	fs.TextVar(&cfg.Distribution, "distribution", sm.DistCutDeps,
		"`strategy` of table distribution after a change: "+joinModes(sm.Distributions()))
	fs.BoolVar(&cfg.Provisional, "provisional", false, "after a change, PIRa's routes first, then FERa's on the same graph")
	fs.BoolVar(&cfg.PreBlock, "pre-block", true,
		"with cut-deps, block the cut nodes' forbidden turns once the subnet is up, so that a change blocks only those its graph adds (not with --once)")
	fs.BoolVar(&cfg.LIDActivation, "lid-activation", false, "send activation SMPs LID-routed")
}

// joinModes lists modes by name: "a, b, c".
func joinModes[M fmt.Stringer](modes []M) string {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = m.String()
	}
	return strings.Join(names, ", ")
}

// reportAssimilation prints one assimilation as text.
func reportAssimilation(w io.Writer, res *sm.Result) {
	state := "subnet up"
	if !res.SubnetUp {
		state = "subnet NOT up"
	}
	fmt.Fprintf(w, "assimilation (%s, %s discovery, %s): %s: %d switches, %d CAs, %d links\n",
		res.Trigger, res.Discovery, res.Distribution, state, res.Switches, res.HCAs, res.Links)
	for _, c := range res.Changes {
		fmt.Fprintf(w, "  change: %s\n", c)
	}
	if res.ProvisionalRouting != "" {
		fmt.Fprintf(w, "  routing %s then %s: %d then %d entries computed\n",
			res.ProvisionalRouting, res.Routing, res.ProvisionalEntries, res.EntriesComputed)
	} else if res.Routing != "" {
		fmt.Fprintf(w, "  routing %s: %d entries computed\n", res.Routing, res.EntriesComputed)
	}
	fmt.Fprintf(w, "  %d LFT entries changed, %d blocks sent", res.LFTEntriesChanged, res.LFTBlocks)
	if res.SL2VLSets > 0 || res.PortsDeactivated > 0 {
		fmt.Fprintf(w, ", %d SLtoVL sets, %d ports deactivated", res.SL2VLSets, res.PortsDeactivated)
	}
	fmt.Fprintln(w)
	if r := res.Partitions; r != nil {
		reportPartitionResult(w, r)
	}
	for _, p := range res.Phases {
		fmt.Fprintf(w, "  %-23s %10.3f ms %7d SMPs", p.Name, p.Ms, p.SMPs)
		if p.Retries > 0 || p.Timeouts > 0 {
			fmt.Fprintf(w, " (%d retries, %d timeouts)", p.Retries, p.Timeouts)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  %-23s %10.3f ms %7d SMPs\n", "total", res.MsTotal, res.SMPsTotal)
	if res.MsToConnectivity != nil {
		fmt.Fprintf(w, "  %-23s %10.3f ms\n", "to connectivity", *res.MsToConnectivity)
	}
	for _, x := range res.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", x)
	}
	if !res.SubnetUp {
		fmt.Fprintf(w, "  reason: %s\n", res.Reason)
	}
}
