// Package fabricgraph draws a fabric: its topology and, when it runs, the
// state of every port, as Graphviz DOT, as JSON for notebooks and web
// pages (the schema is docs/graph.schema.json), or as SVG through
// Graphviz's dot. `ibfab graph` prints it.
//
// A link's state is the lesser of its two ends' (Down < Init < Armed <
// Active): a link is only as up as its slower side, which is what a user
// looking for the broken cable wants colored. An end that reports nothing
// (its node dead) gives way to the other (LowerState, which the web view
// colors by too). A fat tree's switches carry
// their stage (1 for the leaves), so that a drawing can put each stage on
// its own row as the tree's pictures do.
package fabricgraph
