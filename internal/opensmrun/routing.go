package opensmrun

import (
	"fmt"
	"os"
	"strings"
)

// updnNoRoot ends the line OpenSM's updn logs when it has no root switch:
// "updn_lid_matrices: disabling UPDN algorithm, no root nodes were found".
const updnNoRoot = "no root nodes were found"

// UpdnFellBack reports whether an OpenSM log says its updn engine found no
// root switch and gave up; OpenSM then routes with minhop. Without a root
// GUID file (-a) updn takes for roots the switches whose hosts are all at
// one distance, and finds none on an irregular network with a host at
// every switch; a root file that names no switch of the fabric does the
// same.
func UpdnFellBack(log string) bool { return strings.Contains(log, updnNoRoot) }

// RoutedWith returns the routing engine whose tables OpenSM put on the
// switches, from the last "osm_ucast_mgr_process: ENGINE tables configured
// on all switches" line of its log ("updn", "minhop", "ftree"), or "" when
// there is none. An engine that fails (updn without a root, ftree on a
// network that is not a fat tree) leaves the work to minhop, and the line
// says so.
func RoutedWith(log string) string {
	const suffix = " tables configured on all switches"
	engine := ""
	for _, line := range strings.Split(log, "\n") {
		line, ok := strings.CutSuffix(line, suffix)
		if !ok {
			continue
		}
		_, name, ok := strings.Cut(line, "-> osm_ucast_mgr_process: ")
		if ok && name != "" && !strings.Contains(name, " ") {
			engine = name
		}
	}
	return engine
}

// WriteRootGUIDs writes an OpenSM root GUID file (opensm -a FILE, the
// root_guid_file option, read by updn and ftree): one GUID a line, in hex
// with 0x.
func WriteRootGUIDs(path string, guids ...uint64) error {
	if len(guids) == 0 {
		return fmt.Errorf("opensmrun: root GUID file %s: no GUID", path)
	}
	var b strings.Builder
	for _, g := range guids {
		fmt.Fprintf(&b, "0x%016x\n", g)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
