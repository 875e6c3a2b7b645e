package interop_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TestPartitionsIBSM gives ibsm and OpenSM one partitions.conf, each on a
// fresh fabric of the same topology (TestPartitions's: ca1-1, where the
// SM runs, and ca1-2 on sw1; ca2-1 and ca2-2 on sw2):
//
//	Default 0x7fff  ipoib   every port full, the switches limited
//	pfull   0x0010          ca1-2, ca2-1 full
//	plim    0x0020          ca1-2, ca2-1 limited; ca2-2 full
//	order   0x0100          ca1-1, ca2-2 full (defmember): OpenSM places it first
//	gen     (0x0001)        ca1-2 limited: a generated P_Key
//	sw      0x0030          the switches full, the SM's port limited
//	idx     0x0040  indx0   ca2-1 full, in its index 0
//
// and compares what every port holds, read with smpquery, record by
// record: each block of each P_Key table (CA ports, switch port 0,
// every switch external port) and each switch port's enforcement bits.
// Under ibsm, flows inside a partition are delivered and flows across
// partitions are dropped, at the switch where a switch port lacks the
// key (counted in PortRcvConstraintErrors or PortXmitConstraintErrors).
// Last, ibsm started on the fabric OpenSM configured finds nothing to
// set.
func TestPartitionsIBSM(t *testing.T) {
	testenv.RequireRoot(t) // the subtests' reason, not "a subtest did not read the tables"
	topo, guid := partTopo(t)
	conf := writePartConf(t, fmt.Sprintf("# one file for both SMs\n"+
		"Default=0x7fff, ipoib : ALL=full, ALL_SWITCHES=limited ;\n"+
		"pfull=0x0010 : 0x%016x=full, 0x%016x=full ;\n"+
		"plim=0x0020 :\n  0x%016x=limited, 0x%016x=limited,\n  0x%016x=full ;\n"+
		"order=0x0100, defmember=full : 0x%016x, 0x%016x ;\n"+
		"gen : 0x%016x ;\n"+
		"sw=0x0030 : ALL_SWITCHES=full, SELF=limited ;\n"+
		"idx=0x0040, indx0 : 0x%016x=full ;\n",
		guid("ca1-2"), guid("ca2-1"), guid("ca1-2"), guid("ca2-1"), guid("ca2-2"),
		guid("ca1-1"), guid("ca2-2"), guid("ca1-2"), guid("ca2-1")))

	var underIBSM, underOpenSM map[string]string
	t.Run("ibsm", func(t *testing.T) {
		f := fabrictest.Up(t, "pki", topo, harness.UpOptions{})
		d := f.StartUMAD("ca1-1", fabrictest.Bin(t, "ibsm"), "--port", "sim", "--json", "--partitions", conf)
		var up sm.Result
		fabrictest.Wait(t, 90*time.Second, "ibsm: subnet up", func() bool {
			if exited, err := d.Exited(); exited {
				t.Fatalf("ibsm exited (%v):\n%s", err, d.Output())
			}
			for _, line := range strings.Split(d.Output(), "\n") {
				var r sm.Result
				if json.Unmarshal([]byte(line), &r) == nil && r.Event == "sweep" && r.SubnetUp {
					up = r
					return true
				}
			}
			return false
		})
		require.NotNil(t, up.Partitions, "ibsm:\n%s", d.Output())
		t.Logf("ibsm's sweep: partitions %+v, P_KeyTable SMPs: Get %d, Set %d", *up.Partitions,
			up.SMPsByAttr["Get P_KeyTable"], up.SMPsByAttr["Set P_KeyTable"])
		assert.Equal(t, 7, up.Partitions.Partitions)
		assert.Zero(t, up.Partitions.Failures, "ibsm:\n%s", d.Output())
		assert.Equal(t, 4, up.Partitions.Enforcement, "the four switch ports facing hosts")
		// Every table read whole (2 blocks of 64 entries) once; block 0
		// set where it differs from the reset table: the 4 hosts', the 2
		// switches' port 0, the 4 switch ports facing hosts. No block 1.
		assert.Equal(t, 20, up.Partitions.BlocksRead)
		assert.Equal(t, 10, up.Partitions.BlocksSet)
		assert.EqualValues(t, 10, up.SMPsByAttr["Set P_KeyTable"])
		underIBSM = partRecords(t, f)
		for host, keys := range map[string][]mad.PKey{
			"ca1-1": {0xffff, 0x8100, 0x0030},
			"ca1-2": {0xffff, 0x0001, 0x8010, 0x0020},
			"ca2-1": {0x8040, 0x8010, 0x0020, 0xffff},
			"ca2-2": {0xffff, 0x8100, 0x8020},
		} {
			assert.Equal(t, partBlock(keys), underIBSM[host+" port 1 block 0"], host)
			sp := partFacing(t, f, host)
			assert.Equal(t, partBlock(keys), underIBSM[fmt.Sprintf("%s port %d block 0", sp.sw, sp.port)], "%s's switch port", host)
			assert.Equal(t, "in 1 out 1", underIBSM[fmt.Sprintf("%s port %d enforcement", sp.sw, sp.port)], "%s's switch port", host)
		}
		partAddPKey(t, f, "ca2-2", 0x8030)
		partTraffic(t, f, partFlows)
	})
	t.Run("opensm", func(t *testing.T) {
		f := fabrictest.Up(t, "pko", topo, harness.UpOptions{})
		osm := f.StartOpenSM("ca1-1", "-P", conf, "-Z", "both")
		osm.WaitLog(t, 60*time.Second, 0, "SUBNET UP")
		underOpenSM = partRecords(t, f)
		require.NoError(t, osm.D.Stop())

		// ibsm meets the tables OpenSM wrote: it reads them, and every
		// block is already what it would write.
		out := f.For(t).MustUMAD("ca1-1", fabrictest.Bin(t, "ibsm"), "--port", "sim", "--once", "--json", "--partitions", conf)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var res sm.Result
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &res), out)
		require.True(t, res.SubnetUp, res.Reason)
		require.NotNil(t, res.Partitions)
		assert.Positive(t, res.Partitions.BlocksRead)
		assert.Zero(t, res.Partitions.BlocksSet, "ibsm after OpenSM:\n%s", out)
		assert.Zero(t, res.Partitions.Enforcement, "ibsm after OpenSM:\n%s", out)
		assert.Zero(t, res.SMPsByAttr["Set P_KeyTable"])
	})
	if underIBSM == nil || underOpenSM == nil {
		t.Fatal("a subtest did not read the tables")
	}
	t.Logf("%d records compared (P_Key table blocks and enforcement bits)", len(underOpenSM))
	assert.Equal(t, len(underOpenSM), len(underIBSM), "records")
	for _, k := range slices.Sorted(maps.Keys(underOpenSM)) {
		assert.Equal(t, underOpenSM[k], underIBSM[k], "%s: OpenSM's, ibsm's", k)
	}
}

// partBlock writes keys as one block, as partRecords does.
func partBlock(keys []mad.PKey) string {
	var b [mad.PKeysPerBlock]string
	for i := range b {
		k := mad.PKey(0)
		if i < len(keys) {
			k = keys[i]
		}
		b[i] = fmt.Sprintf("0x%04x", uint16(k))
	}
	return strings.Join(b[:], " ")
}

var pkeyLine = regexp.MustCompile(`(?m)^\s*(\d+):((?:\s+0x[0-9a-f]{4}){8})\s*$`)

// partRecords reads, with smpquery from ca1-2, every P_Key table of the
// fabric (each CA port, each switch's port 0 and external ports), one
// record per block ("sw1 port 3 block 0" → its 32 entries), and each
// switch external port's enforcement ("sw1 port 3 enforcement" → "in 1
// out 1").
func partRecords(t *testing.T, f *fabrictest.Fabric) map[string]string {
	t.Helper()
	out := map[string]string{}
	topo := f.Topo
	read := func(node string, lid uint16, port int) {
		text := f.For(t).MustUMAD("ca1-2", "smpquery", "pkeys", strconv.Itoa(int(lid)), strconv.Itoa(port))
		var entries []string
		for _, m := range pkeyLine.FindAllStringSubmatch(text, -1) {
			at, _ := strconv.Atoi(m[1])
			require.Equal(t, len(entries), at, "%s port %d: smpquery pkeys:\n%s", node, port, text)
			entries = append(entries, strings.Fields(m[2])...)
		}
		require.NotEmpty(t, entries, "%s port %d: smpquery pkeys:\n%s", node, port, text)
		for b := 0; b*mad.PKeysPerBlock < len(entries); b++ {
			blk := entries[b*mad.PKeysPerBlock : min(len(entries), (b+1)*mad.PKeysPerBlock)]
			out[fmt.Sprintf("%s port %d block %d", node, port, b)] = strings.Join(blk, " ")
		}
	}
	enforcement := regexp.MustCompile(`PartEnforceInb:\.*(\d+)[\s\S]*PartEnforceOutb:\.*(\d+)`)
	for i, n := range topo.Nodes() {
		if n.Type != topologies.Switch {
			for p := 1; p <= n.NumPorts; p++ {
				if _, ok := topo.LinkAt(topologies.PortRef{Node: i, Port: p}); ok {
					read(n.Name, portStatus(t, f, n.Name, p).LID, p)
				}
			}
			continue
		}
		lid := portStatus(t, f, n.Name, 1).LID
		for p := 0; p <= n.NumPorts; p++ {
			read(n.Name, lid, p)
			if p == 0 {
				continue
			}
			pi := f.For(t).MustUMAD("ca1-2", "smpquery", "portinfo", strconv.Itoa(int(lid)), strconv.Itoa(p))
			m := enforcement.FindStringSubmatch(pi)
			require.NotNil(t, m, "%s port %d: smpquery portinfo:\n%s", n.Name, p, pi)
			out[fmt.Sprintf("%s port %d enforcement", n.Name, p)] = fmt.Sprintf("in %s out %s", m[1], m[2])
		}
	}
	return out
}
