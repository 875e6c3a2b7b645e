// Package ibfabcli is the ibfab command: a table of subcommands, each with
// its own flags, run by Main over the harness library (package harness:
// fabric bring-up, faults, links, status, exec, capture), the suites
// (harness/suites) and the benchmarks (harness/bench). cmd/ibfab only
// hands Main its arguments and exits with the status Main returns: 0 on
// success, 1 when a command fails, 2 on bad usage.
//
// The subcommands (ibfab -h lists them, ibfab CMD -h explains one):
//
//	topo      generate a topology file (or thesis8's added piece), or check one
//	up, down  bring a fabric's namespaces, veths and node processes up, or
//	          remove all of it (also after a crash: the state is on disk)
//	status    every port's state, LID, peer and counters (--json is stable)
//	exec      run a command in a node's namespace (--umad: through the
//	          HCA's attach point, for OpenSM and infiniband-diags)
//	kill      SIGKILL a node's process; restart starts it again
//	add       hot-add nodes and links (a piece file) to a running fabric
//	link      set a port's link down or up, or flap it
//	fault     eBPF drop/corrupt/delay rules on a link's frames
//	capture   a port's frames to an ERF pcap (--convert: from tcpdump)
//	pcap      a sample capture built by wire, or decode one
//	run       a failure-injection suite, or the thesis's evaluation
//	          (package harness/suites)
//	bench     the measurement programs (package harness/bench)
//
// A new subcommand is one more entry in the commands table: a name, a
// one-line summary and a Run function that parses its own flags (see
// parseFlags) and returns a *cli.UsageError for bad arguments, a
// *cli.CommandError when it fails.
package ibfabcli
