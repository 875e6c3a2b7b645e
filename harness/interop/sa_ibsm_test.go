package interop_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/topologies"
)

// saIBSMQueries are the saquery queries TestSAIBSM asks both SMs: nodes
// by LID, links, a path between two LIDs, the SMs, port and switch info,
// a switch's LFT, the SM ports (capability mask match), multicast groups
// and members (the IPoIB broadcast group both SMs create at start),
// services and subscriptions (none), GUIDInfo, MFTs (none: no member),
// P_Key tables (refused without the SM_Key, given with it) and the SA's
// ClassPortInfo, and whole tables: every node, link, port and path, every
// switch's SwitchInfo and LFT (RMPP transfers of many segments, which the
// umad shim reassembles for saquery as the kernel does).
func saIBSMQueries(lid func(string) uint16) [][]string {
	s := func(n string) string { return strconv.Itoa(int(lid(n))) }
	q := append([][]string{{"NR", s("ca1")}, {"NR", s("sw1")}}, madrouteSAQueries(lid)...)
	return append(q, []string{"-g"}, []string{"-m"}, []string{"-S"}, []string{"-I"}, []string{"GIR", s("ca1")},
		[]string{"GIR", s("sw1")}, []string{"MFTR"}, []string{"PKTR", s("ca1")},
		[]string{"--smkey", "1", "PKTR", s("ca1")}, []string{"--smkey", "1", "PKTR", s("sw1")}, []string{"-c"},
		[]string{"PR"}, []string{"NR"}, []string{"LR"}, []string{"PIR"}, []string{"SWIR"}, []string{"LFTR"})
}

// saIBSMDiffer are the record fields that differ between OpenSM's SA and
// ibsm's on this fabric, and why; every other field must be equal (the
// silicon fields TestMadrouteSAQuery leaves out are allowed to differ
// too, and do not here). Fields that could differ on other fabrics:
// NodeInfo's LocalPortNum of a switch (OpenSM keeps the port its Get
// entered by, ibsm gives 0), Revision (ibsm's view does not keep it),
// SwitchInfo's LinearFDBTop (OpenSM's top LID, ibsm's route set's MaxLID)
// and a PathRecord's PacketLifeTime (OpenSM can add hops to it).
var saIBSMDiffer = map[string]string{
	"ActCount": "SMInfoRecord: each SM's own activity counter",
	// ClassPortInfo (-c): what each SA says of itself.
	"Capability mask": "ClassPortInfo: OpenSM sets IsSubnetGetSetNoticeSupported, ibsm IsSubnetTrapSupported " +
		"(it sends Reports) and IsSubnetOptionalRecordsSupported",
	"Capability mask 2": "ClassPortInfo: OpenSM's QoS, alias GUID, extended speed … bits; ibsm has " +
		"IsMulticastFDBTopSupported only",
	"Response time value": "ClassPortInfo: OpenSM 16, ibsm 18",
}

// TestSAIBSM asks OpenSM's SA and ibsm's the same saquery queries on one
// fabric (OpenSM first, then ibsm taking the subnet over with the LIDs
// OpenSM gave) and compares the records field by field, less the fields
// of saIBSMDiffer (and the silicon fields TestMadrouteSAQuery leaves
// out). saquery, and OpenSM, run through the umad shim: every table is
// compared whole.
func TestSAIBSM(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	fabrictest.ShimLibrary(t)
	topo := madrouteTopo(t)
	f := fabrictest.Up(t, "saib", topo, harness.UpOptions{})
	osm := f.StartOpenSMShim("ca0")
	osm.WaitLog(t, madrouteWait, 0, "SUBNET UP")
	lid := madrouteLIDs(t, topo, osm.GUID2LID(t))
	underOpenSM := map[string]string{}
	for _, q := range saIBSMQueries(lid) {
		underOpenSM[strings.Join(q, " ")] = saquery(t, f, "ca2", q)
	}
	require.NoError(t, osm.D.Stop())

	startIBSM(t, f, "ca0")
	time.Sleep(time.Second)                     // the ports learn the new SM's LID
	for _, at := range []string{"ca2", "ca0"} { // another HCA, and ibsm's own
		for _, q := range saIBSMQueries(lid) {
			name := strings.Join(q, " ")
			t.Run(at+" "+name, func(t *testing.T) {
				got := saquery(t, f, at, q)
				t.Logf("OpenSM:\n%s\nibsm:\n%s", underOpenSM[name], got)
				if strings.HasPrefix(underOpenSM[name], "error: ") || strings.HasPrefix(got, "error: ") {
					assert.Equal(t, underOpenSM[name], got, "both SAs fail the query alike")
					return
				}
				w, g := madrouteRecords(underOpenSM[name]), madrouteRecords(got)
				if q[0] == "-c" {
					w, g = saClassPortInfo(underOpenSM[name]), saClassPortInfo(got)
					require.Len(t, w, 1, "OpenSM's ClassPortInfo")
				}
				require.Len(t, g, len(w), "records")
				for i := range w {
					for k := range union(w[i], g[i]) {
						if w[i][k] == g[i][k] {
							continue
						}
						why, ok := saIBSMDiffer[k]
						if !ok && madrouteDeviceFields[k] {
							why, ok = "the simulated device", true
						}
						if assert.True(t, ok, "record %d field %s: OpenSM %q, ibsm %q", i, k, w[i][k], g[i][k]) {
							t.Logf("record %d field %s differs (%s): OpenSM %q, ibsm %q", i, k, why, w[i][k], g[i][k])
						}
					}
				}
			})
		}
	}
}

// union returns the keys of a and b.
func union(a, b map[string]string) map[string]bool {
	u := map[string]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

// saquery runs saquery q at node through the umad shim: its output, or
// "error: " and the SA status it reported.
func saquery(t *testing.T, f *fabrictest.Fabric, node string, q []string) string {
	t.Helper()
	stdout, stderr, err := f.Shim(node, append([]string{"saquery"}, q...)...)
	if err == nil {
		return stdout
	}
	if i := strings.Index(stderr, "Query result returned"); i >= 0 {
		return "error: " + strings.TrimSpace(stderr[i:])
	}
	t.Fatalf("saquery %v: %v\n%s%s", q, err, stdout, stderr)
	return ""
}

// saClassPortInfo reads saquery -c's answer as one record.
func saClassPortInfo(out string) []map[string]string {
	i := strings.Index(out, "SA ClassPortInfo:")
	if i < 0 {
		return nil
	}
	return madrouteRecords("ClassPortInfo Record dump:" + out[i+len("SA ClassPortInfo:"):])
}

// TestSAShimTables: on a fat tree of 162 nodes (18 switches, 144 HCAs)
// saquery through the umad shim gets whole tables, RMPP transfers of
// about 90 segments (more than one receive window), from OpenSM's SA
// (OpenSM through the shim too, the endpoint segmenting for it as the
// kernel does) and then from ibsm's (which segments them itself, over
// the ibsim client protocol, for the endpoint to reassemble): NR every
// node, LR every link end, PIR at least every CA port and switch port 0.
func TestSAShimTables(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	fabrictest.ShimLibrary(t)
	topo, err := topologies.FatTree(12, 6, 12)
	require.NoError(t, err)
	require.Equal(t, 162, topo.NumNodes())
	f := fabrictest.Up(t, "satables", topo, harness.UpOptions{})
	hosts := f.Hosts()
	tables := func(t *testing.T) {
		for _, at := range []string{hosts[len(hosts)-1], hosts[0]} {
			start := time.Now()
			out := f.MustShim(at, "saquery", "NR")
			n := strings.Count(out, "NodeRecord dump:")
			t.Logf("saquery NR at %s: %d records in %v", at, n, time.Since(start).Round(time.Millisecond))
			assert.Equal(t, topo.NumNodes(), n, "saquery NR at %s", at)
		}
		out := f.MustShim(hosts[1], "saquery", "LR")
		assert.Equal(t, 2*(144+6*12), strings.Count(out, "LinkRecord dump:"), "a LinkRecord per link end")
		out = f.MustShim(hosts[1], "saquery", "PIR")
		t.Logf("saquery PIR: %d PortInfoRecords", strings.Count(out, "PortInfoRecord dump:"))
		assert.GreaterOrEqual(t, strings.Count(out, "PortInfoRecord dump:"), 144+18, "at least one per CA port and switch port 0")
	}
	osm := f.StartOpenSMShim(hosts[0])
	osm.WaitLog(t, 2*madrouteWait, 0, "SUBNET UP")
	t.Run("opensm", tables)
	require.NoError(t, osm.D.Stop())
	ibsm := startIBSM(t, f, hosts[0])
	defer func() { _ = ibsm.Stop() }()
	t.Run("ibsm", tables)
}
