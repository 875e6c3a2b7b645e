// Package suites is ibfab's run subcommand: `ibfab run SUITE|all` runs
// the failure-injection suites of package runner, and `ibfab run NAME`
// one of the experiments in the table cmd.go holds, each a package over
// runner's framework. It is the one place that wires the experiments
// into the command, so the framework never imports them.
package suites
