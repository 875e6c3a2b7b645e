package sm_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/sm/routing"
	"ibfab/sm/routing/routingtest"
	"ibfab/topologies"
)

func TestDumpRoutes(t *testing.T) {
	f := routingtest.ThesisFabric(t)
	r := routingtest.Route(t, f, "updn-fera", routing.Options{})
	var b bytes.Buffer
	require.NoError(t, sm.DumpRoutes(&b, f, r))
	out := b.String()
	sw1, _ := f.Topo.Lookup("sw1")
	head := fmt.Sprintf("Unicast lids [0x0-0xf] of switch Lid %d guid 0x%016x (sw1):\n  Lid  Out   Destination\n       Port     Info \n",
		f.LID[sw1][0], f.Topo.Node(sw1).GUID)
	assert.Contains(t, out, head)
	assert.Contains(t, out, fmt.Sprintf("0x0001 003 : (Channel Adapter portguid 0x%016x: 'ca4')\n", f.Topo.Node(0).Ports[1].GUID))
	assert.Contains(t, out, fmt.Sprintf("0x%04x 000 : (Switch portguid 0x%016x: 'sw1')\n", f.LID[sw1][0], f.Topo.Node(sw1).GUID))
	assert.Equal(t, 8, strings.Count(out, "15 valid lids dumped \n"))

	// With LMC the other LIDs of a port are its paths, as ibroute says.
	lf, err := routing.NewFabric(topologies.Thesis8(), 0, 1, 1)
	require.NoError(t, err)
	b.Reset()
	require.NoError(t, sm.DumpRoutes(&b, lf, routingtest.Route(t, lf, "updn-pira", routing.Options{})))
	assert.Contains(t, b.String(), fmt.Sprintf(": (path #2 out of 2: portguid 0x%016x)\n", lf.Topo.Node(0).Ports[1].GUID))
}
