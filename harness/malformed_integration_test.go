package harness_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/link"
	"ibfab/link/veth"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// TestMalformedFrames writes bad frames into the switch's port 1 from a
// second socket on ca1's veth: each is counted by cause and dropped, and
// the switch keeps serving.
func TestMalformedFrames(t *testing.T) {
	topo := fabrictest.Star(t)
	f := fabrictest.Up(t, "mal", topo, harness.UpOptions{})
	sm := f.NewSM("ca2")
	require.NoError(t, sm.Configure())

	var ep *veth.Endpoint
	require.NoError(t, fabricnet.Do(fabricnet.Namespace(f.Name, "ca1"), func() (err error) {
		ep, err = veth.Open("p1")
		return err
	}))
	defer ep.Close()

	good := wire.AppendUD(nil, &wire.UDFields{VL: 0, DLID: sm.LID[2], SLID: sm.LID[1], PKey: 0xffff,
		DestQP: 2, QKey: 0x11111111, SrcQP: 2, Payload: make([]byte, 256)})
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 50
	var crc, malformed int
	for i := range n {
		// Random bytes of a random length: counted as one or the other.
		junk := make([]byte, 40+rng.IntN(400))
		for j := range junk {
			junk[j] = byte(rng.Uint32())
		}
		require.NoError(t, ep.WritePacket(link.KindData, junk))

		bad := append([]byte(nil), good...)
		bad[wire.LRHSize+wire.BTHSize+wire.DETHSize+i] ^= 0x10 // a payload bit: ICRC and VCRC fail
		require.NoError(t, ep.WritePacket(link.KindData, bad))
		crc++

		short := append([]byte(nil), good...)
		binary.BigEndian.PutUint16(short[2:], binary.BigEndian.Uint16(short[2:])+8) // PktLen beyond the frame
		require.NoError(t, ep.WritePacket(link.KindData, short))
		malformed++

		require.NoError(t, ep.WritePacket(link.KindData, good[:20])) // truncated
		malformed++

		fc := wire.AppendFlowControl(nil, &wire.FlowControlFields{Op: wire.FlowControlNormal, VL: 0})
		fc[5] ^= 0xff // LPCRC
		require.NoError(t, ep.WritePacket(link.KindLink, fc))
		crc++
	}
	var drops map[string]uint64
	fabrictest.Wait(t, 5*time.Second, "drops counted", func() bool {
		drops = f.Node("sw1").Ports[0].Drops
		var total uint64
		for _, v := range drops {
			total += v
		}
		return total >= 5*n
	})
	t.Logf("sw1[1] drops: %v", drops)
	assert.GreaterOrEqual(t, drops["crc_error"], uint64(crc))
	assert.GreaterOrEqual(t, drops["malformed"], uint64(malformed))
	assert.Equal(t, uint64(5*n), drops["crc_error"]+drops["malformed"], "every bad frame counted once, as one cause")

	// The switch still serves: its link to ca1 is Active, SMPs are answered.
	st := f.Node("sw1")
	assert.Equal(t, "Active", st.Ports[0].State)
	guid, err := sm.NodeGUID(1)
	require.NoError(t, err)
	assert.Equal(t, topo.Node(1).GUID, guid)
	r, err := sm.LIDGet(sm.LID[0], mad.AttrNodeInfo, 0)
	require.NoError(t, err)
	assert.Equal(t, mad.StatusOK, mad.MAD(r).Status())
}
