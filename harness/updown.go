package harness

import (
	"fmt"

	"ibfab/internal/fabricnet"
	"ibfab/topologies"
)

const (
	upSynopsis = "up [-f TOPO] [--name N]"
	upDesc     = `
Brings a fabric up: one network namespace per node (ibf-<N>-<node>) and one
veth pair per link, the ends named p<port> in the two nodes' namespaces, all
through netlink. Without -f the built-in default fabric (the thesis's
8-switch/7-host network) is used. State is kept in /run/ibfab/<N>/.
For now only the namespaces and links come up: the switch and HCA processes
that run on them are the next step.`
	downSynopsis = "down [--name N]"
	downDesc     = `
Takes a fabric down: removes every namespace and veth ibfab up created, also
when the harness that brought it up crashed (namespaces are found by name).`
)

func runUp(env *Env, args []string) error {
	const cmd = "up"
	fs := flagSet(cmd)
	file := fs.String("f", "", "topology `FILE` (default: the built-in default fabric)")
	name := fs.String("name", defaultName, "fabric `N`ame: a-z, 0-9 and _")
	if help, err := parseFlags(env, fs, cmd, upSynopsis, upDesc, args, 0); help || err != nil {
		return err
	}
	if err := fabricnet.CheckFabricName(*name); err != nil {
		return &UsageError{Cmd: cmd, Usage: upSynopsis, Err: err}
	}
	t := topologies.Default()
	if *file != "" {
		var err error
		if t, err = topologies.ParseFile(*file); err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
	}
	progress := func(done, total int) {
		if total >= 100 && (done%50 == 0 || done == total) {
			fmt.Fprintf(env.Stderr, "ibfab up: %d/%d namespaces and links\n", done, total)
		}
	}
	st, err := Up(*name, t, progress)
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	fmt.Fprintf(env.Stdout, "fabric %s up: %d switches, %d CAs, %d links in namespaces ibf-%s-*\n",
		st.Fabric, t.Count(topologies.Switch), t.Count(topologies.CA), t.NumLinks(), st.Fabric)
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
	if err := Down(*name); err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	fmt.Fprintf(env.Stdout, "fabric %s down\n", *name)
	return nil
}
