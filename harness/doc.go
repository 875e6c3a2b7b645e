// Package harness is the library the ibfab command (harness/ibfabcli) is
// built on: it brings fabrics up and down (Up, Down, Add, Restart, Kill),
// breaks them (SetLink, FlapLink, AddFault, ClearFaults), reports their
// state (Status, ListFaults), runs programs in a node's namespace (Exec)
// and captures or builds their frames (OpenCapture, ConvertEthernet,
// WriteDiscoverySample, FrameDecoder). A fabric's state is on disk under
// RunDir, so every function works from any process, also after the one
// that brought the fabric up died.
//
// The suites (harness/suites) and benchmarks (harness/bench) are written
// against it; the ibfab subcommands they add use the command-line names
// of cli.go (Command, UsageError, ParseFlags), package internal/cli's.
package harness
