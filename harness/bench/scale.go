package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/cli"
	"ibfab/internal/goal"
	"ibfab/internal/ibsimrun"
	"ibfab/internal/opensmrun"
	"ibfab/internal/proccpu"
	"ibfab/topologies"
)

// ScaleReport is what ibfab bench scale writes: OpenSM -R ftree --once
// on the management plane (ibfab up --plane mgmt) against ibsim with its
// limits raised, on the same topologies.
type ScaleReport struct {
	Benchmark string      `json:"benchmark"` // "scale"
	Date      string      `json:"date"`
	Quick     bool        `json:"quick"`
	CPUs      int         `json:"cpus"`
	Cases     []ScaleCase `json:"cases"`
	Notes     []string    `json:"notes"`
	goal.Verdict
	ElapsedMs float64 `json:"elapsed_ms"`
}

// ScaleCase is one topology on both sides.
type ScaleCase struct {
	Network  string    `json:"network"`
	Nodes    int       `json:"nodes"`
	Switches int       `json:"switches"`
	HCAs     int       `json:"hcas"`
	Plane    ScaleSide `json:"plane"`
	Ibsim    ScaleSide `json:"ibsim"`
	// Ratio is plane / ibsim: ms_to_up and bytes_per_node.
	Ratio map[string]float64 `json:"ratio,omitempty"`
}

// ScaleSide is one side's run.
type ScaleSide struct {
	MsToUp float64 `json:"ms_to_up"`
	// OpenSM's phases from its log: discovery (DISCOVERING to MASTER),
	// routing (to "tables configured": the routes computed and the LFTs
	// sent) and the rest (to SUBNET UP: multicast, port states, SA).
	MsDiscovery float64 `json:"ms_discovery"`
	MsRouting   float64 `json:"ms_routing"`
	MsRest      float64 `json:"ms_rest"`
	OpenSMCPUMs float64 `json:"opensm_cpu_ms"`
	// The server (ibmgmt or ibsim): its peak resident memory, per node,
	// and its CPU time over the run.
	ServerPeakBytes uint64  `json:"server_peak_bytes"`
	BytesPerNode    float64 `json:"bytes_per_node"`
	ServerCPUMs     float64 `json:"server_cpu_ms"`
	Error           string  `json:"error,omitempty"`
}

var scaleNets = []network{
	{"ktree8x3", func() (*topologies.Topology, error) { return topologies.KAryNTree(8, 3) }},
	{"fattree2080", func() (*topologies.Topology, error) { return topologies.FatTree(64, 32, 31) }},
	{"ktree20x3", func() (*topologies.Topology, error) { return topologies.KAryNTree(20, 3) }},
	{"ktree12x4", func() (*topologies.Topology, error) { return topologies.KAryNTree(12, 4) }},
}

// The goals of issue 34: OpenSM up in at most half ibsim's time, in no
// more memory per node.
const (
	scaleTimeGoal   = 0.5
	scaleMemoryGoal = 1.0
)

var scaleBench = benchmark{
	name:     "scale",
	synopsis: "bench scale [--nets ktree8x3,fattree2080,ktree20x3,ktree12x4 | --processes] [--quick] [--out FILE] [--name PREFIX]",
	desc: `OpenSM -R ftree --once to SUBNET UP on the management plane (ibfab up
--plane mgmt, through the umad shim) and on ibsim with its limits raised
(-N, -S, -P, -L; through libumad2sim), on the same topologies, one after
the other: the time to SUBNET UP and OpenSM's phases from its log, and
the server's peak memory per node. Goal: the plane's time at most 0.5 of
ibsim's and its memory per node at most ibsim's, in every case.
--quick: ktree8x3 (704 nodes).

--processes measures the process fabric instead: a fat tree of 64
leaves of 32 hosts and 32 spines (2,048 hosts, 2,144 processes; --quick:
8 leaves of 8 hosts, 4 spines) brought up by ibfab up; its time to every
link trained, each node process's Pss (/proc/PID/smaps_rollup), the
processes' CPU when idle before and after an SM, ibsm's first sweep,
every host sending 20 packets to one peer, ibfab down's time and what it
left; then OpenSM --once on a second bring-up. Goals: up in at most 60 s,
Pss at most 4 MiB per process on average, idle under 0.1 of a core,
every packet delivered, nothing left.`,
	flags: func(fs *flag.FlagSet, c *common) func() (any, bool, error) {
		nets := fs.String("nets", "ktree8x3,fattree2080,ktree20x3,ktree12x4", "networks (comma-separated)")
		procs := fs.Bool("processes", false, "measure a fat tree of node processes instead (2,048 hosts; --quick 64)")
		return func() (any, bool, error) {
			if *procs {
				if err := requireRoot(); err != nil {
					return nil, false, err
				}
				rep := Processes(c.quick, c.name+"s", c.log)
				return rep, len(rep.Errors) > 0, nil
			}
			list, err := pickNets(scaleNets, *nets)
			if err != nil {
				return nil, false, &cli.UsageError{Cmd: "bench scale", Usage: "bench scale -h", Err: err}
			}
			if c.quick {
				list = scaleNets[:1]
			}
			if err := requireRoot(); err != nil {
				return nil, false, err
			}
			rep := Scale(list, c.quick, c.name+"s", c.log)
			failed := slices.ContainsFunc(rep.Cases, func(sc ScaleCase) bool { return sc.Plane.Error != "" || sc.Ibsim.Error != "" })
			return rep, failed, nil
		}
	},
}

// pickNets returns the networks names lists, in its order.
func pickNets(all []network, names string) ([]network, error) {
	var list []network
	for _, name := range strings.Split(names, ",") {
		i := slices.IndexFunc(all, func(n network) bool { return n.name == strings.TrimSpace(name) })
		if i < 0 {
			var have []string
			for _, n := range all {
				have = append(have, n.name)
			}
			return nil, fmt.Errorf("--nets: no network %q (have %s)", name, strings.Join(have, ", "))
		}
		list = append(list, all[i])
	}
	return list, nil
}

var scaleNotes = []string{
	"OpenSM runs with -R ftree --once, a fresh cache directory, at the topology's first CA: on the management plane through ibfab's umad shim (exec --umad), on ibsim through libumad2sim. The plane and ibsim are brought up fresh for each case; their start is not timed.",
	"ms_to_up: from the exec to OpenSM's SUBNET UP line; the phases from its log: discovery (Entering DISCOVERING to Entering MASTER), routing (to 'tables configured', the LFTs sent), rest (to SUBNET UP).",
	"server_peak_bytes: VmHWM of ibmgmt or ibsim after the run; bytes_per_node divides it by the nodes. server_cpu_ms: its CPU time from start to after the run.",
	"Both sides share the machine with OpenSM, whose own CPU time (opensm_cpu_ms) bounds how fast either can be.",
}

// Scale runs the scale benchmark on nets.
func Scale(nets []network, quick bool, prefix string, log io.Writer) *ScaleReport {
	start := time.Now()
	rep := &ScaleReport{Benchmark: "scale", Date: start.UTC().Format(time.RFC3339), Quick: quick, CPUs: runtime.NumCPU(), Notes: scaleNotes}
	var cases []goal.Case
	for _, n := range nets {
		c := ScaleCase{Network: n.name}
		topo, err := n.make()
		if err != nil {
			c.Plane.Error, c.Ibsim.Error = err.Error(), err.Error()
		} else {
			c.Nodes, c.Switches, c.HCAs = topo.NumNodes(), topo.Count(topologies.Switch), topo.Count(topologies.CA)
			c.Plane = scaleOnPlane(prefix, topo)
			c.Ibsim = scaleOnIbsim(topo)
		}
		fmt.Fprintf(log, "scale %s (%d nodes): plane up in %.0f ms, %.0f B/node; ibsim %.0f ms, %.0f B/node%s%s\n", n.name, c.Nodes,
			c.Plane.MsToUp, c.Plane.BytesPerNode, c.Ibsim.MsToUp, c.Ibsim.BytesPerNode, errNote(" plane: ", c.Plane.Error), errNote(" ibsim: ", c.Ibsim.Error))
		cases = append(cases, scaleCase(&c))
		rep.Cases = append(rep.Cases, c)
	}
	rep.Verdict = goal.Judge(cases)
	rep.ElapsedMs = ms(time.Since(start))
	return rep
}

func errNote(prefix, err string) string {
	if err == "" {
		return ""
	}
	return prefix + err
}

// scaleCase fills c's ratios and judges it.
func scaleCase(c *ScaleCase) goal.Case {
	if c.Plane.Error != "" || c.Ibsim.Error != "" {
		return goal.Failed(c.Network, fmt.Errorf("plane: %q, ibsim: %q", c.Plane.Error, c.Ibsim.Error))
	}
	c.Ratio = map[string]float64{}
	for k, ab := range map[string][2]float64{"ms_to_up": {c.Plane.MsToUp, c.Ibsim.MsToUp},
		"bytes_per_node": {c.Plane.BytesPerNode, c.Ibsim.BytesPerNode}} {
		if r, ok := goal.Ratio(ab[0], ab[1]); ok {
			c.Ratio[k] = r
		}
	}
	return goal.All(c.Network,
		goal.AtMost(c.Network, "ms_to_up", c.Plane.MsToUp, c.Ibsim.MsToUp, scaleTimeGoal),
		goal.AtMost(c.Network, "bytes_per_node", c.Plane.BytesPerNode, c.Ibsim.BytesPerNode, scaleMemoryGoal))
}

// scaleOnPlane runs OpenSM on topo's management plane.
func scaleOnPlane(prefix string, topo *topologies.Topology) ScaleSide {
	name := prefix + strconv.Itoa(topo.NumNodes())
	f, err := up(name, topo, harness.UpOptions{Plane: harness.PlaneMgmt, Timeout: 10 * time.Minute})
	if err != nil {
		return ScaleSide{Error: err.Error()}
	}
	defer f.down()
	sm := firstCA(topo)
	ns, env, err := harness.ExecEnv(name, sm, harness.ExecOptions{UMAD: harness.UMADShim})
	if err != nil {
		return ScaleSide{Error: err.Error()}
	}
	// The plane's one process, found by its namespace: a status call
	// would make it render every node, and count that in its peak.
	pids, err := fabricnet.Processes([]string{ns})
	if err != nil || len(pids) != 1 {
		return ScaleSide{Error: fmt.Sprintf("the plane's process in %s: %v %v", ns, pids, err)}
	}
	return scaleRun(ns, env, pids[0], topo.NumNodes())
}

// scaleOnIbsim runs OpenSM on ibsim loaded with topo.
func scaleOnIbsim(topo *topologies.Topology) ScaleSide {
	dir, err := os.MkdirTemp("", "ibfab-bench-scale-")
	if err != nil {
		return ScaleSide{Error: err.Error()}
	}
	defer os.RemoveAll(dir)
	sim, err := ibsimrun.StartLarge(topo, dir)
	if err != nil {
		return ScaleSide{Error: err.Error()}
	}
	defer sim.Close()
	env, err := ibsimrun.DiagEnv()
	if err != nil {
		return ScaleSide{Error: err.Error()}
	}
	return scaleRun(sim.NS, env, sim.PID(), topo.NumNodes())
}

// scaleRun runs OpenSM -R ftree --once in ns and reads the server's
// (pid's) memory and CPU after it.
func scaleRun(ns string, env []string, pid, nodes int) ScaleSide {
	dir, err := os.MkdirTemp("", "ibfab-bench-scale-osm-")
	if err != nil {
		return ScaleSide{Error: err.Error()}
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	r, err := opensmrun.Once(ctx, opensmrun.Options{NS: ns, Env: env, Dir: dir, Args: []string{"-R", "ftree"}})
	if err != nil {
		return ScaleSide{Error: err.Error()}
	}
	s := ScaleSide{MsToUp: r.MsToUp, OpenSMCPUMs: r.CPUMs}
	if b, err := os.ReadFile(filepath.Join(dir, "opensm.log")); err == nil {
		s.MsDiscovery, s.MsRouting, s.MsRest = opensmPhases(string(b))
	}
	if s.ServerPeakBytes, err = peakRSS(pid); err != nil {
		s.Error = err.Error()
	}
	s.BytesPerNode = float64(s.ServerPeakBytes) / float64(nodes)
	if cpu, err := proccpu.Of(pid); err == nil {
		s.ServerCPUMs = ms(cpu)
	}
	return s
}

// opensmPhases returns OpenSM's phases from its log, in ms: discovery,
// routing and the rest (see ScaleSide); 0 for a phase whose lines are
// missing.
func opensmPhases(log string) (disc, routing, rest float64) {
	marks := []string{"-> Entering DISCOVERING state", "-> Entering MASTER state", "tables configured on all switches", "-> SUBNET UP"}
	at := make([]time.Time, len(marks))
	now := time.Now()
	for _, line := range strings.Split(log, "\n") {
		for i, m := range marks {
			if at[i].IsZero() && strings.Contains(line, m) {
				at[i], _ = opensmrun.LineTime(line, now)
			}
		}
	}
	phase := func(i int) float64 {
		if at[i].IsZero() || at[i+1].IsZero() {
			return 0
		}
		return ms(at[i+1].Sub(at[i]))
	}
	return phase(0), phase(1), phase(2)
}

// peakRSS is VmHWM of process pid, in bytes.
func peakRSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}
