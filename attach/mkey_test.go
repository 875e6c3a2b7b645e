package attach_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/attach"
	"ibfab/simclient"
	"ibfab/wire/mad"
)

// TestInfoUnderMKey: once an SM protects the port with an M_Key at level
// 2, SMPs without the key go unanswered, but a client's port queries
// (umad2sim's GET_PORTINFO, what ibstat shows) still answer with live
// values: they are the node's own reads, exempt as on a real HCA.
func TestInfoUnderMKey(t *testing.T) {
	const key = 0x0102030405060708
	r := newRig(t, attach.Config{})
	c := r.dial(t, simclient.Config{})
	resp := call(t, c, drGet(t, 1, mad.AttrPortInfo, 1, nil))
	pi, err := mad.DecodePortInfo(mad.DRSMP(resp.Data).Data())
	require.NoError(t, err)
	pi.LID, pi.MasterSMLID, pi.MKey, pi.MKeyProtectBits = 7, 1, key, 2
	pi.PortState, pi.PortPhysicalState = mad.PortStateNoChange, mad.PhysStateNoChange
	resp = call(t, c, drMAD(t, mad.MethodSet, 2, mad.AttrPortInfo, 1, nil, mad.AppendPortInfo(nil, &pi)))
	require.Equal(t, mad.StatusOK, mad.DRSMP(resp.Data).Status())
	violations := r.a.Agent().Stats().MKeyViolations

	info, err := c.Info()
	require.NoError(t, err)
	assert.Equal(t, uint16(7), info.LID)
	assert.Equal(t, uint16(1), info.SMLID)
	assert.Equal(t, uint8(mad.PortStateInit), info.State)
	assert.Equal(t, uint64(guidA), info.NodeGUID)
	assert.Equal(t, violations, r.a.Agent().Stats().MKeyViolations, "the port queries are no violations")
	_, err = r.a.Agent().LocalGet(1, mad.AttrPortInfo, 1)
	assert.NoError(t, err)
}
