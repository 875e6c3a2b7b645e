package interop_test

// Today's link rates against unmodified OpenSM and infiniband-diags: a
// fabric of NDR, HDR and EDR links, what the tools print of it, and an
// extended-speed Set that retrains a link.

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/topologies"
)

// extSpeedNet is portstateNet at mixed rates: the switches' link at 4X
// NDR, ca1 at 4X HDR, ca2 at 4X EDR (the rates in the comments, as
// ibnetdiscover writes them).
const extSpeedNet = `
Switch 2 "sw1"
[1] "ca1"[1]		# "ca1" lid 0 4xHDR
[2] "sw2"[1]		# "sw2" lid 0 4xNDR

Switch 2 "sw2"
[1] "sw1"[2]		# "sw1" lid 0 4xNDR
[2] "ca2"[1]		# "ca2" lid 0 4xEDR

Hca 1 "ca1"
[1] "sw1"[1]		# lid 0 lmc 0 "sw1" lid 0 4xHDR

Hca 1 "ca2"
[1] "sw2"[2]		# lid 0 lmc 0 "sw2" lid 0 4xEDR
`

// TestExtendedSpeeds brings up extSpeedNet under OpenSM (no error in its
// log up to the reset) and reads it with iblinkinfo (106.25, 53.125 and 25.78125 Gbps),
// ibstat (Rate 200 and 100, from the sysfs rate file) and smpquery
// portinfo (LinkSpeedExtActive NDR with LinkSpeedActive QDR, sw1's port 0
// CapabilityMask2 with HDR and NDR); then ibportstate espeed 4 (HDR only)
// and reset on sw1[2] retrain the NDR link at HDR, seen at both ends and by
// OpenSM's next sweep, whose PathRecord ca1→ca2 has the EDR host link's
// 100 Gb/s (code 16). (OpenSM 3.3.23 predates NDR, which 3.3.24 added:
// over an NDR link it computes 40 Gb/s, so the PathRecord is checked once
// the path is HDR and EDR.)
func TestExtendedSpeeds(t *testing.T) {
	f, osm := portstateUpOSM(t, "espeed", extSpeedNet)
	lid := map[string]string{}
	for _, n := range f.Status().Nodes {
		lid[n.Name] = strconv.Itoa(int(n.Ports[0].LID))
	}
	links := f.MustUMAD("ca1", "iblinkinfo")
	for _, want := range []string{"4X        106.25 Gbps Active/  LinkUp", "4X        53.125 Gbps Active/  LinkUp",
		"4X      25.78125 Gbps Active/  LinkUp"} {
		assert.Contains(t, links, want, "iblinkinfo:\n%s", links)
	}
	// ibstat on the umad shim reads the sysfs rate file, as on a kernel.
	assert.Contains(t, f.MustShim("ca1", "ibstat"), "Rate: 200")
	assert.Contains(t, f.MustShim("ca2", "ibstat"), "Rate: 100")

	pi := f.MustUMAD("ca1", "smpquery", "portinfo", lid["sw1"], "2")
	assert.Equal(t, "106.25 Gbps", linkrateField(pi, "LinkSpeedExtActive"))
	assert.Equal(t, "10.0 Gbps", linkrateField(pi, "LinkSpeedActive"), "legacy speed stays QDR, as ibsim")
	assert.Equal(t, "14.0625 Gbps or 25.78125 Gbps or 53.125 Gbps or 106.25 Gbps", linkrateField(pi, "LinkSpeedExtSupported"))
	assert.Equal(t, "1X or 4X or 2X", linkrateField(pi, "LinkWidthSupported"))
	p0 := f.MustUMAD("ca1", "smpquery", "portinfo", lid["sw1"], "0")
	assert.Contains(t, p0, "IsLinkSpeedHDRSupported")
	assert.Contains(t, p0, "IsLinkSpeedNDRSupported")
	edr := f.MustUMAD("ca1", "smpquery", "portinfo", lid["ca2"], "1")
	assert.Equal(t, "25.78125 Gbps", linkrateField(edr, "LinkSpeedExtActive"))
	assert.NotContains(t, edr, "IsLinkSpeedHDRSupported", "an EDR port has no HDR bit")

	// OpenSM brought the fabric up without an error. (The reset below
	// makes some: sw2's trap from a LID OpenSM dropped while the link was
	// down, ERR 7504 and 3809, as any reset does.)
	log := osm.LogText(t, 0)
	assert.NotContains(t, log, " ERR ", "OpenSM's log:\n%s", fabrictest.Tail(log, 30))

	// espeed 4: HDR only. ibportstate sets bit 31 of the modifier.
	f.MustUMAD("ca1", "ibportstate", lid["sw1"], "2", "espeed", "4")
	f.MustUMAD("ca1", "ibportstate", lid["sw1"], "2", "reset")
	fabrictest.Wait(t, portstateWait, "the link back to Active", func() bool {
		return portstateOf(f, "sw1", 2) == "LinkUp/Active" && portstateOf(f, "sw2", 1) == "LinkUp/Active"
	})
	assertHDR(t, f)
	for _, end := range hdrEnds {
		out := f.MustUMAD("ca1", "smpquery", "portinfo", lid[end.node], strconv.Itoa(end.port))
		assert.Equal(t, "53.125 Gbps", linkrateField(out, "LinkSpeedExtActive"), "%s[%d]", end.node, end.port)
	}
	// OpenSM's link manager puts LinkSpeedExtEnabled back to every
	// supported speed (force_link_speed_ext 31, its default), as it does
	// on silicon; the link stays at HDR until it next trains.
	assert.Equal(t, "14.0625 Gbps or 25.78125 Gbps or 53.125 Gbps or 106.25 Gbps",
		linkrateField(f.MustUMAD("ca1", "smpquery", "portinfo", lid["sw1"], "2"), "LinkSpeedExtEnabled"))
	var pr string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last saquery PR:\n%s", pr)
		}
	})
	fabrictest.Wait(t, portstateWait, "OpenSM's PathRecord ca1→ca2 at 100 Gb/s", func() bool {
		out, _, err := f.UMAD("ca1", "saquery", "PR", "--src-to-dst", lid["ca1"]+":"+lid["ca2"])
		pr = out
		return err == nil && saqueryField(out, "rate") == "0x90"
	})
	f.CheckAllPairs(f.Hosts())
}

// saqueryField returns the value saquery printed for a record field
// ("rate....................0x90" gives "0x90"); the last one in out.
func saqueryField(out, name string) string {
	v := ""
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), name+"."); ok {
			v = strings.TrimLeft(rest, ".")
		}
	}
	return v
}

// TestExtendedSpeedsIBSM: ibsm --link-speed-ext 4 (HDR only) brings
// extSpeedNet up and sets LinkSpeedExtEnabled to HDR in both ends of
// every link with extended speeds, as OpenSM's force_link_speed_ext
// does, but for the EDR link's, which support no HDR and are left as they
// are (with a warning, where OpenSM's Set would be refused); the links keep the speeds they trained at until they train again,
// and a reset then trains the NDR link at HDR at both ends. A second ibsm
// with 31 (every supported speed) enables them all again.
func TestExtendedSpeedsIBSM(t *testing.T) {
	f := fabrictest.Up(t, "espsm", portstateParse(t, extSpeedNet), harness.UpOptions{})
	ibsm := func(ext string) string {
		t.Helper()
		out := f.For(t).MustUMAD("ca1", fabrictest.Bin(t, "ibsm"), "--port", "sim", "--once", "--link-speed-ext", ext)
		require.Contains(t, out, "subnet up", "ibsm:\n%s", out)
		return out
	}
	out := ibsm("4")
	assert.Regexp(t, `warning: H-[0-9a-f]+ port 1 supports none of the extended speeds HDR; left as it is`, out)
	lid := map[string]string{}
	for _, n := range f.Status().Nodes {
		lid[n.Name] = strconv.Itoa(int(n.Ports[0].LID))
	}
	enabled := func(node, port string) string {
		return linkrateField(f.MustUMAD("ca1", "smpquery", "portinfo", lid[node], port), "LinkSpeedExtEnabled")
	}
	for _, p := range [][2]string{{"sw1", "1"}, {"sw1", "2"}, {"sw2", "1"}, {"ca1", "1"}} {
		assert.Equal(t, "53.125 Gbps", enabled(p[0], p[1]), "%s[%s] LinkSpeedExtEnabled", p[0], p[1])
	}
	for _, p := range [][2]string{{"sw2", "2"}, {"ca2", "1"}} {
		assert.Equal(t, "14.0625 Gbps or 25.78125 Gbps", enabled(p[0], p[1]), "%s[%s] LinkSpeedExtEnabled", p[0], p[1])
	}
	assert.Equal(t, "106.25 Gbps", linkrateField(f.MustUMAD("ca1", "smpquery", "portinfo", lid["sw1"], "2"), "LinkSpeedExtActive"),
		"still NDR until the link trains again")

	f.MustUMAD("ca1", "ibportstate", lid["sw1"], "2", "reset")
	fabrictest.Wait(t, portstateWait, "the link trained again", func() bool {
		return portstateOf(f, "sw1", 2) == "LinkUp/Init" || portstateOf(f, "sw1", 2) == "LinkUp/Active"
	})
	assertHDR(t, f)
	ibsm("31")
	assert.Equal(t, "14.0625 Gbps or 25.78125 Gbps or 53.125 Gbps or 106.25 Gbps", enabled("sw1", "2"))
}

// TestUniformExtendedSpeeds brings extSpeedNet up with every link at 4X
// HDR, then at 4X NDR: OpenSM reaches SUBNET UP with no error in its log,
// iblinkinfo prints the one rate, ibstat the kernel's Rate, and the
// PathRecord ca1→ca2 has the links' rate, exactly (selector 2): from
// OpenSM at HDR (code 17, 200 Gb/s) and from ibsm's SA at both (NDR:
// code 21, 400 Gb/s; OpenSM 3.3.23 predates NDR's rate code, so its
// PathRecord is not checked there).
func TestUniformExtendedSpeeds(t *testing.T) {
	for _, tc := range []struct {
		rate, lane, ibstat, pr string
		osmPR                  bool
	}{
		{rate: "4xHDR", lane: "53.125 Gbps", ibstat: "Rate: 200", pr: "0x91", osmPR: true},
		{rate: "4xNDR", lane: "106.25 Gbps", ibstat: "Rate: 400", pr: "0x95"},
	} {
		t.Run(tc.rate, func(t *testing.T) {
			topo := portstateParse(t, extSpeedNet)
			var r topologies.Rate
			require.NoError(t, r.UnmarshalText([]byte(tc.rate)))
			require.NoError(t, topo.SetRate(r))
			f := fabrictest.Up(t, "esu"+strings.ToLower(tc.rate[2:]), topo, harness.UpOptions{})
			osm := f.StartOpenSM("ca1")
			osm.WaitLog(t, portstateWait, 0, "SUBNET UP")
			log := osm.LogText(t, 0)
			assert.NotContains(t, log, " ERR ", "OpenSM's log:\n%s", fabrictest.Tail(log, 30))
			links := f.MustUMAD("ca1", "iblinkinfo")
			// Each of the 3 links from both ends, at the one rate.
			assert.Equal(t, 6, strings.Count(links, "4X        "+tc.lane+" Active/  LinkUp"), "iblinkinfo:\n%s", links)
			assert.Equal(t, 6, strings.Count(links, "Gbps"), "iblinkinfo:\n%s", links)
			assert.Contains(t, f.MustShim("ca2", "ibstat"), tc.ibstat)
			lid := map[string]string{}
			for _, n := range f.Status().Nodes {
				lid[n.Name] = strconv.Itoa(int(n.Ports[0].LID))
			}
			pr := func() string {
				return saqueryField(f.MustUMAD("ca1", "saquery", "PR", "--src-to-dst", lid["ca1"]+":"+lid["ca2"]), "rate")
			}
			if tc.osmPR {
				assert.Equal(t, tc.pr, pr(), "OpenSM's PathRecord rate")
			}
			require.NoError(t, osm.D.Stop())
			startIBSM(t, f, "ca1")
			assert.Equal(t, tc.pr, pr(), "ibsm's PathRecord rate")
		})
	}
}

// hdrEnds are the two ends of extSpeedNet's NDR link.
var hdrEnds = []struct {
	node string
	port int
}{{"sw1", 2}, {"sw2", 1}}

// assertHDR checks that both ends of the NDR link trained at 4X HDR.
func assertHDR(t *testing.T, f *fabrictest.Fabric) {
	t.Helper()
	for _, end := range hdrEnds {
		st := portStatus(t, f, end.node, end.port)
		assert.Equal(t, "HDR", st.Speed, "%s[%d]", end.node, end.port)
		assert.Equal(t, uint64(200_000_000_000), st.Rate, "%s[%d]", end.node, end.port)
	}
}
