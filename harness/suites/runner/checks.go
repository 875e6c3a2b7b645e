package runner

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"ibfab/capture"
	"ibfab/harness"
)

// CaptureInfo is the capture a run took of one port around the steps.
type CaptureInfo struct {
	Port   string  `json:"port"`
	File   string  `json:"file"`
	Frames int     `json:"frames"`
	From   float64 `json:"from"` // seconds since the traffic started
	To     float64 `json:"to"`
	Error  string  `json:"error,omitempty"`
}

var portRE = regexp.MustCompile(`^([^\[\]]+)\[([0-9]+)\]$`)

// StartCapture captures s.Capture to capture.pcap in the report directory
// and returns the function that stops it.
func (r *SuiteRun) StartCapture(ctx context.Context) (stop func()) {
	m := portRE.FindStringSubmatch(r.s.Capture)
	if r.o.Out == "" || m == nil {
		return func() {}
	}
	port, _ := strconv.Atoi(m[2])
	info := &CaptureInfo{Port: r.s.Capture, File: "capture.pcap", From: time.Since(r.t0).Seconds()}
	r.rep.Capture = info
	c, err := harness.OpenCapture(r.fabric, m[1], port)
	if err != nil {
		info.Error = err.Error()
		return func() {}
	}
	f, err := os.Create(filepath.Join(r.o.Out, info.File))
	if err != nil {
		c.Close()
		info.Error = err.Error()
		return func() {}
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := capture.NewWriter(bw)
	if err != nil {
		c.Close()
		f.Close()
		info.Error = err.Error()
		return func() {}
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err := c.Run(cctx, w, 0)
		info.Frames = n
		if err != nil {
			info.Error = err.Error()
		}
	}()
	return func() {
		cancel()
		<-done
		info.To = time.Since(r.t0).Seconds()
		c.Close()
		if err := bw.Flush(); err != nil && info.Error == "" {
			info.Error = err.Error()
		}
		f.Close()
	}
}

// finalChecks decides the run: a and b bound the survivors' steady traffic.
func (r *SuiteRun) finalChecks(ctx context.Context, hosts, survivors []string, dead map[string]bool, a, b Sample) {
	r.checkConnected(hosts, survivors, a, b)
	r.checkLoss()
	r.checkVerifier()
	r.checkProcesses(ctx, dead)
	if r.s.StayActive {
		r.checkStayedActive()
	}
}

// checkConnected: every packet a survivor sent to a survivor arrived,
// every survivor heard from the others, nothing was dropped.
func (r *SuiteRun) checkConnected(hosts, survivors []string, a, b Sample) {
	var deaf []string
	for _, h := range survivors {
		if b.HostRx[h] == a.HostRx[h] {
			deaf = append(deaf, h)
		}
	}
	w := r.rep.Steady
	r.rep.check("survivors connected", len(survivors) > 1 && w.Sent > 0 && w.Lost == 0 && len(DataDrops(w.Drops)) == 0 && len(deaf) == 0,
		"%d of %d hosts: %d packets sent, %d received, data drops: %s; hosts that heard nothing: %v",
		len(survivors), len(hosts), w.Sent, w.Received, Causes(DataDrops(w.Drops)), deaf)
}

// checkLoss: no loss while the steps acted, unless a link or node died,
// and then only packets that went to it.
func (r *SuiteRun) checkLoss() {
	s, rep, f := r.s, r.rep, r.rep.Fault
	// A link or node that dies loses what was on its way to it; a node
	// that comes (back) makes the SM change tables, which may drop a few
	// packets at deactivated ports or U-turns (the thesis's residue).
	died := slices.ContainsFunc(s.Steps, func(st Step) bool {
		return st.Kind == LinkDown || st.Kind == LinkFlap || st.Kind == KillNode
	})
	came := slices.ContainsFunc(s.Steps, func(st Step) bool { return st.Kind == AddPiece || st.Kind == Restart })
	if !died && !came {
		rep.check("no data lost", f.Lost == 0 && len(DataDrops(f.Drops)) == 0, "%d sent, %d received, data drops: %s (VL15: %d)",
			f.Sent, f.Received, Causes(DataDrops(f.Drops)), f.Drops[vl15Cause])
		return
	}
	allowed := lossCauses
	if slices.Contains(s.SMArgs, "cut-deps") {
		// cut-deps' protection: a turn the new graph forbids drops
		// what the old tables still send across it.
		allowed = append(slices.Clone(lossCauses), "vl_mapping")
	}
	var other []string
	var where uint64
	for c, v := range DataDrops(f.Drops) {
		if slices.Contains(allowed, c) {
			where += v
		} else {
			other = append(other, fmt.Sprintf("%s %d", c, v))
		}
	}
	sort.Strings(other)
	name := "data lost only where a link died"
	if !died {
		name = "data lost only to the table change"
	}
	rep.check(name, len(other) == 0,
		"%d sent, %d received, %d lost; %d dropped for the failure (%s); other data drops: %v; VL15: %d",
		f.Sent, f.Received, f.Lost, where, strings.Join(allowed, ", "), other, f.Drops[vl15Cause])
}

// checkVerifier: every route set ibsm computed was checked and found
// deadlock-free, and each ibsm ended with the subnet up. A sweep that
// failed for want of answers (SMPs lost, as in vl15-loss) is no verifier
// failure: the next one starts over.
func (r *SuiteRun) checkVerifier() {
	if r.smKind() != SMIbsm {
		r.rep.skip("verifier holds", "OpenSM reports no verified route sets and the intermediate states of its sweeps are not observable; "+
			"what applies is checked: every port as expected and OpenSM's last heavy sweep ending in SUBNET UP (restored), survivors connected, processes alive")
		return
	}
	var bad []string
	var n int
	r.mu.Lock()
	for _, p := range r.sms {
		rs := p.Results()
		for _, x := range rs {
			n++
			if x.LFTEntries > 0 && !x.DeadlockFree {
				bad = append(bad, fmt.Sprintf("%s %d: deadlock-free false, problems %v", x.Event, x.Sweep, x.Problems))
			}
		}
		if len(rs) > 0 && !rs[len(rs)-1].SubnetUp {
			bad = append(bad, fmt.Sprintf("last result: subnet not up: %s", rs[len(rs)-1].Reason))
		}
	}
	r.mu.Unlock()
	r.rep.check("verifier holds", len(bad) == 0 && n > 0, "%d ibsm results; failing: %v", n, bad)
}

// checkProcesses: the nodes that should run do, the others are dead as
// planned, the SM runs; with StableLIDs, no node's LID moved.
func (r *SuiteRun) checkProcesses(ctx context.Context, dead map[string]bool) {
	rep := r.rep
	st, err := harness.Status(ctx, r.fabric)
	if err != nil {
		rep.check("processes alive", false, "%v", err)
		return
	}
	var wrong []string
	for _, n := range st.Nodes {
		if n.Alive == dead[n.Name] {
			wrong = append(wrong, fmt.Sprintf("%s alive %v", n.Name, n.Alive))
		}
	}
	if p := r.SM(); !p.Alive() {
		wrong = append(wrong, p.kind.String()+" not running: "+LastLines(p.Stderr(), 3))
	}
	rep.check("processes alive", len(wrong) == 0, "%d nodes, %d dead as planned %v; wrong: %v", len(st.Nodes), len(dead), Keys(dead), wrong)
	if !r.s.StableLIDs {
		return
	}
	var moved []string
	for _, n := range st.Nodes {
		for _, p := range n.Ports {
			if p.LID != 0 {
				if int(p.LID) != rep.LIDs[n.Name] {
					moved = append(moved, fmt.Sprintf("%s %d→%d", n.Name, rep.LIDs[n.Name], p.LID))
				}
				break
			}
		}
	}
	rep.check("LIDs stable", len(moved) == 0, "%d nodes; moved: %v", len(rep.LIDs), moved)
}

// checkStayedActive: every sample of the ports found them all Active.
func (r *SuiteRun) checkStayedActive() {
	var first string
	for _, x := range r.smp.Samples() {
		if len(x.NotActive) > 0 {
			first = fmt.Sprintf("at %.2f s: %s", x.T, strings.Join(x.NotActive, ", "))
			break
		}
	}
	r.rep.check("fabric stayed Active", first == "", "%d samples; first not Active: %s", len(r.smp.Samples()), first)
}

// vl15Cause is the drop cause of VL15 alone: SMPs and traps, not data.
const vl15Cause = "vl15_overflow"

// DataDrops returns the drops that can be data packets.
func DataDrops(m map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for c, v := range m {
		if c != vl15Cause {
			out[c] = v
		}
	}
	return out
}

// Keys returns m's keys, sorted.
func Keys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
