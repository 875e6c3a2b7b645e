package ibfabcli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/harness/clab"
	"ibfab/internal/cli"
	"ibfab/topologies"
)

const (
	upSynopsis = "up [-f TOPO] [--name N] [--rate RATE] [--time-scale S|auto] [--cpus LIST] [--plane process|mgmt] [--hosts N]"
	upDesc     = `
Brings a fabric up: one network namespace per node (ibf-<N>-<node>) and one
veth pair per link, the ends named p<port> in the two nodes' namespaces, all
through netlink; then one process per node (ibswitch or ibhca) in its
namespace, and waits until every cabled port has trained (LinkUp, Init).
The ports then wait for a subnet manager to make them Active.
A link is paced at its rate in emulated time, so a rate faster than this
machine moves packets needs a time scale: up names the one the fabric's
fastest link needs at full load (from the unpaced limit that ibfab bench
fabric measured and recorded here), warns when --time-scale is smaller,
and --time-scale auto takes it (measuring the limit first, some 6 s,
when none is recorded). Traffic on many links at once needs more. --cpus
pins every node process to those CPUs (on a virtual machine whose idle
CPUs wake slowly, one CPU makes a light-traffic hop several times faster,
at the cost of the others' parallelism: docs/DESIGN.md §3a).
Without -f the built-in default fabric (the thesis's 8-switch/7-host
network) is used. State, control sockets and node logs are kept in
/run/ibfab/<N>/. Several fabrics run side by side under different names.
--plane mgmt runs the management plane only, every node in one process
(ibmgmt, in namespace ibf-<N>-mgmt), as ibsim does, at sizes a process per
node cannot reach: the same agents, no data plane, links trained at once.
exec --umad reaches any HCA there as on a process fabric (each HCA's
endpoints open when a client first asks for them); status shows it.
--hosts N (2 or more) spreads the fabric over N "hosts" on this machine,
as a deployment over N machines (docs/containerlab.md): each host a
namespace (ibf-<N>--host1, …), every pair joined by an underlay veth, the
nodes placed on them as ibfab export containerlab places them (few links
between hosts, a CA with its switch); a link inside a host is a veth pair,
a link between hosts a VXLAN device at each end over the underlay, named
p<port> as a veth end is, so status, link, kill, restart, fault and
capture work alike. down removes the host namespaces and the underlay too.`
	downSynopsis = "down [--name N]"
	downDesc     = `
Takes a fabric down: stops every process in its namespaces (node processes
and whatever ibfab exec started there: SIGTERM, then SIGKILL after 2 s),
removes every namespace and veth ibfab up created and its state directory
(over hosts: the host namespaces, the underlay and the VXLAN devices too),
also when the harness that brought it up crashed (namespaces are found by
name).`
)

func runUp(env *Env, args []string) error {
	const cmd = "up"
	fs := flagSet(cmd)
	file := fs.String("f", "", "topology `FILE` (default: the built-in default fabric)")
	name := fs.String("name", defaultName, "fabric `N`ame: a-z, 0-9 and _")
	scale := timeScaleFlag{scale: 1}
	fs.Var(&scale, "time-scale", "run emulated time `S` times slower (for rates or fabrics that need more CPU than there is); auto: the scale the fastest link needs here")
	var cpus cli.CPUList
	fs.Var(&cpus, "cpus", "run every node process on these CPUs, `LIST` as taskset's (0,2-3; default: any)")
	timeout := fs.Duration("timeout", 0, "how long to wait for the links to train (default 30s + 100ms per node)")
	var plane harness.Plane
	fs.TextVar(&plane, "plane", harness.PlaneProcess, "`PLANE`: process (a process per node, with the data plane) or mgmt (every node in one process, management plane only)")
	var rate topologies.Rate
	fs.TextVar(&rate, "rate", topologies.Rate{}, "run every link at `RATE` (e.g. 4xHDR, 4xNDR, 2xNDR, 4xXDR) whatever the topology says")
	hosts := fs.Int("hosts", 1, "spread the fabric over `N` host namespaces, the links between them VXLAN over an underlay")
	if help, err := parseFlags(env, fs, cmd, upSynopsis, upDesc, args, 0); help || err != nil {
		return err
	}
	if err := fabricnet.CheckFabricName(*name); err != nil {
		return &UsageError{Cmd: cmd, Usage: upSynopsis, Err: err}
	}
	if *hosts < 1 {
		return &UsageError{Cmd: cmd, Usage: upSynopsis, Err: fmt.Errorf("--hosts %d: want 1 or more", *hosts)}
	}
	if *hosts > 1 && plane == harness.PlaneMgmt {
		return &UsageError{Cmd: cmd, Usage: upSynopsis, Err: errors.New("--hosts goes with --plane process: the management plane has no links to spread")}
	}
	t := topologies.Default()
	if *file != "" {
		var err error
		if t, err = topologies.ParseFile(*file); err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
	}
	if err := t.SetRate(rate); err != nil {
		return &UsageError{Cmd: cmd, Usage: upSynopsis, Err: err}
	}
	if plane == harness.PlaneMgmt {
		return upMgmt(env, *name, t, *timeout)
	}
	var host []int // placed here, so that a placement that cannot be fails before any advice
	if *hosts > 1 {
		var err error
		if host, err = clab.Place(t, *hosts, clab.Capacity(t.NumNodes(), *hosts)); err != nil {
			return &CommandError{Cmd: cmd, Err: fmt.Errorf("--hosts %d: %w", *hosts, err)}
		}
	}
	advice, err := adviseTimeScale(env, *name, t, &scale)
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	big := t.NumNodes() >= 50
	progress := func(phase string, done, total int) {
		if big && (done%50 == 0 || done == total) {
			fmt.Fprintf(env.Stderr, "ibfab up: %s %d/%d\n", phase, done, total)
		}
	}
	st, err := harness.Up(*name, t, harness.UpOptions{TimeScale: scale.scale, Timeout: *timeout, Progress: progress, CPUs: cpus, Hosts: *hosts, Placement: host})
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	fmt.Fprintf(env.Stdout, "fabric %s up: %d switches, %d HCAs, %d links trained (Init), in namespaces ibf-%s-*; time scale %g\n",
		st.Fabric, t.Count(topologies.Switch), t.Count(topologies.CA), t.NumLinks(), st.Fabric, st.TimeScale)
	if *hosts > 1 {
		if err := printHosts(env, st.Fabric, *hosts); err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
	}
	fmt.Fprintln(env.Stdout, advice)
	fmt.Fprintf(env.Stdout, "next: an SM makes the ports Active; 'ibfab status --name %s' shows them; 'ibfab down --name %s' ends it all\n", st.Fabric, st.Fabric)
	return nil
}

// upMgmt is up --plane mgmt.
func upMgmt(env *Env, name string, t *topologies.Topology, timeout time.Duration) error {
	st, err := harness.Up(name, t, harness.UpOptions{Plane: harness.PlaneMgmt, Timeout: timeout})
	if err != nil {
		return &CommandError{Cmd: "up", Err: err}
	}
	fmt.Fprintf(env.Stdout, "fabric %s up, management plane: %d switches, %d HCAs, %d links trained (Init), in one process (pid %d) in namespace %s\n",
		st.Fabric, t.Count(topologies.Switch), t.Count(topologies.CA), t.NumLinks(), st.Nodes[0].PID, st.Namespaces[0])
	fmt.Fprintf(env.Stdout, "next: 'ibfab exec --umad %s HCA -- opensm' or ibsm --port sim; 'ibfab down --name %s' ends it all\n", st.Fabric, st.Fabric)
	return nil
}

func runDown(env *Env, args []string) error {
	const cmd = "down"
	fs := flagSet(cmd)
	name := fs.String("name", defaultName, "fabric `N`ame")
	if help, err := parseFlags(env, fs, cmd, downSynopsis, downDesc, args, 0); help || err != nil {
		return err
	}
	if err := fabricnet.CheckFabricName(*name); err != nil {
		return &UsageError{Cmd: cmd, Usage: downSynopsis, Err: err}
	}
	if err := harness.Down(*name); err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	fmt.Fprintf(env.Stdout, "fabric %s down\n", *name)
	return nil
}

// defaultName is the fabric up, down and status work on without --name.
const defaultName = "default"

// printHosts prints where up --hosts put the nodes and which links run
// between hosts.
func printHosts(env *Env, fabric string, hosts int) error {
	fs, err := harness.Status(context.Background(), fabric)
	if err != nil {
		return err
	}
	on := make([][]string, hosts)
	for _, n := range fs.Nodes {
		if n.Host >= 1 && n.Host <= hosts {
			on[n.Host-1] = append(on[n.Host-1], n.Name)
		}
	}
	for h, names := range on {
		fmt.Fprintf(env.Stdout, "  host %d (namespace %s): %s\n", h+1, fabricnet.HostNamespace(fabric, h), strings.Join(names, " "))
	}
	cut, err := harness.CrossHostLinks(fabric)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "  %d links between hosts, VXLAN over the underlay:\n", len(cut))
	for _, c := range cut {
		fmt.Fprintf(env.Stdout, "    %v\n", c)
	}
	return nil
}
