package sm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/sm"
	"ibfab/wire/mad"
)

// setOwnPKeys writes block 0 of the P_Key table of CA node i's port 1
// from the CA itself, as another SM's Set would have.
func setOwnPKeys(t *testing.T, b *bench, i int, keys ...mad.PKey) {
	t.Helper()
	var blk mad.PKeyTableFields
	copy(blk.PKeys[:], keys)
	m, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodSet, AttrID: mad.AttrPKeyTable,
		Path: []uint8{0}, Data: mad.AppendPKeyTable(nil, &blk)})
	require.NoError(t, err)
	b.f.Send(i, agent.Request{Port: 1, MAD: m})
	b.f.Run()
}

// TestForgetWrittenPartitions: a master that leaves standby (a takeover)
// reads the P_Key tables again, so that a table another master changed
// meanwhile is written back; without forgetting, the partition manager
// trusts its own records and leaves it.
func TestForgetWrittenPartitions(t *testing.T) {
	b := partBench(t)
	s := b.newSM(t, sm.Config{Partitions: &sm.PartitionConfig{File: partFile(t, b)}})
	require.True(t, b.sweep(t, s).SubnetUp)
	n, _ := b.f.Lookup("ca1-2")
	want := keysOf(n.Agent.PKeys(1))
	setOwnPKeys(t, b, n.Index, 0xffff, 0x8030)
	require.NotEqual(t, want, keysOf(n.Agent.PKeys(1)))

	sm.ComeOut(s)
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Positive(t, res.Partitions.BlocksRead, "tables read again out of standby")
	assert.Equal(t, want, keysOf(n.Agent.PKeys(1)), "the table another master changed is written back")
}
