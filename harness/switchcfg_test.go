package harness_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/nodeproc"
	"ibfab/softswitch"
	"ibfab/wire/mad"
)

// TestWriteVLStatus: the --vls text names each switch's configuration and
// has a row per port and VL, the switch-only columns empty for an HCA.
func TestWriteVLStatus(t *testing.T) {
	s := &harness.FabricStatus{Fabric: "f", Nodes: []harness.NodeStatus{
		{Status: nodeproc.Status{Name: "sw1", Type: "switch",
			SwitchConfig: &nodeproc.SwitchConfigStatus{Arch: softswitch.ArchIQ, RxBlocks: 1024, VLBlocks: []int{512, 512}, ARMode: mad.ARAFI,
				ARThreshold: 75, AFCVL: 1, Watched: []uint16{5}},
			Ports: []nodeproc.PortStatus{{Port: 1, Adapted: 9, Credits: []nodeproc.VLCredits{
				{VL: 0, RxUsed: 34, RxCapacity: 512, DownUsed: 100, DownCapacity: 512, Queued: 2, XmitWait: 40, RcvPkts: 70, Watched: 3},
				{VL: 1, RxCapacity: 512, DownCapacity: 512},
			}}}}},
		{Status: nodeproc.Status{Name: "sw2", Type: "switch", SwitchConfig: &nodeproc.SwitchConfigStatus{Arch: softswitch.ArchVOQ, RxBlocks: 1024, ARMode: mad.AROff}}},
		{Status: nodeproc.Status{Name: "ca1", Type: "hca", Ports: []nodeproc.PortStatus{{Port: 1, Credits: []nodeproc.VLCredits{
			{VL: 0, RxCapacity: 1024, DownUsed: 17, DownCapacity: 512}}}}}},
	}}
	var b bytes.Buffer
	require.NoError(t, harness.WriteVLStatus(&b, s))
	out := b.String()
	// fields returns the first line whose fields start with prefix.
	fields := func(prefix ...string) []string {
		for l := range strings.SplitSeq(out, "\n") {
			if f := strings.Fields(l); len(f) >= len(prefix) && slices.Equal(f[:len(prefix)], prefix) {
				return f
			}
		}
		t.Fatalf("no line %q in\n%s", prefix, out)
		return nil
	}
	assert.Equal(t, []string{"sw1", "iq", "afi", "T=75%", "AFC=VL1", "512,512", "5"}, fields("sw1", "iq"))
	assert.Equal(t, []string{"sw2", "voq", "off", "1024", "per", "VL", "-"}, fields("sw2"))
	assert.Equal(t, []string{"sw1", "1", "0", "34/512", "100/512", "2", "40", "70", "3", "9"}, fields("sw1", "1", "0"))
	assert.Equal(t, []string{"ca1", "1", "0", "0/1024", "17/512", "0", "0"}, fields("ca1"))
}
