package ibfabcli

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"ibfab/topologies"
)

const topoSynopsis = "topo <kind> [flags]"

// topoKind is one "ibfab topo" subcommand.
type topoKind struct {
	name     string
	synopsis string // after "ibfab "
	desc     string
	run      func(env *Env, k *topoKind, args []string) error
}

// generatorKind builds a topoKind that generates a topology: setup defines
// the kind's flags and returns the generator; required flags must be given.
func generatorKind(name, synopsis, desc string, required []string,
	setup func(fs *flag.FlagSet) func() (*topologies.Topology, error)) topoKind {
	return topoKind{name: name, synopsis: synopsis, desc: desc,
		run: func(env *Env, k *topoKind, args []string) error {
			cmd := "topo " + k.name
			fs := flagSet(cmd)
			out := fs.String("o", "", "write the topology to `FILE` instead of standard output")
			var rate topologies.Rate
			fs.TextVar(&rate, "rate", topologies.Rate{}, "every link's `RATE`, e.g. 4xNDR, 2xNDR, 4xXDR (default 4xSDR)")
			generate := setup(fs)
			if help, err := parseFlags(env, fs, cmd, k.synopsis, k.desc, args, 0); help || err != nil {
				return err
			}
			set := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
			for _, r := range required {
				if !set[r] {
					return &UsageError{Cmd: cmd, Usage: k.synopsis, Err: fmt.Errorf("missing --%s", r)}
				}
			}
			t, err := generate()
			if err == nil {
				err = t.SetRate(rate)
			}
			if errors.Is(err, topologies.ErrInvalid) {
				return &UsageError{Cmd: cmd, Usage: k.synopsis, Err: err}
			}
			if err == nil {
				if *out == "" {
					err = topologies.Write(env.Stdout, t)
				} else {
					err = topologies.WriteFile(*out, t)
				}
			}
			if err != nil {
				return &CommandError{Cmd: cmd, Err: err}
			}
			return nil
		}}
}

var topoKinds = []topoKind{
	generatorKind("fattree", "topo fattree --leaves L --spines S --hosts H [-o FILE]",
		"A two-level fat tree: L leaf switches with H hosts each, every leaf cabled to each of S spines.",
		[]string{"leaves", "spines", "hosts"},
		func(fs *flag.FlagSet) func() (*topologies.Topology, error) {
			l := fs.Int("leaves", 0, "number of leaf switches")
			s := fs.Int("spines", 0, "number of spine switches")
			h := fs.Int("hosts", 0, "hosts (single-port CAs) per leaf")
			return func() (*topologies.Topology, error) { return topologies.FatTree(*l, *s, *h) }
		}),
	generatorKind("irregular", "topo irregular --switches N [--ports P] [--hosts H] [--seed K] [-o FILE]",
		"A random irregular network as in the thesis: N switches of P ports in a connected random\n"+
			"graph, and up to H hosts on each switch's free ports. A seed always gives the same network.",
		[]string{"switches"},
		func(fs *flag.FlagSet) func() (*topologies.Topology, error) {
			n := fs.Int("switches", 0, "number of switches")
			p := fs.Int("ports", 4, "ports per switch")
			h := fs.Int("hosts", 1, "hosts per switch, as free ports allow")
			seed := fs.Uint64("seed", 1, "random seed")
			return func() (*topologies.Topology, error) { return topologies.Irregular(*n, *p, *h, *seed) }
		}),
	generatorKind("ktree", "topo ktree --k K --n N [-o FILE]",
		"A k-ary n-tree: N levels of K^(N-1) switches with 2K ports, and K^N hosts.",
		[]string{"k", "n"},
		func(fs *flag.FlagSet) func() (*topologies.Topology, error) {
			k := fs.Int("k", 0, "arity: down ports per switch")
			n := fs.Int("n", 0, "number of switch levels")
			return func() (*topologies.Topology, error) { return topologies.KAryNTree(*k, *n) }
		}),
	generatorKind("rlft", "topo rlft --k K --stages N [-o FILE]",
		"A real-life fat tree RLFT(K, N) (seed 003): N stages of 2K-port switches, 2K^N hosts;\n"+
			"below the top K ports go down and K up, the top's 2K ports all go down. K=2 N=3 is\n"+
			"16 hosts and 20 switches, K=3 54 and 45, K=4 128 and 80. Switches are s<stage>-<position>\n"+
			"(stage 1: leaves), hosts h<index> in leaf order.",
		[]string{"k", "stages"},
		func(fs *flag.FlagSet) func() (*topologies.Topology, error) {
			k := fs.Int("k", 0, "half the switch port count: down (and up) ports per switch below the top")
			n := fs.Int("stages", 0, "number of switch stages")
			return func() (*topologies.Topology, error) { return topologies.RLFT(*k, *n) }
		}),
	generatorKind("torus", "topo torus --dims X,Y[,Z] [-o FILE]",
		"A 2-D or 3-D torus of switches, one host each; size-2 dimensions get no second cable.",
		[]string{"dims"}, gridSetup(topologies.Torus)),
	generatorKind("mesh", "topo mesh --dims X,Y[,Z] [-o FILE]",
		"A 2-D or 3-D mesh of switches, one host each.",
		[]string{"dims"}, gridSetup(topologies.Mesh)),
	generatorKind("thesis8", "topo thesis8 [-o FILE]",
		"The thesis's 8-switch, 7-host example network, ibfab's default fabric.",
		nil,
		func(fs *flag.FlagSet) func() (*topologies.Topology, error) {
			return func() (*topologies.Topology, error) { return topologies.Thesis8(), nil }
		}),
	generatorKind("dumbbell", "topo dumbbell [-o FILE]",
		"The QoS experiment's fabric (ibfab run qos): sw1 with sm0, a1, a2, a3; sw2 with b1, b2;\n"+
			"two parallel links between the switches.",
		nil,
		func(fs *flag.FlagSet) func() (*topologies.Topology, error) {
			return func() (*topologies.Topology, error) { return topologies.Dumbbell(), nil }
		}),
	{name: "thesis8-piece", synopsis: "topo thesis8-piece [-o FILE]",
		desc: "The thesis's added switch sw16 with hosts ca17 and ca18, cabled to the free ports\n" +
			"sw8[3] and sw9[3] of thesis8: a piece for ibfab add.",
		run: runThesis8Piece},
	{name: "check", synopsis: "topo check FILE",
		desc: "Validate a topology file and print its switches, CAs, routers, links and diameter.\n" +
			"A bad file fails with the error and the line it is on.",
		run: runCheck},
}

func gridSetup(gen func(dims ...int) (*topologies.Topology, error)) func(fs *flag.FlagSet) func() (*topologies.Topology, error) {
	return func(fs *flag.FlagSet) func() (*topologies.Topology, error) {
		dims := fs.String("dims", "", "sizes per dimension, comma-separated (`X,Y[,Z]`)")
		return func() (*topologies.Topology, error) {
			var sizes []int
			for _, f := range strings.Split(*dims, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil {
					return nil, fmt.Errorf("%w: --dims %q: want sizes such as 4,4 or 4,4,4", topologies.ErrInvalid, *dims)
				}
				sizes = append(sizes, n)
			}
			return gen(sizes...)
		}
	}
}

func runTopo(env *Env, args []string) error {
	if len(args) == 0 {
		return &UsageError{Cmd: "topo", Usage: topoSynopsis, Err: errors.New("missing topology kind")}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(env.Stdout, "usage: ibfab %s\n\nkinds:\n", topoSynopsis)
		for _, k := range topoKinds {
			fmt.Fprintf(env.Stdout, "  ibfab %s\n", k.synopsis)
		}
		fmt.Fprintln(env.Stdout, "\nrun 'ibfab topo <kind> -h' for a kind's flags")
		return nil
	}
	for i := range topoKinds {
		if k := &topoKinds[i]; k.name == args[0] {
			return k.run(env, k, args[1:])
		}
	}
	return &UsageError{Cmd: "topo", Usage: topoSynopsis, Err: fmt.Errorf("unknown topology kind %q", args[0])}
}

func runCheck(env *Env, k *topoKind, args []string) error {
	cmd := "topo check"
	fs := flagSet(cmd)
	if help, err := parseFlags(env, fs, cmd, k.synopsis, k.desc, args, 1); help || err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return &UsageError{Cmd: cmd, Usage: k.synopsis, Err: errors.New("missing FILE")}
	}
	file := fs.Arg(0)
	t, err := topologies.ParseFile(file)
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	if !t.Connected() {
		return &CommandError{Cmd: cmd, Err: fmt.Errorf("%s: the fabric is not connected", file)}
	}
	fmt.Fprintf(env.Stdout, "%s: %d switches, %d CAs, %d routers, %d links, diameter %d links",
		file, t.Count(topologies.Switch), t.Count(topologies.CA), t.Count(topologies.Router), t.NumLinks(), t.Diameter())
	if d := t.SwitchDiameter(); d >= 0 {
		fmt.Fprintf(env.Stdout, " (%d between switches)", d)
	}
	fmt.Fprintln(env.Stdout)
	return nil
}
