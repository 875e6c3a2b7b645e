package txntest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/txn"
	"ibfab/sm/txn/txntest"
	"ibfab/wire/mad"
)

// TestQueue: requests are answered in the order sent, those a callback
// sends after them, each counted once by method and attribute.
func TestQueue(t *testing.T) {
	var order []uint32
	q := &txntest.Queue{Answer: func(set bool, r *txn.Request) *txn.Response {
		order = append(order, r.Mod)
		return &txn.Response{Data: []byte{byte(r.Mod)}}
	}}
	var got []byte
	q.Get(txn.Request{Attr: mad.AttrPortInfo, Mod: 1}, func(r *txn.Response) {
		got = append(got, r.Data...)
		q.Set(txn.Request{Attr: mad.AttrPortInfo, Mod: 3}, func(r *txn.Response) { got = append(got, r.Data...) })
	})
	q.Set(txn.Request{Attr: mad.AttrNodeInfo, Mod: 2}, func(r *txn.Response) {
		require.NotNil(t, r.Req)
		assert.EqualValues(t, 2, r.Req.Mod, "the response names its request")
		got = append(got, r.Data...)
	})
	require.NoError(t, q.Run(context.Background()))
	assert.Equal(t, []uint32{1, 2, 3}, order)
	assert.Equal(t, []byte{1, 2, 3}, got)
	assert.EqualValues(t, 3, q.Sends())
	assert.Equal(t, map[txntest.Sent]int{{Attr: mad.AttrPortInfo}: 1, {Set: true, Attr: mad.AttrPortInfo}: 1,
		{Set: true, Attr: mad.AttrNodeInfo}: 1}, q.Take())
	assert.Empty(t, q.Take(), "counted once")
}
