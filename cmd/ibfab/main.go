// Command ibfab runs an emulated InfiniBand fabric; see package harness.
package main

import (
	"os"

	"ibfab/harness"
)

func main() {
	os.Exit(harness.Main(os.Args[1:], os.Stdout, os.Stderr))
}
