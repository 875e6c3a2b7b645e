package ibfabcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/harness/fabricgraph"
	"ibfab/topologies"
)

const (
	graphSynopsis = "graph [--name N | -f TOPO] [--format dot|json|svg]"
	graphDesc     = `
Draws a fabric: with --name a running fabric's nodes and links with every
port's state (a link is colored by the lesser of its ends' states: green
Active, amber Armed, blue Init, red dashed Down, grey unknown; a dead
node's process is filled grey), with -f a topology file's cabling alone.
--format dot (the default) prints Graphviz DOT ('| dot -Tsvg' renders it),
json one object with the schema of docs/graph.schema.json, svg the
drawing dot makes of it (needs Graphviz). A fat tree's switch stages each
get a rank, the top stage first.`
)

func runGraph(env *Env, args []string) error {
	const cmd = "graph"
	fs := flagSet(cmd)
	name := fs.String("name", "", "running fabric `N`ame (default: "+defaultName+" when -f is not given)")
	file := fs.String("f", "", "topology `FILE` to draw instead of a running fabric")
	format := fabricgraph.FormatDOT
	fs.TextVar(&format, "format", fabricgraph.FormatDOT, "output `FORMAT`: dot, json or svg")
	if help, err := parseFlags(env, fs, cmd, graphSynopsis, graphDesc, args, 0); help || err != nil {
		return err
	}
	if *name != "" && *file != "" {
		return &UsageError{Cmd: cmd, Usage: graphSynopsis, Err: errors.New("--name and -f exclude each other")}
	}
	g, err := graphOf(*name, *file)
	var usage *UsageError
	if errors.As(err, &usage) {
		return err
	}
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	switch format {
	case fabricgraph.FormatJSON:
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(g)
	case fabricgraph.FormatSVG:
		err = fabricgraph.WriteSVG(context.Background(), env.Stdout, g)
	default:
		err = fabricgraph.WriteDOT(env.Stdout, g)
	}
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	return nil
}

// graphOf builds the graph of topology file, or of running fabric name.
func graphOf(name, file string) (*fabricgraph.Graph, error) {
	if file != "" {
		t, err := topologies.ParseFile(file)
		if err != nil {
			return nil, err
		}
		return fabricgraph.FromTopology(t), nil
	}
	if name == "" {
		name = defaultName
	}
	if err := fabricnet.CheckFabricName(name); err != nil {
		return nil, &UsageError{Cmd: "graph", Usage: graphSynopsis, Err: err}
	}
	t, err := harness.Topology(name)
	if err != nil {
		return nil, err
	}
	s, err := harness.Status(context.Background(), name)
	if err != nil {
		return nil, fmt.Errorf("fabric %s: %w", name, err)
	}
	return fabricgraph.WithStatus(t, s), nil
}
