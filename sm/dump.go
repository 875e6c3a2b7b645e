package sm

import (
	"bufio"
	"fmt"
	"io"

	"ibfab/sm/routing"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// DumpRoutes writes r's tables in the layout of ibroute's unicast dump,
// one switch after another in topology order, so that the output of
// `ibroute <switch LID>` run against the configured subnet compares line
// for line with the switch's section. Destinations are named from the
// fabric (type, port GUID, NodeDescription), as ibroute queries them.
func DumpRoutes(w io.Writer, f *routing.Fabric, r *routing.Routes) error {
	bw := bufio.NewWriter(w)
	for _, s := range f.Switches() {
		dumpSwitch(bw, f, r, s)
	}
	return bw.Flush()
}

func dumpSwitch(w *bufio.Writer, f *routing.Fabric, r *routing.Routes, s int) {
	n := f.Topo.Node(s)
	fmt.Fprintf(w, "Unicast lids [0x0-0x%x] of switch Lid %d guid 0x%016x (%s):\n", r.MaxLID, f.LID[s][0], n.GUID, describe(n))
	fmt.Fprintf(w, "  Lid  Out   Destination\n")
	fmt.Fprintf(w, "       Port     Info \n")
	valid := 0
	for lid := 0; lid <= int(r.MaxLID); lid++ {
		port := r.LFT[s][lid]
		if port == mad.LFTNoPort || int(port) > n.NumPorts {
			continue
		}
		valid++
		fmt.Fprintf(w, "0x%04x %03d : %s\n", lid, port, destination(f, uint16(lid)))
	}
	fmt.Fprintf(w, "%d valid lids dumped \n", valid)
}

// destination names the owner of lid as ibroute does.
func destination(f *routing.Fabric, lid uint16) string {
	i, ok := f.Owner(lid)
	if !ok {
		return "(unknown node and type)"
	}
	e := f.Ends()[i]
	n := f.Topo.Node(e.Node)
	guid := n.Ports[e.Port].GUID
	if n.Type == topologies.Switch {
		guid = n.GUID
	}
	if k := int(lid - e.LID); k > 0 {
		return fmt.Sprintf("(path #%d out of %d: portguid 0x%016x)", k+1, e.NumLIDs(), guid)
	}
	kind := map[topologies.NodeType]string{topologies.CA: "Channel Adapter", topologies.Switch: "Switch",
		topologies.Router: "Router"}[n.Type]
	return fmt.Sprintf("(%s portguid 0x%016x: '%s')", kind, guid, describe(n))
}

func describe(n *topologies.Node) string {
	if n.Description != "" {
		return n.Description
	}
	return n.Name
}
