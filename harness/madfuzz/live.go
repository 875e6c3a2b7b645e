package madfuzz

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/proccpu"
	"ibfab/link/veth"
	"ibfab/simclient"
	"ibfab/topologies"
)

// LiveConfig is a fuzz run against running fabric Fabric from HCA From.
type LiveConfig struct {
	Fabric string
	From   string // an HCA's name; "" is the fabric's first HCA
	// Targets are node names; empty means every node.
	Targets []string
	// Bystanders runs a light flow between the HCAs that are neither
	// From nor Targets, each to the next, for the whole run: every packet
	// must arrive (traffic among hosts the fuzzer leaves alone is not
	// disturbed). It needs Targets leaving two HCAs with LIDs out.
	Bystanders bool
	// Corpus are real MADs mutations start from (ReadCorpus).
	Corpus [][]byte
	// Frames sends the fuzz MADs as raw frames broken at the packet
	// layer (FrameShape) on From's veth end, to the switch it is cabled
	// to; the checks still go through the attach point.
	Frames     bool
	MADs       int
	Seed       uint64
	CheckEvery int
	// MaxRSSGrowth bounds how much a node process's resident memory may
	// grow over the run (32 MiB), MaxGoroutineGrowth its goroutines (32;
	// the count after the run may take GoroutineSettle, 5 s, to fall
	// back: transfers and timers the last MADs began).
	MaxRSSGrowth       uint64
	MaxGoroutineGrowth int
	GoroutineSettle    time.Duration
	Progress           func(sent int, r *Report)
}

const (
	defaultMaxRSSGrowth       = 32 << 20
	defaultMaxGoroutineGrowth = 32
	defaultGoroutineSettle    = 5 * time.Second
)

// LiveReport is a live run: the fuzzer's report and what the harness saw
// of the node processes after it.
type LiveReport struct {
	Fabric string `json:"fabric"`
	From   string `json:"from"`
	Report
	// Dead are the nodes whose process no longer runs.
	Dead []string `json:"dead,omitempty"`
	// RSSGrowth is the largest growth of a node process's resident
	// memory over the run, in bytes, and RSSNode that node.
	RSSGrowth int64  `json:"rss_growth_bytes"`
	RSSNode   string `json:"rss_growth_node,omitempty"`
	// GoroutineGrowth is the largest growth of a node process's
	// goroutines over the run, and GoroutineNode that node.
	GoroutineGrowth int    `json:"goroutine_growth"`
	GoroutineNode   string `json:"goroutine_growth_node,omitempty"`
	// Accounting weighs the unanswered MADs against the fabric's drop
	// counters (not in frame mode, whose answers go to the HCA's agents).
	Accounting *Accounting `json:"accounting,omitempty"`
	// Bystanders are the flows among the hosts left alone (LiveConfig's
	// Bystanders) and BystandersLost what they lost in all.
	Bystanders     []BystanderFlow `json:"bystanders,omitempty"`
	BystandersLost uint64          `json:"bystanders_lost"`
	// Passed: every MAD went out, every check answered, no answer with
	// a reserved byte set, no process died, none grew past MaxRSSGrowth
	// or MaxGoroutineGrowth, no bystander packet lost, no unanswered MAD
	// the drop counters leave unexplained.
	Passed bool `json:"passed"`
}

// Live fuzzes running fabric c.Fabric through the ibsim-protocol attach
// point of HCA c.From, with the LIDs an SM assigned when there are any,
// and checks afterwards that every node process still runs.
func Live(ctx context.Context, c LiveConfig) (*LiveReport, error) {
	t, err := harness.Topology(c.Fabric)
	if err != nil {
		return nil, err
	}
	st, err := harness.Status(ctx, c.Fabric)
	if err != nil {
		return nil, err
	}
	from, err := fromNode(t, c.From)
	if err != nil {
		return nil, err
	}
	targets, err := lookupAll(t, c.Targets)
	if err != nil {
		return nil, err
	}
	before := rssOf(st)
	var client *simclient.Client
	err = fabricnet.Do(fabricnet.Namespace(c.Fabric, t.Node(from).Name), func() error {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var err error
		client, err = simclient.Dial(dctx, simclient.Config{Name: "sim"})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("attach at %s: %w", t.Node(from).Name, err)
	}
	defer client.Close()
	nodeLIDs := lids(t, st)
	var bs []bystander
	if c.Bystanders {
		if bs, err = startBystanderFlows(ctx, c.Fabric, t, from, targets, nodeLIDs); err != nil {
			return nil, err
		}
	}
	rc := Config{Port: client, Topo: t, From: from, Targets: targets, LIDs: nodeLIDs, SMLID: smLID(st, t.Node(from).Name),
		MADs: c.MADs, Seed: c.Seed, Corpus: c.Corpus, CheckEvery: c.CheckEvery, Progress: c.Progress}
	if c.Frames {
		ep, err := openFrames(c.Fabric, t.Node(from).Name)
		if err != nil {
			_, _ = stopBystanders(ctx, c.Fabric, bs)
			return nil, err
		}
		defer ep.Close()
		rc.Frames, rc.SLID = ep, rc.LIDs[from]
	}
	r, err := Run(ctx, rc)
	flows, ferr := stopBystanders(ctx, c.Fabric, bs)
	if err != nil {
		return nil, err
	}
	if ferr != nil {
		return nil, ferr
	}
	lr := &LiveReport{Fabric: c.Fabric, From: t.Node(from).Name, Report: *r, Bystanders: flows}
	for _, f := range flows {
		lr.BystandersLost += f.Lost()
	}
	after, err := settled(ctx, c, st)
	if err != nil {
		return nil, err
	}
	for _, n := range after.Nodes {
		if !n.Alive {
			lr.Dead = append(lr.Dead, n.Name)
		}
	}
	if !c.Frames {
		a := account(r, st, after, lr.From)
		lr.Accounting = &a
	}
	lr.RSSNode, lr.RSSGrowth = maxGrowth(before, rssOf(after))
	var g int64
	lr.GoroutineNode, g = maxGrowth(goroutinesOf(st), goroutinesOf(after))
	lr.GoroutineGrowth = int(g)
	lr.Passed = r.Sent == r.MADs && len(r.Failures) == 0 && r.Dirty == 0 && len(lr.Dead) == 0 && lr.BystandersLost == 0 &&
		(lr.Accounting == nil || lr.Accounting.Unexplained == 0) &&
		lr.RSSGrowth <= int64(cmp.Or(c.MaxRSSGrowth, defaultMaxRSSGrowth)) &&
		lr.GoroutineGrowth <= cmp.Or(c.MaxGoroutineGrowth, defaultMaxGoroutineGrowth)
	return lr, nil
}

// settled is the fabric's status after the run, once no node runs more
// than MaxGoroutineGrowth goroutines beyond its count in before, or
// GoroutineSettle has passed.
func settled(ctx context.Context, c LiveConfig, before *harness.FabricStatus) (*harness.FabricStatus, error) {
	deadline := time.Now().Add(cmp.Or(c.GoroutineSettle, defaultGoroutineSettle))
	for {
		after, err := harness.Status(ctx, c.Fabric)
		if err != nil {
			return nil, err
		}
		_, g := maxGrowth(goroutinesOf(before), goroutinesOf(after))
		if int(g) <= cmp.Or(c.MaxGoroutineGrowth, defaultMaxGoroutineGrowth) || time.Now().After(deadline) {
			return after, nil
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// maxGrowth returns the node whose value grew most from before to after,
// and by how much (0 and "" when none grew).
func maxGrowth(before, after map[string]uint64) (string, int64) {
	var node string
	var most int64
	for n, now := range after {
		if was, ok := before[n]; ok && int64(now)-int64(was) > most {
			node, most = n, int64(now)-int64(was)
		}
	}
	return node, most
}

// goroutinesOf is every live node's goroutine count.
func goroutinesOf(st *harness.FabricStatus) map[string]uint64 {
	out := map[string]uint64{}
	for _, n := range st.Nodes {
		if n.Alive && n.Goroutines > 0 {
			out[n.Name] = uint64(n.Goroutines)
		}
	}
	return out
}

func fromNode(t *topologies.Topology, name string) (int, error) {
	if name == "" {
		for i, n := range t.Nodes() {
			if n.Type == topologies.CA {
				return i, nil
			}
		}
		return 0, fmt.Errorf("the fabric has no HCA to fuzz from")
	}
	i, ok := t.Lookup(name)
	if !ok {
		return 0, fmt.Errorf("no node %q", name)
	}
	if t.Node(i).Type != topologies.CA {
		return 0, fmt.Errorf("%s is not an HCA: the fuzzer attaches at an HCA", name)
	}
	return i, nil
}

func lookupAll(t *topologies.Topology, names []string) ([]int, error) {
	var out []int
	for _, n := range names {
		i, ok := t.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("no node %q", n)
		}
		out = append(out, i)
	}
	return out, nil
}

// lids returns each node's LID as status shows it (0 before an SM).
func lids(t *topologies.Topology, st *harness.FabricStatus) []uint16 {
	out := make([]uint16, t.NumNodes())
	for _, n := range st.Nodes {
		i, ok := t.Lookup(n.Name)
		if !ok {
			continue
		}
		for _, p := range n.Ports {
			if p.LID != 0 {
				out[i] = p.LID
				break
			}
		}
	}
	return out
}

// openFrames opens a second socket on node's veth end p1, from which
// frames go to the switch it is cabled to.
func openFrames(fabric, node string) (*veth.Endpoint, error) {
	var ep *veth.Endpoint
	err := fabricnet.Do(fabricnet.Namespace(fabric, node), func() (err error) {
		ep, err = veth.Open("p1")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("raw frames at %s: %w", node, err)
	}
	return ep, nil
}

// smLID is the master SM's LID as node from's port 1 has it (0: none).
func smLID(st *harness.FabricStatus, from string) uint16 {
	for _, n := range st.Nodes {
		if n.Name != from {
			continue
		}
		for _, p := range n.Ports {
			if p.Port == 1 {
				return p.SMLID
			}
		}
	}
	return 0
}

// rssOf reads the resident memory of every live node's process.
func rssOf(st *harness.FabricStatus) map[string]uint64 {
	out := map[string]uint64{}
	for _, n := range st.Nodes {
		if !n.Alive {
			continue
		}
		if b, err := proccpu.RSS(n.PID); err == nil {
			out[n.Name] = b
		}
	}
	return out
}
