package opensmrun_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/opensmrun"
)

// TestQoSConf: the generic qos_* options in opensm.conf's form; an empty
// table is written 0:0, not left empty (OpenSM would take its own
// default table for an empty option).
func TestQoSConf(t *testing.T) {
	q := opensmrun.QoSConf{MaxVLs: 8, HighLimit: 255, Low: []opensmrun.ArbEntry{{0, 64}},
		SL2VL: [16]uint8{0, 1, 2, 3, 4, 5, 6, 7}}
	assert.Equal(t, "qos TRUE\nqos_max_vls 8\nqos_high_limit 255\nqos_vlarb_high 0:0\nqos_vlarb_low 0:64\n"+
		"qos_sl2vl 0,1,2,3,4,5,6,7,0,0,0,0,0,0,0,0\n", q.String())
	q.High = []opensmrun.ArbEntry{{1, 10}, {2, 20}}
	assert.Equal(t, "qos_vlarb_high 1:10,2:20", q.Lines()[3])
}

// TestIBSMQoS: ibsm's tables without flows: SL n on VL n for SL 0-7,
// best effort alone in the low table, an empty high table, a high limit
// that lets some high-priority traffic through.
func TestIBSMQoS(t *testing.T) {
	q, err := opensmrun.IBSMQoS(2048, nil)
	require.NoError(t, err)
	l := q.Lines()
	assert.Equal(t, []string{"qos TRUE", "qos_max_vls 8"}, l[:2])
	assert.Equal(t, "qos_vlarb_high 0:0", l[3])
	assert.Equal(t, "qos_vlarb_low 0:64", l[4])
	assert.Equal(t, "qos_sl2vl 0,1,2,3,4,5,6,7,0,0,0,0,0,0,0,0", l[5])
	assert.Positive(t, q.HighLimit)
}
