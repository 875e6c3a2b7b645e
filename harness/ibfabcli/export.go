package ibfabcli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ibfab/harness/clab"
	"ibfab/topologies"
)

const (
	exportSynopsis = "export containerlab [-f TOPO] --hosts H1,H2,... -o DIR [--place FILE | --split N] [flags]"
	exportDesc     = `
Writes a fabric for containerlab, spread over several machines: in DIR one
topology file per host (HOST.clab.yml, the same lab name in each), the
fabric's topology (topology.net, which every node's container binds) and
the placement used (placement.txt, in --place's format). Every node is a
kind linux container of --image running ibswitch or ibhca with its ports
on eth1..ethN; a link inside a host is a veth pair, a link between hosts a
VXLAN tunnel (VNI --vni-base plus the link's index in the topology, UDP
port --vxlan-port) to the other host's address. --hosts takes ADDR or
NAME=ADDR (names default to h1, h2, ...). Nodes are placed to cut few
links: a CA stays with the switch it is cabled to (a fat tree's leaf with
its hosts), at most --split nodes per host (default an even share and 5 %),
or as --place FILE says ("NODE HOST" lines). A VXLAN keeps its carrier when
the far node dies, so the nodes see that by their liveness timeout
(--liveness, default 1s here); see docs/containerlab.md.`
)

// runExport is "ibfab export"; containerlab is its one format.
func runExport(env *Env, args []string) error {
	const cmd = "export containerlab"
	if len(args) == 0 || args[0] != "containerlab" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintf(env.Stdout, "usage: ibfab %s\n%s\n", exportSynopsis, exportDesc)
			return nil
		}
		return &UsageError{Cmd: "export", Usage: exportSynopsis, Err: errors.New("want a format: containerlab")}
	}
	fs := flagSet(cmd)
	file := fs.String("f", "", "topology `FILE` (default: the built-in default fabric)")
	hostsFlag := fs.String("hosts", "", "the hosts, `ADDR or NAME=ADDR,...`: each gets a file, and the others' VXLAN links point at its address")
	dir := fs.String("o", "", "write the files into `DIR` (made if missing)")
	place := fs.String("place", "", "placement `FILE`: NODE HOST lines")
	split := fs.Int("split", 0, "at most `N` nodes per host when placing them (default: an even share and 5 %)")
	o := clab.Options{Type: clab.VXLANStitch}
	fs.StringVar(&o.Lab, "name", "ibfab", "lab `NAME`, and the fabric's name on the nodes")
	fs.StringVar(&o.Image, "image", clab.DefaultImage, "the node `IMAGE` (make image)")
	fs.TextVar(&o.Type, "link-type", clab.VXLANStitch, "links between hosts: `vxlan-stitch` (a veth into the node stitched to a VXLAN in the host) or vxlan (the VXLAN device in the node)")
	fs.IntVar(&o.VNIBase, "vni-base", clab.DefaultVNIBase, "VNI of the topology's first link; link i gets `BASE`+i")
	fs.IntVar(&o.DstPort, "vxlan-port", clab.DefaultDstPort, "UDP `PORT` of the VXLAN links")
	fs.IntVar(&o.UnderlayMTU, "underlay-mtu", clab.DefaultUnderlayMTU, "MTU of the network between the hosts, `BYTES`")
	fs.IntVar(&o.MTU, "mtu", 0, "the fabric's IBA MTU, `BYTES` (256…4096; default the nodes' 4096)")
	liveness := fs.Duration("liveness", time.Second, "the nodes' link liveness timeout: how soon a far node's death is seen")
	keepalive := fs.Duration("keepalive", 0, "how often an idle link sends a link packet (default --liveness/4)")
	if help, err := parseFlags(env, fs, cmd, exportSynopsis, exportDesc, args[1:], 0); help || err != nil {
		return err
	}
	usage := func(err error) error { return &UsageError{Cmd: cmd, Usage: exportSynopsis, Err: err} }
	switch {
	case *hostsFlag == "":
		return usage(errors.New("missing --hosts"))
	case *dir == "":
		return usage(errors.New("missing -o DIR"))
	case *place != "" && *split != 0:
		return usage(errors.New("--place and --split exclude each other"))
	case *split < 0:
		return usage(fmt.Errorf("--split %d: want a positive number of nodes", *split))
	case *liveness <= 0 || *keepalive < 0:
		return usage(errors.New("--liveness and --keepalive: want positive durations"))
	}
	if *keepalive == 0 {
		*keepalive = *liveness / 4
	}
	o.Liveness, o.Keepalive = liveness.String(), keepalive.String()
	hosts, err := clab.ParseHosts(*hostsFlag)
	if err != nil {
		return usage(fmt.Errorf("--hosts: %w", err))
	}
	t := topologies.Default()
	if *file != "" {
		if t, err = topologies.ParseFile(*file); err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
	}
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Name
	}
	var host []int
	if *place != "" {
		f, err := os.Open(*place)
		if err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
		host, err = clab.ReadPlacement(f, t, names)
		f.Close()
		if err != nil {
			return &CommandError{Cmd: cmd, Err: fmt.Errorf("%s: %w", *place, err)}
		}
	} else {
		capacity := *split
		if capacity == 0 {
			capacity = clab.Capacity(t.NumNodes(), len(hosts))
		}
		if host, err = clab.Place(t, len(hosts), capacity); err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
	}
	files, err := clab.Export(t, hosts, host, o)
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	var pl bytes.Buffer
	if err := clab.WritePlacement(&pl, t, names, host); err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	files = append(files, clab.File{Name: "placement.txt", Data: pl.Bytes()})
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(*dir, f.Name), f.Data, 0o644); err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
	}
	load := make([]int, len(hosts))
	for _, h := range host {
		load[h]++
	}
	cut := clab.CutLinks(t, host)
	for i, h := range hosts {
		fmt.Fprintf(env.Stdout, "%s (%s): %d nodes, %s\n", h.Name, h.Addr, load[i], filepath.Join(*dir, h.Name+".clab.yml"))
	}
	fmt.Fprintf(env.Stdout, "%d of %d links between hosts (%s, VNIs from %d, UDP port %d); copy %s to every host and run 'containerlab deploy -t HOST.clab.yml' on each\n",
		len(cut), t.NumLinks(), o.Type, o.VNIBase, o.DstPort, *dir)
	return nil
}
