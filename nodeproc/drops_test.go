package nodeproc

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/clock"
	"ibfab/internal/ctl"
	"ibfab/internal/testsupport"
	"ibfab/link"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/softswitch"
	"ibfab/topologies"
)

// TestDropsOp: a switch node's ports share its drop log (each naming
// itself in the records), and the "drops" op serves it over the control
// socket, since a time.
func TestDropsOp(t *testing.T) {
	clk := clock.NewManual(time.Unix(100, 0))
	eps := []link.Endpoint{nil}
	for range 2 {
		a, b := pipe.NewPair()
		eps = append(eps, a)
		p, err := port.New(b, port.Config{Clock: clk}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { p.Close() })
	}
	n := &Node{kind: KindSwitch, name: "sw1", tn: &topologies.Node{Name: "sw1", GUID: 0x99}, done: make(chan struct{}), clk: clk}
	pc := port.Config{DataVLs: 4}
	n.newDropLog(&pc)
	sw, err := softswitch.New(softswitch.Config{Name: "sw1", NumPorts: 2, NodeGUID: 0x99, Ports: eps, Clock: clk, PortConfig: pc})
	require.NoError(t, err)
	t.Cleanup(sw.Close)
	n.sw = sw

	// Port 1 drops a packet for 0x21 as unroutable; a second later
	// port 2 refuses one for 0x22 (its link is not up); an SMP is not
	// recorded.
	sw.Port(1).CountDropPacket(port.DropUnroutable, porttest.UD(1, 0x21, 64, 0))
	clk.Advance(time.Second)
	t1 := clk.Now().UnixNano()
	require.Error(t, sw.Port(2).Send(port.NewPacket(porttest.UD(0, 0x22, 64, 0))))
	sw.Port(2).CountDropPacket(port.DropVL15Overflow, porttest.SMP(0x23, 0))
	sw.Port(2).CountRouteDropPacket(port.DropLinkDown, porttest.UD(0, 0x24, 64, 0), 1)

	sock := filepath.Join(t.TempDir(), "sw1.sock")
	srv, err := ctl.Listen(sock, n.handle)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	var all, later DropsReply
	require.NoError(t, ctl.Call(context.Background(), sock, "drops", DropsArgs{}, &all))
	require.NoError(t, ctl.Call(context.Background(), sock, "drops", DropsArgs{SinceNs: t1}, &later))

	assert.Equal(t, []DropRecord{
		{AtNs: time.Unix(100, 0).UnixNano(), Port: 1, Cause: port.DropUnroutable, Dir: DropRx, SLID: 1, DLID: 0x21, VL: 1},
		{AtNs: t1, Port: 2, Cause: port.DropNotActive, Dir: DropTx, SLID: 1, DLID: 0x22},
		{AtNs: t1, Port: 2, Out: 1, Cause: port.DropLinkDown, Dir: DropRx, SLID: 1, DLID: 0x24},
	}, all.Records)
	assert.Equal(t, all.Records[1:], later.Records)
	assert.Equal(t, uint64(3), all.Written)
	assert.Equal(t, port.DefaultDropLogSize, all.Size)
	assert.Equal(t, t1, all.NowNs)

	// No records: an empty list, not null.
	res, err := n.handle(context.Background(), "drops", []byte(`{"since_ns":9000000000000000000}`))
	require.NoError(t, err)
	assert.Empty(t, res.(DropsReply).Records)
	assert.NotNil(t, res.(DropsReply).Records)
	_, err = n.handle(context.Background(), "drops", []byte(`{"since":1}`))
	assert.ErrorContains(t, err, "unknown field", "as every op's")
	res, err = n.handle(context.Background(), "drops", nil)
	require.NoError(t, err)
	assert.Len(t, res.(DropsReply).Records, 3, "no args: every record")
}

// TestDropDirJSON: the directions travel by name, and an unknown one is
// an error naming the ones there are.
func TestDropDirJSON(t *testing.T) {
	testsupport.EnumJSON(t, dropDirs.Values())
	var d DropDir
	assert.ErrorContains(t, json.Unmarshal([]byte(`"up"`), &d), "rx")
}
