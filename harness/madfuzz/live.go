package madfuzz

import (
	"context"
	"fmt"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/proccpu"
	"ibfab/simclient"
	"ibfab/topologies"
)

// LiveConfig is a fuzz run against running fabric Fabric from HCA From.
type LiveConfig struct {
	Fabric string
	From   string // an HCA's name; "" is the fabric's first HCA
	// Targets are node names; empty means every node.
	Targets    []string
	MADs       int
	Seed       uint64
	CheckEvery int
	// MaxRSSGrowth bounds how much a node process's resident memory may
	// grow over the run (32 MiB).
	MaxRSSGrowth uint64
	Progress     func(sent int, r *Report)
}

const defaultMaxRSSGrowth = 32 << 20

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
	// Passed: every MAD went out, every check answered, no answer with
	// a reserved byte set, no process died, none grew past MaxRSSGrowth.
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
	r, err := Run(ctx, Config{Port: client, Topo: t, From: from, Targets: targets, LIDs: lids(t, st), SMLID: smLID(st, t.Node(from).Name),
		MADs: c.MADs, Seed: c.Seed, CheckEvery: c.CheckEvery, Progress: c.Progress})
	if err != nil {
		return nil, err
	}
	lr := &LiveReport{Fabric: c.Fabric, From: t.Node(from).Name, Report: *r}
	after, err := harness.Status(ctx, c.Fabric)
	if err != nil {
		return nil, err
	}
	for _, n := range after.Nodes {
		if !n.Alive {
			lr.Dead = append(lr.Dead, n.Name)
		}
	}
	for node, now := range rssOf(after) {
		if was, ok := before[node]; ok && int64(now)-int64(was) > lr.RSSGrowth {
			lr.RSSGrowth, lr.RSSNode = int64(now)-int64(was), node
		}
	}
	limit := c.MaxRSSGrowth
	if limit == 0 {
		limit = defaultMaxRSSGrowth
	}
	lr.Passed = r.Sent == r.MADs && len(r.Failures) == 0 && r.Dirty == 0 && len(lr.Dead) == 0 && lr.RSSGrowth <= int64(limit)
	return lr, nil
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
