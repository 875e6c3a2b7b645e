// Package fabrictest runs real fabrics for integration tests: it builds the
// node binaries, brings a fabric up through the harness (namespaces, veths,
// processes), checks that teardown leaves nothing behind, and plays a
// minimal subnet manager from an HCA — hand-built SMPs over the node's
// control socket, with LIDs and shortest-path routes computed from the
// known topology (no discovery) — until the real SM exists. UMAD, MustUMAD
// and StartUMAD run Debian's OpenSM and infiniband-diags against an HCA's
// attach point as `ibfab exec --umad` does. What a fabric needs (root,
// libumad2sim, the Debian programs) is checked through testenv before
// anything starts: a contributor's run skips, make test's fails.
package fabrictest
