// Command ibfab runs an emulated InfiniBand fabric; see package harness.
package main

import (
	"os"

	"ibfab/harness"
	"ibfab/harness/bench"
	"ibfab/harness/suites"
)

func main() {
	harness.Register(suites.Command)
	harness.Register(bench.Command)
	os.Exit(harness.Main(os.Args[1:], os.Stdout, os.Stderr))
}
