// Command ibsm is ibfab's subnet manager (package sm) on one port: it
// discovers the subnet, gives LIDs, routes, distributes the tables and
// activates the ports, once (--once) or watching the subnet and taking
// every change in; beside other SMs it holds the election of IBA 14.4
// (sminfo.go). Beside the SM itself it manages, on request, QoS (qos.go),
// congestion control (cc.go), adaptive routing (ar.go), partitions
// (partitions.go), M_Keys (mkey.go) and serves Subnet Administration
// (package sm/sa); 'ibsm qos' and 'ibsm ar' talk to a running ibsm,
// 'ibsm routes --dump' prints the forwarding tables as ibroute does,
// 'ibsm arbtable-bench' (arbtable.go) measures, and 'ibsm bench' runs
// 'ibfab bench sm' (bench.go).
//
// The usage, with every flag, subcommand, port scheme and routing engine,
// is what 'ibsm -h' prints (synopsis and the flags below); docs/ibsm.md
// carries a copy, which go generate rewrites and TestUsageDoc checks, and
// describes each part.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"

	"ibfab/internal/cli"
	"ibfab/sm"
	"ibfab/sm/routing"
	"ibfab/sm/sa"
	"ibfab/wire/mad"
)

// The usage blocks of docs/ibsm.md are copies of what ibsm prints.
//go:generate go test -run ^TestUsageDoc$ -update

// Exit statuses, every binary's (package cli).
const (
	exitOK      = cli.ExitOK
	exitFailure = cli.ExitFailure // the subnet is not up, or the port failed
	exitUsage   = cli.ExitUsage
)

// gcPercent is the collector's heap growth ibsm runs with unless GOGC
// says otherwise. Its live heap is a megabyte or two, so at Go's default
// (100) a sweep of a few thousand SMPs collects several times, and every
// collection also scans the binary's megabytes of data (gopacket's
// protocol tables, linked in through package wire), on the core the
// simulator needs. At 400 a sweep of a fabric of a few hundred hosts
// allocates less than the first collection's goal.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const synopsis = `usage: ibsm --port SPEC [--routing ENGINE] [--once] [--sa=false] [--json] [--lid-file F] [--lmc N] [--qos] [--qos-flows F] [--cc FILE]
            [--ar-mode MODE] [--ar-threshold PCT] [--afc-vl VL] [--sl2vl identity]
            [--partitions FILE] [--part-enforce in|out|both|off]
            [--priority P] [--sm-key K] [--polling-interval D] [--polling-retries N]
            [--m-key K [--m-key-protect 0-3] [--m-key-lease D] [--m-key-per-port]] [flags]
       ibsm routes --dump --port SPEC [flags]
       ibsm qos add|del|list [flags]
       ibsm ar set|show [flags]
       ibsm bench [flags]            (runs ibfab bench sm)
       ibsm arbtable-bench [--ops N | --quick] [--out DIR] [flags]`

// options are the command line.
type options struct {
	port     string
	once     bool
	json     bool
	dump     bool
	profile  string
	cfg      sm.Config
	seed     uint64
	lmc, vls uint
	speedExt uint // --link-speed-ext
	priority uint
	// pollRetries is --polling-retries, whose 0 means none (Config's
	// means the default).
	pollRetries int
	routesCmd   bool
	qos         qosOptions
	cc          ccOptions
	ar          arOptions
	part        partOptions
	mkey        mkeyOptions
	// sa is --sa: serve Subnet Administration while master.
	sa bool
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	if len(args) > 0 && args[0] == "routes" {
		o.routesCmd = true
		args = args[1:]
	}
	fs := flag.NewFlagSet("ibsm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, synopsis)
		fmt.Fprintf(stderr, "\nport schemes: %s; routing engines: %s\n\nflags:\n",
			strings.Join(sm.PortSchemes(), ", "), strings.Join(routing.Engines(), ", "))
		fs.PrintDefaults()
	}
	o.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := o.managerConfigs(fs, stderr); err != nil {
		return nil, err
	}
	if err := o.check(fs); err != nil {
		return nil, err
	}
	o.cfg.LMC, o.cfg.Priority, o.cfg.OpVLs = uint8(o.lmc), uint8(o.priority), uint8(o.vls)
	o.cfg.LinkSpeedExt = mad.LinkSpeedExt(o.speedExt)
	if err := o.arAndControl(fs); err != nil {
		return nil, err
	}
	o.cfg.Options.Seed = o.seed
	if o.cfg.Retries == 0 {
		o.cfg.Retries = -1 // the flag's 0 means none; Config's 0 means the default
	}
	switch {
	case o.pollRetries < 0 || o.cfg.PollInterval <= 0:
		return nil, errors.New("--polling-retries is 0 or more, --polling-interval more than 0")
	case o.pollRetries == 0:
		o.cfg.PollRetries = -1
	default:
		o.cfg.PollRetries = o.pollRetries
	}
	return o, nil
}

// addFlags defines the SM's flags on fs, into o.
func (o *options) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.port, "port", "", "the port the SM runs on: `SPEC` (mem[:TOPOFILE], sim[:NAME], umad:CA:PORT, softumad[:PORT])")
	fs.StringVar(&o.cfg.Routing, "routing", sm.DefaultRouting, "routing `engine`")
	fs.BoolVar(&o.once, "once", false, "sweep once and exit")
	fs.BoolVar(&o.sa, "sa", true, "serve Subnet Administration (SA class 0x03: records, PathRecords, services, events, multicast groups) at the SM's port while master")
	fs.BoolVar(&o.json, "json", false, "print each sweep as one JSON object on a line")
	fs.StringVar(&o.cfg.LIDFile, "lid-file", "", "GUID to LID `file` that keeps LIDs across restarts: written by the master, reloaded by a standby that takes over (OpenSM's guid2lid)")
	fs.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of the run to `file` (go tool pprof)")
	fs.BoolVar(&o.dump, "dump", false, "routes: print every switch's forwarding table as ibroute does")
	fs.UintVar(&o.lmc, "lmc", 0, "LMC of CA ports: 2^LMC LIDs each, routed apart (multipath): alias i on its own route in VL layer i, SL i on VL i")
	fs.IntVar(&o.cfg.Window, "window", sm.DefaultWindow, "SMPs in flight at once, at most: a lost SMP halves the window, answers widen it again")
	fs.IntVar(&o.cfg.Burst, "burst", 0, "SMPs sent back to back, at most, before an answer comes (what a slow first hop's VL15 buffer must hold; 0: the window); -1 for no limit")
	fs.DurationVar(&o.cfg.Timeout, "timeout", sm.DefaultTimeout, "time to wait for each SMP's answer")
	fs.DurationVar(&o.cfg.ProbeTimeout, "probe-timeout", sm.DefaultProbeTimeout, "time to wait, once, for a switch that may be gone before reading the port to it again (partial discovery; at most --timeout)")
	fs.IntVar(&o.cfg.Retries, "retries", sm.DefaultRetries, "resends of an unanswered SMP")
	fs.DurationVar(&o.cfg.SweepInterval, "sweep-interval", sm.DefaultSweepInterval, "time between light sweeps")
	addSMInfoFlags(fs, o)
	fs.UintVar(&o.vls, "op-vls", 0, "bound on every port's OperationalVLs `code`, which is otherwise what both ends of its link support (the smaller VLCap), as OpenSM's max_op_vls: 1 VL0, 2 VL0-1, 3 VL0-3, 4 VL0-7, 5 VL0-14, 0 none")
	fs.UintVar(&o.speedExt, "link-speed-ext", 0, "LinkSpeedExtEnabled `value` to set on both ends of every link with extended speeds, as OpenSM's force_link_speed_ext (taken at the link's next training): 0 no change, 1-15 those of FDR 1, EDR 2, HDR 4, NDR 8, 30 none, 31 all supported")
	fs.TextVar(&o.cfg.VLTables, "vl-tables", sm.DefaultVLTables, "SLtoVL and VL arbitration tables `mode`: set (SLs spread over the data VLs) or keep (the devices' own, as OpenSM with QoS off)")
	fs.BoolVar(&o.cfg.AllowCreditLoops, "allow-credit-loops", false, "distribute minhop routes with a cycle in their channel dependency graph")
	fs.TextVar(&o.cfg.Options.Parent, "pira-parent", routing.ParentLast, "PIRa parent `choice`: last, first or random")
	fs.TextVar(&o.cfg.Options.FERaTies, "fera-ties", routing.TieKeepOld, "FERa `tie-break`: keep-old or random")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the routing engines' random choices")
	addAssimilationFlags(fs, &o.cfg)
	addQoSFlags(fs, &o.qos)
	addCCFlags(fs, &o.cc)
	addARFlags(fs, &o.ar)
	addPartitionFlags(fs, &o.part)
	addMKeyFlags(fs, &o.mkey)
}

// managerConfigs builds the configurations of the managers the flags
// turn on: QoS, congestion control, partitions and M_Keys.
func (o *options) managerConfigs(fs *flag.FlagSet, stderr io.Writer) error {
	var err error
	if o.cfg.QoS, err = o.qos.config(); err != nil {
		return err
	}
	if o.cfg.CC, err = o.cc.config(); err != nil {
		return err
	}
	if o.cfg.Partitions, err = o.part.config(fs, stderr); err != nil {
		return err
	}
	if err := o.mkey.apply(&o.cfg); err != nil {
		return err
	}
	return nil
}

// check refuses arguments, a missing port, --dump without routes (and
// routes without it) and numbers out of their fields' range.
func (o *options) check(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.port == "":
		return errors.New("--port is required")
	case o.routesCmd && !o.dump:
		return errors.New("routes: say --dump")
	case !o.routesCmd && o.dump:
		return errors.New("--dump belongs to 'ibsm routes'")
	case o.lmc > 7 || o.priority > 15 || o.vls > 5:
		return errors.New("--lmc is 0-7, --priority 0-15, --op-vls 0-5")
	case o.speedExt > 15 && o.speedExt < 30 || o.speedExt > 31:
		return fmt.Errorf("--link-speed-ext %d: want 0 (no change), 1-15 (FDR 1, EDR 2, HDR 4, NDR 8), 30 (none) or 31 (all supported)", o.speedExt)
	}
	return nil
}

// arAndControl builds adaptive routing's configuration (it needs the
// operational VLs) and checks --control, which serves QoS and AR only.
func (o *options) arAndControl(fs *flag.FlagSet) error {
	var err error
	if o.cfg.AR, err = o.ar.config(fs, &o.cfg, o.cfg.OpVLs); err != nil {
		return err
	}
	switch {
	case o.qos.control != "" && o.cfg.QoS == nil && o.cfg.AR == nil:
		return errors.New("--control serves 'ibsm qos' and 'ibsm ar': say --qos or --ar-mode")
	case o.qos.control == "":
		o.qos.control = DefaultControl
	}
	return nil
}

// daemon reports whether ibsm stays up, watching the subnet (not --once,
// not routes).
func (o *options) daemon() bool { return !o.once && !o.routesCmd }

// subcommands are ibsm's subcommands other than routes, which is the
// SM's own flags.
var subcommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"bench": func(_ context.Context, args []string, _, stderr io.Writer) int { return runBench(args, stderr) },
	"qos":   runQoS,
	"ar":    runAR,
	"arbtable-bench": func(_ context.Context, args []string, stdout, stderr io.Writer) int {
		return runArbBench(args, stdout, stderr)
	},
}

// run is ibsm with the given arguments; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if sub, ok := subcommands[args[0]]; ok {
			return sub(ctx, args[1:], stdout, stderr)
		}
	}
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return cli.BadArgs(stderr, "ibsm", err, synopsis)
	}
	if o.cfg.Timeout > 0 {
		umadTimeout = kernelTimeout(o.cfg.Timeout)
	}
	if !o.daemon() {
		o.cfg.PreBlock = false // no change will follow
	}
	if o.profile != "" {
		stop, err := startProfile(o.profile)
		if err != nil {
			fmt.Fprintf(stderr, "ibsm: %v\n", err)
			return exitFailure
		}
		defer stop()
	}
	o.reportEvents(stdout, stderr)
	s, closeSM, err := startSM(o)
	if err != nil {
		fmt.Fprintf(stderr, "ibsm: %v\n", err)
		return exitFailure
	}
	defer closeSM()
	if !o.daemon() {
		return sweepOnce(ctx, s, o, stdout, stderr)
	}
	return runDaemon(ctx, s, o, stdout, stderr)
}

// startProfile starts a CPU profile to file and returns what stops it.
func startProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// reportEvents has the SM and its managers print their events on stdout.
func (o *options) reportEvents(stdout, stderr io.Writer) {
	if o.daemon() {
		// With --once the sweep's sm_state says it all: one line, as
		// the bench and the harness read it.
		o.cfg.OnSMEvent = func(e sm.SMEvent) { reportSM(stdout, e, o.json) }
		o.cfg.OnMKeyEvent = func(e sm.MKeyEvent) { reportMKey(stdout, e, o.json) }
	}
	if o.cfg.QoS != nil {
		o.cfg.QoS.OnEvent = func(e sm.QoSEvent) { reportQoS(stdout, e, o.json) }
	}
	if o.cfg.AR != nil {
		o.cfg.AR.OnEvent = func(e sm.AREvent) { reportAR(stdout, e, o.json) }
	}
	if o.cfg.Partitions != nil {
		o.cfg.Partitions.OnEvent = func(e sm.PartitionEvent) { reportPartition(stdout, e, o.json) }
	}
	if o.cfg.CC != nil {
		o.cfg.CC.OnEvent = func(e sm.CCLogEvent) { reportCC(stdout, e, o.json) }
		if !o.cfg.CC.Enabled {
			fmt.Fprintf(stderr, "ibsm: %s: congestion_control is not TRUE: congestion control left as the devices hold it\n", o.cc.file)
		}
	}
}

// startSM opens the port and the SM on it and, when ibsm stays up, its
// SA and the control socket of 'ibsm qos' and 'ibsm ar'. closeSM closes
// them all, last opened first.
func startSM(o *options) (s *sm.SM, closeSM func(), err error) {
	port, err := sm.OpenPort(o.port)
	if err != nil {
		return nil, nil, err
	}
	if s, err = sm.New(port, o.cfg); err != nil {
		port.Close()
		return nil, nil, err
	}
	closeSM = func() {
		s.Close()
		port.Close()
	}
	if o.sa && o.daemon() {
		admin, err := sa.New(sa.Config{Sender: &sa.PortSender{Port: port}, SMKey: o.cfg.SMKey})
		if err != nil {
			closeSM()
			return nil, nil, err
		}
		s.SetSubnetAdmin(admin)
	}
	if (o.cfg.QoS != nil || o.cfg.AR != nil) && o.daemon() {
		stopControl, err := serveControl(o.qos.control, s)
		if err != nil {
			closeSM()
			return nil, nil, fmt.Errorf("control socket: %w", err)
		}
		closeBoth := closeSM
		closeSM = func() {
			stopControl()
			closeBoth()
		}
	}
	return s, closeSM, nil
}

// sweepOnce is --once and routes --dump: one sweep, its report or the
// forwarding tables, and failure unless the subnet came up.
func sweepOnce(ctx context.Context, s *sm.SM, o *options, stdout, stderr io.Writer) int {
	res, err := s.Sweep(ctx)
	if res != nil && !o.routesCmd {
		report(stdout, res, o.json)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ibsm: %v\n", err)
		return exitFailure
	}
	if o.routesCmd && s.Routes() != nil {
		if err := sm.DumpRoutes(stdout, &s.Subnet().Fabric, s.Routes()); err != nil {
			fmt.Fprintf(stderr, "ibsm: %v\n", err)
			return exitFailure
		}
	}
	if !res.SubnetUp {
		what := "subnet not up"
		if res.SMState != "Master" && res.SMState != "Discovering" {
			what = "not master" // another SM runs the subnet
		}
		fmt.Fprintf(stderr, "ibsm: %s: %s\n", what, res.Reason)
		return exitFailure
	}
	return exitOK
}

// runDaemon runs the SM until ctx ends, reporting every sweep; it fails
// when the port failed or the last sweep of a master left the subnet down.
func runDaemon(ctx context.Context, s *sm.SM, o *options, stdout, stderr io.Writer) int {
	up := false
	err := s.Run(ctx, func(res *sm.Result) {
		report(stdout, res, o.json)
		// A standby (or disabled) SM's sweep brings nothing up, and
		// needs not: only a master's failure is one.
		up = res.SubnetUp || res.SMState == "Standby" || res.SMState == "NotActive"
		if !up {
			fmt.Fprintf(stderr, "ibsm: subnet not up: %s\n", res.Reason)
		}
	})
	// Run returns only when ctx ends or the port failed.
	if !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "ibsm: %v\n", err)
		return exitFailure
	}
	if !up {
		return exitFailure
	}
	return exitOK
}

// report prints one sweep.
func report(w io.Writer, res *sm.Result, asJSON bool) {
	if asJSON {
		printJSONLine(w, res)
		return
	}
	if res.Event == "assimilation" {
		reportAssimilation(w, res)
		return
	}
	state := "subnet up"
	switch {
	case res.SMState == "Standby" || res.SMState == "NotActive":
		state = "SM " + res.SMState
	case !res.SubnetUp:
		state = "subnet NOT up"
	}
	fmt.Fprintf(w, "sweep %d: %s: %d switches, %d CAs, %d links, SM %s at LID %d\n",
		res.Sweep, state, res.Switches, res.HCAs, res.Links, res.SMState, res.SMLID)
	if res.EntriesComputed > 0 || res.LFTEntries > 0 {
		fmt.Fprintf(w, "  routing %s: %d entries computed", res.Routing, res.EntriesComputed)
		if res.DefaultPorts > 0 {
			fmt.Fprintf(w, " and %d default ports", res.DefaultPorts)
		}
		fmt.Fprintf(w, ", %d LFT entries up to LID %d, deadlock-free %v\n", res.LFTEntries, res.MaxLID, res.DeadlockFree)
	}
	if m := res.Multipath; m != nil {
		fmt.Fprintf(w, "  multipath: %d LIDs per port in %d layers, %d of %d alias routes fell back (%d up*/down*, %d reserved), mean hops by layer %v, alias paths disjoint from the base %v\n",
			m.Aliases, m.Layers, m.Fallbacks, m.Trees, m.Updn, m.Reserve, m.MeanHops, m.Disjoint)
	}
	if r := res.AR; r != nil {
		reportARResult(w, r)
	}
	if r := res.Partitions; r != nil {
		reportPartitionResult(w, r)
	}
	if c := res.CC; c != nil {
		fmt.Fprintf(w, "  cc: %d nodes (%d read), %d Sets, %d keys set, %d key failures, %d failures, %d log entries\n",
			c.Nodes, c.Read, c.Sets, c.KeySets, c.KeyFailures, c.Failures, c.LogEntries)
	}
	for _, p := range res.Phases {
		fmt.Fprintf(w, "  %-13s %10.3f ms %7d SMPs", p.Name, p.Ms, p.SMPs)
		if p.Retries > 0 || p.Timeouts > 0 {
			fmt.Fprintf(w, " (%d retries, %d timeouts)", p.Retries, p.Timeouts)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  %-13s %10.3f ms %7d SMPs\n", "total", res.MsTotal, res.SMPsTotal)
	for _, x := range res.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", x)
	}
	if !res.SubnetUp && res.Reason != "" {
		fmt.Fprintf(w, "  reason: %s\n", res.Reason)
	}
}

// printJSONLine prints v as one JSON line, or an error event in its
// place.
func printJSONLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "{\"event\":\"error\",\"error\":%q}\n", err.Error())
		return
	}
	fmt.Fprintf(w, "%s\n", b)
}
