// Command ibswitch runs one soft InfiniBand switch of an ibfab fabric; ibfab
// up starts one per switch, in the switch's network namespace. See package
// nodeproc.
package main

import (
	"os"

	"ibfab/nodeproc"
)

func main() { os.Exit(nodeproc.Main(nodeproc.KindSwitch, os.Args[1:], os.Stderr)) }
