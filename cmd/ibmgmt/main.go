// Command ibmgmt runs every node of an ibfab fabric in one process,
// management plane only; ibfab up --plane mgmt starts it. See package
// mgmtplane.
package main

import (
	"os"

	"ibfab/mgmtplane"
)

func main() { os.Exit(mgmtplane.Main(os.Args[1:], os.Stderr)) }
