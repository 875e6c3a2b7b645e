package mgmtplane

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"

	"ibfab/internal/cli"
	"ibfab/internal/ctl"
	"ibfab/memfabric"
	"ibfab/topologies"
)

// The control socket's ops (package ctl: one JSON request per line).
const (
	OpStatus     = "status"      // every node's nodeproc.Status
	OpStats      = "stats"       // the plane's Stats
	OpOpen       = "open"        // OpenArgs → Names
	OpLink       = "link"        // LinkArgs
	OpKill       = "kill"        // NodeArgs: power the node off, as a crash
	OpFaultAdd   = "fault-add"   // FaultArgs → FaultEntry
	OpFaultList  = "fault-list"  // → []FaultEntry
	OpFaultClear = "fault-clear" // ClearArgs → the number removed
	OpShutdown   = "shutdown"    // stop the process
)

// OpenArgs names the CA whose client side to open.
type OpenArgs struct {
	Node string `json:"node"`
}

// NodeArgs names a node.
type NodeArgs struct {
	Node string `json:"node"`
}

// LinkArgs takes the link at a node's port (0: every cabled port) down
// or up again.
type LinkArgs struct {
	Node string `json:"node"`
	Port uint8  `json:"port"`
	Up   bool   `json:"up"`
}

// handler serves the control socket.
func (p *Plane) handler(stop func()) ctl.Handler {
	return func(_ context.Context, op string, args json.RawMessage) (any, error) {
		switch op {
		case OpStatus:
			return p.Status(), nil
		case OpStats:
			return p.Stats(), nil
		case OpOpen:
			var a OpenArgs
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			return p.Open(a.Node)
		case OpLink:
			return nil, p.link(args)
		case OpKill:
			return nil, p.kill(args)
		case OpFaultAdd:
			return p.addFault(args)
		case OpFaultList:
			return p.listFaults(), nil
		case OpFaultClear:
			return p.clearFaults(args)
		case OpShutdown:
			stop()
			return nil, nil
		}
		return nil, fmt.Errorf("%w %q (the management plane serves %s)", ctl.ErrUnknownOp, op,
			strings.Join([]string{OpStatus, OpStats, OpOpen, OpLink, OpKill, OpFaultAdd, OpFaultList, OpFaultClear, OpShutdown}, ", "))
	}
}

// nodeArgs decodes args into a, whose node it returns by index.
func (p *Plane) nodeArgs(args json.RawMessage, a any, name func() string) (int, error) {
	if err := json.Unmarshal(args, a); err != nil {
		return 0, err
	}
	i, ok := p.topo.Lookup(name())
	if !ok {
		return 0, fmt.Errorf("mgmtplane: no node %q", name())
	}
	return i, nil
}

func (p *Plane) link(args json.RawMessage) error {
	var a LinkArgs
	i, err := p.nodeArgs(args, &a, func() string { return a.Node })
	if err != nil {
		return err
	}
	ports := []uint8{a.Port}
	if a.Port == 0 {
		ports = nil
		for num := 1; num <= p.topo.Node(i).NumPorts; num++ {
			if _, ok := p.topo.LinkAt(topologies.PortRef{Node: i, Port: num}); ok {
				ports = append(ports, uint8(num))
			}
		}
	}
	var errs []error
	p.Do(func(f *memfabric.Fabric) {
		for _, num := range ports {
			errs = append(errs, f.SetLink(i, num, a.Up))
		}
	})
	return errors.Join(errs...)
}

// kill powers a node off, as a crash: its agent stops and its links go
// dark at both ends.
func (p *Plane) kill(args json.RawMessage) error {
	var a NodeArgs
	i, err := p.nodeArgs(args, &a, func() string { return a.Node })
	if err != nil {
		return err
	}
	p.Do(func(f *memfabric.Fabric) { err = f.PowerOff(i) })
	return err
}

// DefaultGOGC is ibmgmt's GOGC: a 9,200-node plane brought up by OpenSM
// peaked at 234 MB with Go's 100, 177 MB with 50 (5 % more CPU), 147 MB
// with 25 (20 % more, and OpenSM 6 % slower), against ibsim's 104 MB.
// With the agents' state shared and made at first use (docs/results.md,
// 2026-12-07) it peaks at 87 MB with 50 and 73 MB with 25, for 26 % more
// CPU: 50 stays.
const DefaultGOGC = 50

// Main runs the management plane of a topology file with the
// command-line arguments args (cmd/ibmgmt) and returns its exit status:
// 0 after a shutdown request or SIGTERM, 1 when it cannot start, 2 for
// bad arguments.
func Main(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("ibmgmt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ibmgmt --fabric N --topology FILE --socket PATH [--prefix P]\n\n"+
			"Runs every node of a topology in this process, management plane only\n"+
			"(ibfab up --plane mgmt starts it); see ibfab help up.\n\n")
		fs.PrintDefaults()
	}
	fs.String("fabric", "", "fabric `N`ame (to tell the process by)")
	topo := fs.String("topology", "", "topology `FILE`")
	sock := fs.String("socket", "", "control socket `PATH`")
	prefix := fs.String("prefix", DefaultPrefix, "`prefix` of the CAs' socket names")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the run to `file` (go tool pprof)")
	heap := fs.String("memprofile", "", "write a heap profile to `file` as the process stops, the fabric still held (go tool pprof)")
	gc := fs.Int("gogc", DefaultGOGC, "the garbage collector's `percent` (GOGC) unless $GOGC says; 100 is Go's default")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cli.ExitOK
		}
		return cli.BadArgs(stderr, "ibmgmt", err, "")
	}
	if *topo == "" || *sock == "" || fs.NArg() > 0 {
		return cli.BadArgs(stderr, "ibmgmt", errors.New("want --topology and --socket, and no arguments"), "")
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(*gc)
	}
	if *profile != "" {
		stop, err := startProfile(*profile)
		if err != nil {
			fmt.Fprintf(stderr, "ibmgmt: %v\n", err)
			return cli.ExitFailure
		}
		defer stop()
	}
	if err := serve(*topo, *sock, *prefix, *heap, stderr); err != nil {
		fmt.Fprintf(stderr, "ibmgmt: %v\n", err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// serve runs the plane until SIGTERM, SIGINT or a shutdown request.
func serve(topoFile, sock, prefix, heap string, stderr io.Writer) error {
	t, err := topologies.ParseFile(topoFile)
	if err != nil {
		return err
	}
	p, err := New(t, Config{Prefix: prefix, Logf: func(format string, args ...any) {
		fmt.Fprintf(stderr, "ibmgmt: "+format+"\n", args...)
	}})
	if err != nil {
		return err
	}
	p.Start()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv, err := ctl.Listen(sock, p.handler(stop))
	if err != nil {
		return errors.Join(err, p.Close())
	}
	fmt.Fprintf(stderr, "ibmgmt: %d nodes up, control socket %s (pid %d)\n", t.NumNodes(), sock, os.Getpid())
	<-ctx.Done()
	var herr error
	if heap != "" {
		herr = writeHeap(heap)
	}
	return errors.Join(herr, srv.Close(), p.Close())
}

// startProfile starts a CPU profile into file; stop ends and writes it.
func startProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeHeap writes a heap profile of what is live now into file.
func writeHeap(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	runtime.GC()
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}
