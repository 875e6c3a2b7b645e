package bench

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenSMPhases reads OpenSM's phases from its log's lines, and 0 for
// a phase whose end is missing.
func TestOpenSMPhases(t *testing.T) {
	log := `Dec 03 05:52:42 020460 [AEE2B740] 0x80 -> Entering DISCOVERING state
Dec 03 05:52:42 119237 [AEE2B740] 0x02 -> osm_opensm_bind: Setting IS_SM on port 0x02fab00000000101
Dec 03 05:52:47 977171 [AC6256C0] 0x80 -> Entering MASTER state
Dec 03 05:52:57 488852 [AC6256C0] 0x02 -> osm_ucast_mgr_process: ftree tables configured on all switches
Dec 03 05:53:07 990842 [AC6256C0] 0x02 -> SUBNET UP
`
	d, r, rest := opensmPhases(log)
	assert.InDelta(t, 5956.711, d, 0.001)
	assert.InDelta(t, 9511.681, r, 0.001)
	assert.InDelta(t, 10501.990, rest, 0.001)
	d, r, rest = opensmPhases(log[:strings.Index(log, "Dec 03 05:53:07")])
	assert.Positive(t, d)
	assert.Positive(t, r)
	assert.Zero(t, rest, "no SUBNET UP")
}

// TestPickNets keeps the order asked for and refuses an unknown name,
// listing the known ones.
func TestPickNets(t *testing.T) {
	got, err := pickNets(scaleNets, "ktree20x3, ktree8x3")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "ktree20x3", got[0].name)
	assert.Equal(t, "ktree8x3", got[1].name)
	_, err = pickNets(scaleNets, "ktree9x9")
	assert.ErrorContains(t, err, `no network "ktree9x9" (have ktree8x3, fattree2080, ktree20x3, ktree12x4)`)
}
