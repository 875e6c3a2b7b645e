// Command ibfab runs an emulated InfiniBand fabric; see package
// harness/ibfabcli (its command line) and package harness (the library).
package main

import (
	"os"

	"ibfab/harness/ibfabcli"
)

func main() { os.Exit(ibfabcli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
