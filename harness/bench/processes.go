package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/goal"
	"ibfab/internal/proccpu"
	"ibfab/nodeproc"
	"ibfab/sm"
	"ibfab/topologies"
)

// ProcessesReport is what ibfab bench scale --processes writes: a fat
// tree brought up as one process per node, what the processes cost, and
// the SMs and traffic on it (issue 34 part 2).
type ProcessesReport struct {
	Benchmark string `json:"benchmark"` // "scale-processes"
	Date      string `json:"date"`
	Quick     bool   `json:"quick"`
	CPUs      int    `json:"cpus"`
	Network   string `json:"network"`
	Nodes     int    `json:"nodes"`
	Switches  int    `json:"switches"`
	HCAs      int    `json:"hcas"`
	// UpS is ibfab up's time, to every link trained.
	UpS float64    `json:"up_s"`
	Pss PssSummary `json:"pss"`
	// IdleCores is the node processes' CPU over IdleWindowS as a share
	// of one core: before any SM (links trained, ports Down/Init) and
	// after ibsm brought the subnet up (every port Active).
	IdleWindowS     float64 `json:"idle_window_s"`
	IdleCoresBefore float64 `json:"idle_cores_before_sm"`
	IdleCoresAfter  float64 `json:"idle_cores_after_sm"`
	// IbsmMs is ibsm's first sweep (its own account), IbsmWallMs from
	// its start to that sweep's result.
	IbsmMs     float64        `json:"ibsm_sweep_ms"`
	IbsmWallMs float64        `json:"ibsm_wall_ms"`
	Traffic    TrafficSummary `json:"traffic"`
	// DownS is ibfab down's time and Left what it left (namespaces,
	// processes), which must be nothing.
	DownS float64  `json:"down_s"`
	Left  []string `json:"left,omitempty"`
	// OpenSM is OpenSM --once on a second bring-up of the same fabric.
	OpenSM *OpenSMRun `json:"opensm,omitempty"`
	Errors []string   `json:"errors,omitempty"`
	goal.Verdict
	ElapsedMs float64 `json:"elapsed_ms"`
}

// PssSummary is the node processes' proportional set size (shared pages
// split among the processes sharing them: the text of one binary counted
// once in all), read from /proc/PID/smaps_rollup.
type PssSummary struct {
	Processes int     `json:"processes"`
	MeanMiB   float64 `json:"mean_mib"`
	MaxMiB    float64 `json:"max_mib"`
	MaxNode   string  `json:"max_node"`
	TotalGiB  float64 `json:"total_gib"`
}

// TrafficSummary is every host sending Messages packets to one peer.
type TrafficSummary struct {
	Flows    int    `json:"flows"`
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	Lost     uint64 `json:"lost"`
}

// The goals of issue 34 part 2, for the 2,048-host fat tree.
const (
	processesPssGoalMiB = 4
	processesIdleGoal   = 0.10
	processesUpGoalS    = 60
	processesPackets    = 20  // per host, to its peer
	processesPPS        = 100 // each host's packets per second
)

// processesTopology is the fat tree --processes brings up: 64 leaves of
// 32 hosts and 32 spines (2,048 hosts, 2,144 processes), or 8 leaves of
// 8 hosts and 4 spines (64 hosts) for --quick.
func processesTopology(quick bool) (string, *topologies.Topology, error) {
	if quick {
		t, err := topologies.FatTree(8, 4, 8)
		return "fattree64", t, err
	}
	t, err := topologies.FatTree(64, 32, 32)
	return "fattree2048", t, err
}

// Processes runs the process-fabric scale benchmark.
func Processes(quick bool, prefix string, log io.Writer) *ProcessesReport {
	start := time.Now()
	rep := &ProcessesReport{Benchmark: "scale-processes", Date: start.UTC().Format(time.RFC3339), Quick: quick, CPUs: runtime.NumCPU()}
	name, topo, err := processesTopology(quick)
	if err != nil {
		rep.Errors = append(rep.Errors, err.Error())
		rep.Verdict = goal.Judge([]goal.Case{goal.Failed("processes", err)})
		return rep
	}
	rep.Network, rep.Nodes = name, topo.NumNodes()
	rep.Switches, rep.HCAs = topo.Count(topologies.Switch), topo.Count(topologies.CA)
	// Whole keepalive intervals: an idle fabric's work comes at their
	// grid points (docs/DESIGN.md §3), so a window of 2.5 of them reads
	// two or three.
	window := 3 * nodeproc.DefaultKeepalive
	if quick {
		window = nodeproc.DefaultKeepalive
	}
	rep.IdleWindowS = window.Seconds()
	if err := processesRun(rep, prefix+"p", topo, log); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
	osm, fail := opensmOnFabric(prefix+"po", topo, firstCA(topo), nil)
	if fail != nil {
		rep.Errors = append(rep.Errors, "opensm: "+fail.Error)
	}
	rep.OpenSM = osm
	fmt.Fprintf(log, "processes %s: %d processes up in %.1f s, Pss %.2f MiB mean (%.2f max, %s), idle %.3f/%.3f of a core, ibsm %.0f ms, traffic %d/%d, down %.1f s, left %v\n",
		name, rep.Pss.Processes, rep.UpS, rep.Pss.MeanMiB, rep.Pss.MaxMiB, rep.Pss.MaxNode, rep.IdleCoresBefore, rep.IdleCoresAfter,
		rep.IbsmMs, rep.Traffic.Received, rep.Traffic.Sent, rep.DownS, rep.Left)
	rep.Verdict = goal.Judge([]goal.Case{processesCase(rep)})
	rep.ElapsedMs = ms(time.Since(start))
	return rep
}

// processesCase judges the report against the goals; the quick size is
// judged by the same limits.
func processesCase(r *ProcessesReport) goal.Case {
	const n = "processes"
	if len(r.Errors) > 0 {
		return goal.Failed(n, errors.New(r.Errors[0]))
	}
	return goal.All(n,
		goal.AtMost(n, "up_s", r.UpS, 1, processesUpGoalS),
		goal.AtMost(n, "pss_mean_mib", r.Pss.MeanMiB, 1, processesPssGoalMiB),
		goal.AtMost(n, "idle_cores_after_sm", r.IdleCoresAfter, 1, processesIdleGoal),
		goal.AtMost(n, "idle_cores_before_sm", r.IdleCoresBefore, 1, processesIdleGoal),
		goal.AtMost(n, "traffic_lost", float64(r.Traffic.Lost), 1, 0),
		goal.AtLeast(n, "traffic_received", float64(r.Traffic.Received), float64(r.Traffic.Flows*processesPackets), 1),
		goal.AtMost(n, "left", float64(len(r.Left)), 1, 0))
}

// processesRun brings topo up as processes, measures them, runs ibsm and
// the traffic, and takes the fabric down, filling rep.
func processesRun(rep *ProcessesReport, name string, topo *topologies.Topology, log io.Writer) error {
	t0 := time.Now()
	f, err := up(name, topo, harness.UpOptions{Timeout: 10 * time.Minute})
	if err != nil {
		return err
	}
	rep.UpS = time.Since(t0).Seconds()
	fmt.Fprintf(log, "processes: %d nodes up in %.1f s\n", topo.NumNodes(), rep.UpS)
	downed := false
	defer func() {
		if !downed {
			_ = f.down()
		}
	}()
	st, err := f.status()
	if err != nil {
		return err
	}
	pids := map[string]int{}
	for _, n := range st.Nodes {
		pids[n.Name] = n.PID
	}
	if rep.Pss, err = pssOf(pids); err != nil {
		return err
	}
	window := time.Duration(rep.IdleWindowS * float64(time.Second))
	if rep.IdleCoresBefore, err = idleCores(pids, window); err != nil {
		return err
	}
	if err := processesSM(rep, f, firstCA(topo)); err != nil {
		return err
	}
	if rep.IdleCoresAfter, err = idleCores(pids, window); err != nil {
		return err
	}
	if rep.Traffic, err = pairTraffic(f); err != nil {
		return err
	}
	t1 := time.Now()
	downed = true
	if err := f.down(); err != nil {
		return fmt.Errorf("ibfab down: %w", err)
	}
	rep.DownS = time.Since(t1).Seconds()
	rep.Left = leftOf(f.Name, pids)
	return nil
}

// processesSM runs ibsm at node until its first sweep brings the subnet
// up, then stops it (the subnet stays as it set it).
func processesSM(rep *ProcessesReport, f *fabric, node string) error {
	t0 := time.Now()
	r, err := startSM(f, node, sm.Config{})
	if err != nil {
		return fmt.Errorf("ibsm: %w", err)
	}
	defer r.stop()
	for _, res := range r.since(0) {
		if res.Event == "sweep" && res.SubnetUp {
			rep.IbsmMs = res.MsTotal
			break
		}
	}
	rep.IbsmWallMs = ms(time.Since(t0))
	return nil
}

// pssOf sums and averages the Pss of the processes.
func pssOf(pids map[string]int) (PssSummary, error) {
	var s PssSummary
	var total uint64
	for node, pid := range pids {
		b, err := proccpu.Pss(pid)
		if err != nil {
			return s, fmt.Errorf("%s: %w", node, err)
		}
		total += b
		if mib := float64(b) / (1 << 20); mib > s.MaxMiB {
			s.MaxMiB, s.MaxNode = mib, node
		}
	}
	s.Processes = len(pids)
	if s.Processes > 0 {
		s.MeanMiB = float64(total) / float64(s.Processes) / (1 << 20)
	}
	s.TotalGiB = float64(total) / (1 << 30)
	return s, nil
}

// idleCores is the processes' CPU time over window, as a share of one
// core.
func idleCores(pids map[string]int, window time.Duration) (float64, error) {
	sum := func() (time.Duration, error) {
		var d time.Duration
		for node, pid := range pids {
			c, err := proccpu.Runtime(pid)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", node, err)
			}
			d += c
		}
		return d, nil
	}
	c0, err := sum()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	time.Sleep(window) // the measurement's window: nothing else to wait on
	c1, err := sum()
	if err != nil {
		return 0, err
	}
	return float64(c1-c0) / float64(time.Since(t0)), nil
}

// pairTraffic sends processesPackets packets from every host to its peer
// (hosts in pairs, the last of an odd count to the first) and counts what
// arrived.
func pairTraffic(f *fabric) (TrafficSummary, error) {
	hosts := f.hosts()
	lids, err := f.lids(hosts)
	if err != nil {
		return TrafficSummary{}, err
	}
	peer := func(i int) string {
		if j := i ^ 1; j < len(hosts) {
			return hosts[j]
		}
		return hosts[0]
	}
	ctx := context.Background()
	const id = 0x5ca1e
	for i, h := range hosts {
		_, err := harness.StartFlow(ctx, f.Name, h, nodeproc.FlowArgs{ID: id, DLID: lids[peer(i)], Payload: 256,
			RateBPS: processesPPS * (256 + 36) * 8, Messages: processesPackets})
		if err != nil {
			return TrafficSummary{}, fmt.Errorf("flow %s -> %s: %w", h, peer(i), err)
		}
	}
	s := TrafficSummary{Flows: len(hosts), Sent: uint64(len(hosts) * processesPackets)}
	deadline := time.Now().Add(time.Duration(2*processesPackets/processesPPS)*time.Second + 30*time.Second)
	for {
		got, err := receivedAll(ctx, f, hosts, lids, id)
		if err != nil {
			return s, err
		}
		s.Received = got
		if got >= s.Sent || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // polling the receivers' counters
	}
	s.Lost = s.Sent - min(s.Received, s.Sent)
	return s, nil
}

// receivedAll is how many packets of flow id every host received.
func receivedAll(ctx context.Context, f *fabric, hosts []string, lids map[string]uint16, id uint32) (uint64, error) {
	var total uint64
	for _, h := range hosts {
		rep, err := harness.Flows(ctx, f.Name, h, nodeproc.FlowsArgs{})
		if err != nil {
			return 0, fmt.Errorf("%s: %w", h, err)
		}
		for _, r := range rep.Received {
			if r.ID == id {
				total += r.Packets
			}
		}
	}
	return total, nil
}

// leftOf names what fabric's down left: its namespaces and any of pids
// still running.
func leftOf(fabric string, pids map[string]int) []string {
	var left []string
	if ns, err := fabricnet.Namespaces(fabric); err == nil {
		left = append(left, ns...)
	}
	for node, pid := range pids {
		if harness.IsNodeProcess(pid, fabric, node) {
			left = append(left, fmt.Sprintf("%s (pid %d)", node, pid))
		}
	}
	return left
}
