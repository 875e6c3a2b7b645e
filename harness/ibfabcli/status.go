package ibfabcli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"text/tabwriter"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/nodeproc"
)

const (
	statusSynopsis = "status [--name N] [--json] [--vls]"
	statusDesc     = `
Shows every node of a fabric: its process, and for each port the physical
and logical state, the LID, the peer and the main counters. With --vls it
adds each switch's architecture, adaptive routing, buffers and watched
DLIDs, and per port and operational data VL the receive buffer (blocks
held / size), the downstream buffer as the port's credits show it, the
packets queued, PortVLXmitWait (µs), the packets received and watched, and
the port's adapted packets. With --json the output is one object with a
stable schema:
{"fabric":N,"nodes":[{"name","type","guid","pid","alive","switch_config",
"ports":[{"port","guid","phys","state","lid","peer","adapted","counters":{...},
"drops":{...},"credits":[{"vl","rx_used","rx_capacity","down_used",
"down_capacity","queued","xmit_wait","rcv_pkts","watched",...}]}]}]}.`
)

func runStatus(env *Env, args []string) error {
	const cmd = "status"
	fs := flagSet(cmd)
	name := fs.String("name", defaultName, "fabric `N`ame")
	asJSON := fs.Bool("json", false, "print JSON")
	vls := fs.Bool("vls", false, "add the per-VL buffers, downstream views, waits and adaptive routing counts")
	if help, err := parseFlags(env, fs, cmd, statusSynopsis, statusDesc, args, 0); help || err != nil {
		return err
	}
	if err := fabricnet.CheckFabricName(*name); err != nil {
		return &UsageError{Cmd: cmd, Usage: statusSynopsis, Err: err}
	}
	s, err := harness.Status(context.Background(), *name)
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	// A fabric over hosts (up --hosts) names each node's host.
	hosts := slices.ContainsFunc(s.Nodes, func(n harness.NodeStatus) bool { return n.Host > 0 })
	hostCol := func(n harness.NodeStatus) string {
		if !hosts {
			return ""
		}
		return fmt.Sprintf("%d\t", n.Host)
	}
	head := "NODE\tTYPE\tPID\tPORT\tPHYS\tSTATE\tRATE\tLID\tPEER\tXMIT_PKTS\tRCV_PKTS\tDROPS"
	if hosts {
		head = "HOST\t" + head
	}
	fmt.Fprintln(w, head)
	for _, n := range s.Nodes {
		pid := fmt.Sprint(n.PID)
		if !n.Alive {
			pid += " (dead)"
		}
		for _, p := range n.Ports {
			var drops uint64
			for _, v := range p.Drops {
				drops += v
			}
			peer := p.Peer
			if peer == "" {
				peer = "-"
			}
			fmt.Fprintf(w, "%s%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\n", hostCol(n), n.Name, n.Type, pid, p.Port,
				p.Phys, p.State, portRate(p), p.LID, peer, p.Counters.PortXmitPkts, p.Counters.PortRcvPkts, drops)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if *vls {
		fmt.Fprintln(env.Stdout)
		return harness.WriteVLStatus(env.Stdout, s)
	}
	return nil
}

// portRate is a port's trained rate as status prints it: width, speed and
// the data rate the transmitter is paced at ("4X NDR 400Gb/s"), "-" for
// a port that never trained.
func portRate(p nodeproc.PortStatus) string {
	if p.Width == "" || p.Rate == 0 {
		return "-"
	}
	return fmt.Sprintf("%s %s %.4gGb/s", p.Width, p.Speed, float64(p.Rate)/1e9) // 4X FDR: 54.55
}
