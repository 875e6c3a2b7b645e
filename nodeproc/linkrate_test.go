package nodeproc_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"ibfab/nodeproc"
	"ibfab/topologies"
)

// TestCheckLinkRate: node processes run every IBA width and speed to
// XDR; Mellanox's FDR10 (outside PortInfo) is refused with what is run.
func TestCheckLinkRate(t *testing.T) {
	for _, ok := range []topologies.Rate{{}, {Width: topologies.Width4x, Speed: topologies.SpeedNDR},
		{Width: topologies.Width2x, Speed: topologies.SpeedNDR}, {Width: topologies.Width4x, Speed: topologies.SpeedXDR},
		{Width: topologies.Width12x, Speed: topologies.SpeedFDR}, {Width: topologies.Width1x, Speed: topologies.SpeedEDR}} {
		assert.NoError(t, nodeproc.CheckLinkRate(ok.Width, ok.Speed), "%v", ok)
	}
	err := nodeproc.CheckLinkRate(topologies.Width4x, topologies.SpeedFDR10)
	assert.ErrorContains(t, err, "FDR10 is not emulated (SDR, DDR, QDR, FDR, EDR, HDR, NDR and XDR are)")
	assert.ErrorContains(t, nodeproc.CheckLinkRate(topologies.Width(3), topologies.SpeedNDR), "not emulated (1x, 2x, 4x, 8x and 12x are)")
}
