// Command ibhca runs one soft InfiniBand HCA of an ibfab fabric; ibfab up
// starts one per channel adapter, in the HCA's network namespace. See
// package nodeproc.
package main

import (
	"os"

	"ibfab/nodeproc"
)

func main() { os.Exit(nodeproc.Main(nodeproc.KindHCA, os.Args[1:], os.Stderr)) }
