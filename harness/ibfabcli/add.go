package ibfabcli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/topologies"
)

const (
	addSynopsis = "add N -f PIECE [--timeout D]"
	addDesc     = `
Adds nodes and links to running fabric N, as plugging in a switch with its
hosts would: PIECE is a net file (the format of ibfab topo and ibnetdiscover)
with the records of the new nodes. A port line naming a node the file does
not define cables that port to a port of the running fabric, which must be a
free port of a switch; links among the new nodes are listed by both ends as
usual. Example (the thesis's added switch, 'ibfab topo thesis8-piece'):

  switchguid=0x2fab00000001000
  Switch  4 "sw16"
  [1]     "ca17"[1]
  [2]     "sw8"[3]        # a free port of the running sw8
  [3]     "ca18"[1]
  [4]     "sw9"[3]

  caguid=0x2fab00000001100
  Ca      1 "ca17"
  [1]     "sw16"[1]
  ...

The piece is checked against the fabric's recorded topology first (names
and GUIDs unique, ports exist and are free, one rate per node, every new
node reachable from the fabric). Then ibfab makes the new namespaces and
veths, starts the new processes, opens the new ports in the running switches
(their SMAs report the state change to the SM: PortStateChange, Trap 128)
and waits until every new link has trained (LinkUp, Init); an SM makes them
Active. Afterwards status, kill, restart, link, fault, capture and down know
the new nodes.`
)

// runThesis8Piece writes topologies.Thesis8AddPiece as a piece file.
func runThesis8Piece(env *Env, k *topoKind, args []string) error {
	cmd := "topo " + k.name
	fs := flagSet(cmd)
	out := fs.String("o", "", "write the piece to `FILE` instead of standard output")
	if help, err := parseFlags(env, fs, cmd, k.synopsis, k.desc, args, 0); help || err != nil {
		return err
	}
	var b bytes.Buffer
	err := topologies.WritePiece(&b, topologies.Thesis8AddPiece())
	if err == nil {
		if *out == "" {
			_, err = env.Stdout.Write(b.Bytes())
		} else {
			err = os.WriteFile(*out, b.Bytes(), 0o644)
		}
	}
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	return nil
}

func runAdd(env *Env, args []string) error {
	const cmd = "add"
	fs := flagSet(cmd)
	file := fs.String("f", "", "the piece: a net `FILE` with the new nodes and their cables")
	timeout := fs.Duration("timeout", 0, "how long to wait for the new links to train (default 30s + 100ms per new node)")
	pos, help, err := parseInterspersed(env, fs, cmd, addSynopsis, addDesc, args)
	if help || err != nil {
		return err
	}
	if len(pos) != 1 {
		return &UsageError{Cmd: cmd, Usage: addSynopsis, Err: errors.New("want a fabric name")}
	}
	if *file == "" {
		return &UsageError{Cmd: cmd, Usage: addSynopsis, Err: errors.New("missing -f PIECE")}
	}
	if err := fabricnet.CheckFabricName(pos[0]); err != nil {
		return &UsageError{Cmd: cmd, Usage: addSynopsis, Err: err}
	}
	p, err := topologies.ParsePieceFile(*file)
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	u, err := harness.Add(pos[0], p, harness.AddOptions{Timeout: *timeout})
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	var cables []string
	for _, a := range p.Attachments {
		cables = append(cables, fmt.Sprintf("%s[%d]-%s[%d]", a.Node, a.Port, a.BaseNode, a.BasePort))
	}
	pt := p.Topology
	fmt.Fprintf(env.Stdout, "added to fabric %s: %d switches, %d HCAs, %d links among them and %d to the fabric (%s), trained (Init); the fabric has %d nodes\n",
		pos[0], pt.Count(topologies.Switch), pt.Count(topologies.CA), pt.NumLinks(), len(p.Attachments), strings.Join(cables, ", "), u.NumNodes())
	fmt.Fprintf(env.Stdout, "next: an SM makes the new ports Active; 'ibfab status --name %s' shows them\n", pos[0])
	return nil
}
