package ibfabcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness/sysfstree"
)

const (
	sysfsSynopsis = "sysfs [--name N] --dir DIR [--interval 1s] [--once]"
	sysfsDesc     = `
Writes every HCA of the fabric as the kernel's InfiniBand sysfs class lays
it out, DIR/class/infiniband/DEV/ (node files, ports/N/ attributes,
counters/, counters_ext/), DEV being the node's name with any byte other
than a letter, digit, '_', '-' or '.' as '_'. It refreshes the tree every
interval until Ctrl-C or SIGTERM, each file replaced whole (a temporary
file renamed over it), or writes it once with --once. Then
node_exporter --path.sysfs=DIR reads the fabric's HCAs, and so does
ibstatus with DIR/class/infiniband bind-mounted over /sys/class/infiniband
in a private mount namespace (unshare -m).`
)

func runSysfs(env *Env, args []string) error {
	const cmd = "sysfs"
	fs := flagSet(cmd)
	name := fs.String("name", defaultName, "fabric `N`ame")
	dir := fs.String("dir", "", "`DIR`ectory to write class/infiniband under")
	interval := fs.Duration("interval", time.Second, "refresh `interval`")
	once := fs.Bool("once", false, "write the tree once and exit")
	if help, err := parseFlags(env, fs, cmd, sysfsSynopsis, sysfsDesc, args, 0); help || err != nil {
		return err
	}
	usage := func(err error) error { return &UsageError{Cmd: cmd, Usage: sysfsSynopsis, Err: err} }
	switch {
	case *dir == "":
		return usage(errors.New("missing --dir DIR"))
	case *interval <= 0:
		return usage(fmt.Errorf("--interval %v: want a positive duration", *interval))
	}
	if err := fabricnet.CheckFabricName(*name); err != nil {
		return usage(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *once {
		if _, err := sysfstree.Write(ctx, *name, *dir); err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
		return nil
	}
	fmt.Fprintf(env.Stderr, "writing fabric %s's HCAs to %s every %v; Ctrl-C stops\n", *name, sysfstree.Dir(*dir), *interval)
	report := func(err error) { fmt.Fprintf(env.Stderr, "ibfab sysfs: %v (trying again)\n", err) }
	if err := sysfstree.Run(ctx, *name, *dir, *interval, report); err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	return nil
}
