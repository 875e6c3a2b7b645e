package interop_test

// Link width and speed against ibportstate: what the SM enables is what
// both ends retrain at, and PortInfo tells the truth about it.

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/testsupport/fabrictest"
)

// linkrateField returns the value ibportstate or smpquery printed for a
// PortInfo field ("LinkWidthActive:......4X" gives "4X"); with several
// PortInfo dumps in out, the last.
func linkrateField(out, name string) string {
	v := ""
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			v = strings.TrimLeft(rest, ".")
		}
	}
	return v
}

// TestLinkWidthRetrain queries sw1[2] with ibportstate (no warnings about
// enabled or supported widths and speeds: a 4X SDR port supports and
// enables 1X and 4X, SDR), enables 1X on it and resets it: both ends
// retrain at 1X, PortInfo's LinkWidthActive says so at both ends, the
// status rate is 1X SDR's 2 Gb/s, and the fabric works on at 1X. Enabling
// 4X again and resetting brings 4X back. Unconnected ports' PortInfo
// holds valid widths and speeds.
func TestLinkWidthRetrain(t *testing.T) {
	// portstateNet with a third, uncabled, port on sw1.
	f := portstateUp(t, "lrate", strings.Replace(portstateNet, `Switch 2 "sw1"`, `Switch 3 "sw1"`, 1))
	lid := map[string]string{}
	for _, n := range f.Status().Nodes {
		lid[n.Name] = strconv.Itoa(int(n.Ports[0].LID))
	}
	query := func(t *testing.T, node, port string) string {
		t.Helper()
		out, errOut, err := f.For(t).UMAD("ca1", "ibportstate", lid[node], port, "query")
		require.NoError(t, err, "ibportstate %s %s query: %s", node, port, errOut)
		assert.NotContains(t, errOut, "rather than", "ibportstate %s %s query warned", node, port)
		return out
	}
	out := query(t, "sw1", "2")
	assert.Equal(t, "1X or 4X", linkrateField(out, "LinkWidthSupported"), "a 4X port")
	assert.Equal(t, "1X or 4X", linkrateField(out, "LinkWidthEnabled"))
	assert.Equal(t, "4X", linkrateField(out, "LinkWidthActive"))
	assert.Equal(t, "2.5 Gbps", linkrateField(out, "LinkSpeedSupported"), "an SDR port")
	assert.Equal(t, "2.5 Gbps", linkrateField(out, "LinkSpeedEnabled"))
	assert.Equal(t, "2.5 Gbps", linkrateField(out, "LinkSpeedActive"))

	for _, tt := range []struct {
		width, active string
		rate          uint64
	}{
		{width: "1", active: "1X", rate: 2_000_000_000},
		{width: "3", active: "4X", rate: 8_000_000_000},
	} {
		t.Run("width "+tt.width, func(t *testing.T) {
			f := f.For(t)
			f.MustUMAD("ca1", "ibportstate", lid["sw1"], "2", "width", tt.width)
			f.MustUMAD("ca1", "ibportstate", lid["sw1"], "2", "reset")
			// OpenSM, told by the traps, takes the retrained link Active.
			fabrictest.Wait(t, portstateWait, "the link back to Active", func() bool {
				return portstateOf(f, "sw1", 2) == "LinkUp/Active" && portstateOf(f, "sw2", 1) == "LinkUp/Active"
			})
			for _, end := range []struct{ node, port string }{{"sw1", "2"}, {"sw2", "1"}} {
				num, _ := strconv.Atoi(end.port)
				st := portStatus(t, f, end.node, num)
				assert.Equal(t, tt.active, st.Width, "%s[%s] status width", end.node, end.port)
				assert.Equal(t, tt.rate, st.Rate, "%s[%s] status rate", end.node, end.port)
				out := f.MustUMAD("ca1", "smpquery", "portinfo", lid[end.node], end.port)
				assert.Equal(t, tt.active, linkrateField(out, "LinkWidthActive"), "%s[%s] PortInfo", end.node, end.port)
			}
			query(t, "sw1", "2")
			f.CheckAllPairs(f.Hosts())
		})
	}

	// sw1's uncabled port 3, its port 0 and a CA's port: every width and
	// speed is a valid one (was 0 on the uncabled port).
	for _, q := range [][]string{{lid["sw1"], "3"}, {lid["sw1"], "0"}, {lid["ca2"], "1"}} {
		out := f.MustUMAD("ca1", "smpquery", "portinfo", q[0], q[1])
		t.Logf("LID %s port %s: width %s/%s/%s speed %s/%s/%s", q[0], q[1],
			linkrateField(out, "LinkWidthSupported"), linkrateField(out, "LinkWidthEnabled"), linkrateField(out, "LinkWidthActive"),
			linkrateField(out, "LinkSpeedSupported"), linkrateField(out, "LinkSpeedEnabled"), linkrateField(out, "LinkSpeedActive"))
		for _, field := range []string{"LinkWidthActive", "LinkSpeedActive", "LinkWidthEnabled", "LinkSpeedEnabled"} {
			v := linkrateField(out, field)
			assert.NotContains(t, []string{"", "undefined (0)", "0"}, v, "LID %s port %s %s", q[0], q[1], field)
		}
	}
}
