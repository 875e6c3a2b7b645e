package topologies

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
)

// Write writes t in the net file format, laid out as ibnetdiscover prints
// it, so that Parse and ibsim both read it back unchanged:
//
//   - every node is preceded by its vendid=, devid=, sysimgguid= and
//     switchguid=, caguid= or rtguid= lines, which ibsim honours, so ibsim's
//     GUIDs are ours. ibsim derives a CA's port GUIDs from the node GUID
//     (GUID plus port number), so other port GUIDs survive only our parser;
//   - every port line ends with the peer's description and the link rate
//     ("4xQDR"), which ibsim reads on switch and CA lines; router lines also
//     get the w= and s= (and e=) options, the only form ibsim reads there
//     (so an FDR10 router link comes up QDR in ibsim);
//   - nodes are written in order, except that when the first node is not a
//     CA the first CA is written first, because ibsim puts the subnet
//     manager's port on the first node of the file.
//
// ibsim 0.10 keeps 63 bytes of a description and knows speeds up to HDR.
func Write(w io.Writer, t *Topology) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# ibfab topology: %d switches, %d CAs, %d routers, %d links\n",
		t.Count(Switch), t.Count(CA), t.Count(Router), t.NumLinks())
	fmt.Fprintf(bw, "# ibnetdiscover format; ibsim loads it with its SM port on the first node.\n")
	for _, i := range writeOrder(t) {
		writeNode(bw, t, i)
	}
	return bw.Flush()
}

// WriteFile writes t to the named file with Write.
func WriteFile(name string, t *Topology) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := Write(f, t); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeOrder returns node indexes in the order Write writes them.
func writeOrder(t *Topology) []int {
	order := make([]int, t.NumNodes())
	for i := range order {
		order[i] = i
	}
	if t.NumNodes() > 0 && t.nodes[0].Type != CA {
		if c := slices.IndexFunc(t.nodes, func(n *Node) bool { return n.Type == CA }); c > 0 {
			order = append([]int{c}, slices.Delete(order, c, c+1)...)
		}
	}
	return order
}

func writeNode(w *bufio.Writer, t *Topology, i int) { writeNodeWith(w, t, i, nil) }

// writeNodeWith is writeNode, also writing the ports extra cables (those
// of a Piece to its base fabric).
func writeNodeWith(w *bufio.Writer, t *Topology, i int, extra func(port int) (*Node, int, Link, bool)) {
	n := t.nodes[i]
	fmt.Fprintf(w, "\nvendid=%#x\ndevid=%#x\nsysimgguid=%#x\n", n.VendorID, n.DeviceID, n.SystemImageGUID)
	switch n.Type {
	case Switch:
		port0 := "base"
		if n.EnhancedPort0 {
			port0 = "enhanced"
		}
		fmt.Fprintf(w, "switchguid=%#x(%x)\n", n.GUID, n.GUID)
		fmt.Fprintf(w, "Switch\t%d \"%s\"\t\t# \"%s\" %s port 0 lid %d lmc %d\n",
			n.NumPorts, n.Name, n.Description, port0, n.Ports[0].LID, n.Ports[0].LMC)
	case CA:
		fmt.Fprintf(w, "caguid=%#x\nCa\t%d \"%s\"\t\t# \"%s\"\n", n.GUID, n.NumPorts, n.Name, n.Description)
	case Router:
		fmt.Fprintf(w, "rtguid=%#x\nRt\t%d \"%s\"\t\t# \"%s\"\n", n.GUID, n.NumPorts, n.Name, n.Description)
	}
	for p := 1; p <= n.NumPorts; p++ {
		l := t.portLink[i][p]
		if l < 0 {
			if extra != nil {
				if pn, pp, link, ok := extra(p); ok {
					writePort(w, t, n, p, pn, pp, link)
				}
			}
			continue
		}
		link := t.links[l]
		peer := t.other(l, PortRef{i, p})
		writePort(w, t, n, p, t.nodes[peer.Node], peer.Port, link)
	}
}

func writePort(w *bufio.Writer, t *Topology, n *Node, p int, pn *Node, pp int, link Link) {
	fmt.Fprintf(w, "[%d]", p)
	if e := n.Ports[p].Ext; e != 0 {
		fmt.Fprintf(w, "[ext %d]", e)
	}
	if n.Type != Switch {
		fmt.Fprintf(w, "(%x) ", n.Ports[p].GUID)
	}
	fmt.Fprintf(w, "\t\"%s\"[%d]", pn.Name, pp)
	if e := pn.Ports[pp].Ext; e != 0 {
		fmt.Fprintf(w, "[ext %d]", e)
	}
	if pn.Type != Switch {
		fmt.Fprintf(w, "(%x) ", pn.Ports[pp].GUID)
	}
	if n.Type == Router {
		// Above QDR, enable every base speed and name the extended one.
		s, e := link.Speed&baseSpeeds, extOption(link.Speed)
		if s == 0 {
			s = baseSpeeds
		}
		fmt.Fprintf(w, "\tw=%d s=%d", link.Width, s)
		if e != 0 {
			fmt.Fprintf(w, " e=%d", e)
		}
	}
	peerLID := pn.Ports[pp].LID
	if pn.Type == Switch {
		peerLID = pn.Ports[0].LID
	}
	w.WriteString("\t\t# ")
	if n.Type != Switch {
		fmt.Fprintf(w, "lid %d lmc %d ", n.Ports[p].LID, n.Ports[p].LMC)
	}
	fmt.Fprintf(w, "\"%s\" lid %d %v%v\n", pn.Description, peerLID, link.Width, link.Speed)
}

// extOption returns the e= value enabling s when s is an extended speed.
func extOption(s Speed) int {
	for i, e := range []Speed{SpeedFDR, SpeedEDR, SpeedHDR, SpeedNDR} {
		if s == e {
			return 1 << i
		}
	}
	return 0
}
