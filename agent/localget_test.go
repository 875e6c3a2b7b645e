package agent_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

// TestLocalGet: the node's own reads of its SMA (the attach point's port
// queries) are exempt from M_Key protection at every level, show the
// M_Key, and count no violation; an SMP with the wrong key from the wire is
// still dropped. Bad ports, attributes and SMInfo with an SM are errors.
func TestLocalGet(t *testing.T) {
	const key = 0x1122334455667788
	for _, typ := range []mad.NodeType{mad.NodeTypeSwitch, mad.NodeTypeCA} {
		for _, level := range []uint8{0, 1, 2, 3} {
			t.Run(typ.String()+"/level "+string(rune('0'+level)), func(t *testing.T) {
				nd := newNode(t, typ, 2)
				mgmt := uint8(1)
				if typ == mad.NodeTypeSwitch {
					mgmt = 0
				}
				pi := forSet(nd.portInfo(t, mgmt))
				pi.MKey, pi.MKeyProtectBits, pi.MKeyLeasePeriod = key, level, 10
				nd.setPortInfo(t, mgmt, pi)
				if level >= 2 {
					require.Empty(t, nd.a.HandleMAD(lidSMP(smp(mad.MethodGet, mad.AttrPortInfo, uint32(mgmt), nil))),
						"a Get without the key from the wire")
				}
				violations := nd.a.Stats().MKeyViolations

				d, err := nd.a.LocalGet(mgmt, mad.AttrPortInfo, uint32(mgmt))
				require.NoError(t, err)
				got := mad.PortInfo(d)
				assert.Equal(t, uint64(key), got.MKey())
				assert.Equal(t, level, got.MKeyProtectBits())
				d, err = nd.a.LocalGet(mgmt, mad.AttrNodeInfo, 0)
				require.NoError(t, err)
				assert.Equal(t, nd.a.NodeGUID(), mad.NodeInfo(d).NodeGUID())
				assert.Equal(t, violations, nd.a.Stats().MKeyViolations, "no violation counted")
			})
		}
	}
	t.Run("errors", func(t *testing.T) {
		nd := newNode(t, mad.NodeTypeCA, 2)
		_, err := nd.a.LocalGet(3, mad.AttrNodeInfo, 0)
		assert.Error(t, err, "no port 3")
		_, err = nd.a.LocalGet(1, mad.AttrSwitchInfo, 0)
		assert.ErrorContains(t, err, "status", "SwitchInfo on a CA")
		require.NoError(t, nd.a.SetIsSM(1, true))
		_, err = nd.a.LocalGet(1, mad.AttrSMInfo, 0)
		assert.Error(t, err, "SMInfo is the SM's")
		sw := newNode(t, mad.NodeTypeSwitch, 2)
		_, err = sw.a.LocalGet(1, mad.AttrNodeInfo, 0)
		assert.Error(t, err, "a switch's SMA is port 0")
	})
}
