// Package harness is the ibfab command: a table of subcommands, each with
// its own flags, run by Main. cmd/ibfab only hands Main its arguments and
// exits with the status Main returns: 0 on success, 1 when a command fails,
// 2 on bad usage.
//
// The subcommands so far:
//
//	ibfab topo <kind> [flags]   generate a topology file, or check one
//
// A new subcommand is one more entry in the commands table: a name, a
// one-line summary and a Run function that parses its own flags (see
// parseFlags) and returns a *UsageError for bad arguments.
package harness
