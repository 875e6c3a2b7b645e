package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"ibfab/topologies"
)

// What a fabric costs in memory, from measurements (docs/results.md,
// 2026-12-03): a node process's proportional set size is 2.6 MiB on a
// 296-process fat tree, and a namespace with its veth ends and packet
// sockets costs the kernel some more; on the management plane 9,200
// nodes take 104 MiB before an SM and 271 MiB once OpenSM has filled
// every switch's forwarding table, which grows with the LIDs (the
// estimate gives 273 MiB).
const (
	processBytes   = 4 << 20  // a node process and its namespace
	linkBytes      = 64 << 10 // a veth pair, its queues and sockets
	mgmtNodeBytes  = 28 << 10 // a node's agent on the management plane
	mgmtEntryBytes = 2        // a forwarding-table entry, per switch and LID
	// memoryShare is the part of the available memory a fabric may take:
	// the SMs and tools that drive it need the rest.
	memoryShare = 0.8
)

// EstimateMemory returns the bytes fabric t needs on plane.
func EstimateMemory(t *topologies.Topology, plane Plane) uint64 {
	nodes := uint64(t.NumNodes())
	if plane == PlaneMgmt {
		return nodes*mgmtNodeBytes + uint64(t.Count(topologies.Switch))*nodes*mgmtEntryBytes
	}
	return nodes*processBytes + uint64(t.NumLinks())*linkBytes
}

// memAvailable is MemAvailable of /proc/meminfo, in bytes; a variable
// for the unit tests.
var memAvailable = func() (uint64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "MemAvailable:" {
			kb, err := strconv.ParseUint(string(f[1]), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no MemAvailable")
}

// checkMemory refuses a fabric that would not fit in the memory
// available, before anything is created, with the estimate.
func checkMemory(t *topologies.Topology, plane Plane) error {
	avail, err := memAvailable()
	if err != nil {
		return nil // no figure to refuse by: let the fabric try
	}
	need := EstimateMemory(t, plane)
	if float64(need) <= memoryShare*float64(avail) {
		return nil
	}
	hint := ""
	if plane == PlaneProcess {
		hint = fmt.Sprintf("; the management plane (--plane mgmt) would need about %s", gib(EstimateMemory(t, PlaneMgmt)))
	}
	return fmt.Errorf("a fabric of %d nodes and %d links needs about %s on the %v plane, more than %.0f%% of the %s this machine has available%s",
		t.NumNodes(), t.NumLinks(), gib(need), plane, memoryShare*100, gib(avail), hint)
}

// gib writes n bytes in GiB, or MiB below one GiB.
func gib(n uint64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
