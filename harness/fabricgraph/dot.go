package fabricgraph

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
)

// linkStyle is a link's DOT attributes by its state: green for Active,
// amber for Armed, blue for Init, red and dashed for Down, grey for a
// state no one reported; black when the graph has no state at all.
func linkStyle(state string, stateless bool) string {
	switch {
	case stateless:
		return `color="black"`
	case state == "Active":
		return `color="#2e7d32", penwidth=2`
	case state == "Armed":
		return `color="#f9a825", penwidth=2`
	case state == "Init":
		return `color="#1565c0"`
	case state == "Down":
		return `color="#c62828", style=dashed`
	}
	return `color="#9e9e9e", style=dotted`
}

// quote makes s a DOT quoted ID.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// WriteDOT writes g as an undirected Graphviz graph: switches as boxes,
// CAs as ellipses, a dead node filled grey, each link labelled with its
// port numbers at either end and colored by its state; a fat tree's
// stages each on one rank, the top stage first.
func WriteDOT(w io.Writer, g *Graph) error {
	bw := bufio.NewWriter(w)
	name := g.Fabric
	if name == "" {
		name = "fabric"
	}
	fmt.Fprintf(bw, "graph %s {\n", quote(name))
	fmt.Fprintln(bw, `	graph [rankdir=TB, splines=true, overlap=false];`)
	fmt.Fprintln(bw, `	node [fontname="Helvetica", fontsize=10];`)
	fmt.Fprintln(bw, `	edge [fontname="Helvetica", fontsize=8];`)
	writeNodes(bw, g.Nodes)
	writeRanks(bw, g.Nodes)
	writeLinks(bw, g.Links)
	fmt.Fprintln(bw, "}")
	return bw.Flush()
}

func writeNodes(w io.Writer, nodes []Node) {
	for _, n := range nodes {
		shape := "ellipse"
		if n.Type == KindSwitch {
			shape = "box"
		}
		attrs := fmt.Sprintf("shape=%s, label=%s, tooltip=%s", shape, quote(n.Name), quote(n.Type.String()+" "+n.GUID))
		if n.Alive != nil && !*n.Alive {
			attrs += `, style=filled, fillcolor="#bdbdbd"`
		}
		fmt.Fprintf(w, "\t%s [%s];\n", quote(n.Name), attrs)
	}
}

// writeRanks puts each fat tree stage on one rank, the top stage first.
func writeRanks(w io.Writer, nodes []Node) {
	stages := map[int][]string{}
	for _, n := range nodes {
		if n.Stage > 0 {
			stages[n.Stage] = append(stages[n.Stage], n.Name)
		}
	}
	keys := slices.Sorted(maps.Keys(stages))
	for _, s := range slices.Backward(keys) {
		fmt.Fprint(w, "\t{ rank=same;")
		for _, n := range stages[s] {
			fmt.Fprintf(w, " %s;", quote(n))
		}
		fmt.Fprintln(w, " }")
	}
}

func writeLinks(w io.Writer, links []Link) {
	stateless := !slices.ContainsFunc(links, func(l Link) bool { return l.State != "" })
	for _, l := range links {
		tip := l.Rate
		if l.State != "" {
			tip += " " + l.State
		}
		fmt.Fprintf(w, "\t%s -- %s [taillabel=\"%d\", headlabel=\"%d\", tooltip=%s, %s];\n",
			quote(l.A.Node), quote(l.B.Node), l.A.Port, l.B.Port, quote(tip), linkStyle(l.State, stateless))
	}
}

// ErrNoDot is returned when Graphviz's dot is not installed.
var ErrNoDot = errors.New("SVG needs Graphviz's dot (Debian package graphviz)")

// WriteSVG writes g as SVG, laid out by Graphviz's dot.
func WriteSVG(ctx context.Context, w io.Writer, g *Graph) error {
	path, err := exec.LookPath("dot")
	if err != nil {
		return ErrNoDot
	}
	var in, stderr bytes.Buffer
	if err := WriteDOT(&in, g); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &in, w, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dot -Tsvg: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
