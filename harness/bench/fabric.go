package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/ctl"
	"ibfab/nodeproc"
	"ibfab/simclient"
	"ibfab/sm"
	"ibfab/topologies"
)

// fabric is a fabric a benchmark brought up; down takes it away.
type fabric struct {
	Name string
	Topo *topologies.Topology
}

// up brings topo up as fabric name, taking away a fabric of that name a
// failed earlier run left behind.
func up(name string, topo *topologies.Topology, o harness.UpOptions) (*fabric, error) {
	if ns, _ := fabricnet.Namespaces(name); len(ns) > 0 {
		if err := harness.Down(name); err != nil {
			return nil, fmt.Errorf("taking down the %s left behind: %w", name, err)
		}
	}
	if _, err := harness.Up(name, topo, o); err != nil {
		harness.Down(name)
		return nil, fmt.Errorf("up %s: %w", name, err)
	}
	return &fabric{Name: name, Topo: topo}, nil
}

// down takes the fabric away.
func (f *fabric) down() error { return harness.Down(f.Name) }

// call makes one control call to node.
func (f *fabric) call(node, op string, args, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ctl.Call(ctx, nodeproc.SocketPath(f.Name, node), op, args, result); err != nil {
		return fmt.Errorf("%s %s: %w", node, op, err)
	}
	return nil
}

// profile records a CPU profile and an execution trace of each node at
// once, over d, into dir as NODE.KIND.pprof. (Block and mutex profiles,
// which the profile op also takes, record every wait of an idle goroutine
// too, and slow each wait down.)
func (f *fabric) profile(dir string, nodes []string, d time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, n := range nodes {
		for _, k := range []nodeproc.ProfileKind{nodeproc.ProfileCPU, nodeproc.ProfileTrace} {
			wg.Go(func() {
				err := f.call(n, "profile", nodeproc.ProfileArgs{
					Path: filepath.Join(abs, fmt.Sprintf("%s.%v.pprof", n, k)), Seconds: d.Seconds(), Kind: k}, nil)
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// status returns the status of the whole fabric.
func (f *fabric) status() (*harness.FabricStatus, error) {
	return harness.Status(context.Background(), f.Name)
}

// node returns the status of one node.
func (f *fabric) node(name string) (nodeproc.Status, error) {
	var s nodeproc.Status
	err := f.call(name, "status", nil, &s)
	return s, err
}

// hosts returns the names of the fabric's HCAs.
func (f *fabric) hosts() []string {
	var out []string
	for _, n := range f.Topo.Nodes() {
		if n.Type == topologies.CA {
			out = append(out, n.Name)
		}
	}
	return out
}

// lids returns the LID of port 1 of each of hosts.
func (f *fabric) lids(hosts []string) (map[string]uint16, error) {
	m := map[string]uint16{}
	for _, h := range hosts {
		s, err := f.node(h)
		if err != nil {
			return nil, err
		}
		if len(s.Ports) == 0 || s.Ports[0].LID == 0 {
			return nil, fmt.Errorf("%s has no LID", h)
		}
		m[h] = s.Ports[0].LID
	}
	return m, nil
}

// stopTraffic stops the generator of each of hosts' port 1.
func (f *fabric) stopTraffic(hosts []string) error {
	var errs []error
	for _, h := range hosts {
		errs = append(errs, f.call(h, "traffic-stop", map[string]int{"port": 1}, nil))
	}
	return errors.Join(errs...)
}

// attachSM opens the attach point of HCA node, in its namespace, as an SM
// port.
func (f *fabric) attachSM(node string) (*simclient.Client, error) {
	var port *simclient.Client
	err := fabricnet.Do(fabricnet.Namespace(f.Name, node), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		port, err = simclient.Dial(ctx, simclient.Config{IsSM: true, Wait: true})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("attaching to %s: %w", node, err)
	}
	return port, nil
}

// configure brings the subnet up with one sweep of ibsm from HCA node and
// leaves it without an SM: LIDs, routes, every port Active.
func (f *fabric) configure(node string) error {
	port, err := f.attachSM(node)
	if err != nil {
		return err
	}
	defer port.Close()
	var cfg sm.Config
	if f.Topo.Count(topologies.Switch) == 0 {
		cfg.Routing = "minhop" // up*/down* needs a switch to root at; there are no routes to compute
	}
	s, err := sm.New(port, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.Sweep(ctx)
	if err != nil {
		return fmt.Errorf("ibsm sweep from %s: %w", node, err)
	}
	if !res.SubnetUp {
		return fmt.Errorf("ibsm sweep from %s: subnet not up: %s", node, res.Reason)
	}
	return nil
}

// firstHost is the first host of the topology's first switch (its first
// CA when the first node is one).
func firstHost(topo *topologies.Topology) string {
	if topo.Node(0).Type == topologies.Switch {
		if hs := topo.HostsOf(topo.Node(0).Name); len(hs) > 0 {
			return hs[0]
		}
	}
	return firstCA(topo)
}

// firstCA is the topology's first CA, where ibsim attaches its SM port;
// "" when it has none.
func firstCA(topo *topologies.Topology) string {
	i := slices.IndexFunc(topo.Nodes(), func(n *topologies.Node) bool { return n.Type == topologies.CA })
	if i < 0 {
		return ""
	}
	return topo.Node(i).Name
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
