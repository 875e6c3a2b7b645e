package interop_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// startIBSM runs ibsm (its SA on, as by default) at node and waits for
// the subnet to come up.
func startIBSM(t *testing.T, f *fabrictest.Fabric, node string, args ...string) *fabrictest.Daemon {
	t.Helper()
	return startIBSMOn(t, f, node, "sim", args...)
}

// startIBSMOn is startIBSM on port spec port ("sim": the attach point;
// "softumad": the HCA's kernel-semantics MAD endpoint, as on a real HCA's
// umad device).
func startIBSMOn(t *testing.T, f *fabrictest.Fabric, node, port string, args ...string) *fabrictest.Daemon {
	t.Helper()
	d := f.StartUMAD(node, append([]string{fabrictest.Bin(t, "ibsm"), "--port", port, "--json"}, args...)...)
	fabrictest.Wait(t, madrouteWait, "ibsm: subnet up", func() bool {
		if exited, err := d.Exited(); exited {
			t.Fatalf("ibsm exited (%v):\n%s", err, d.Output())
		}
		for _, line := range strings.Split(d.Output(), "\n") {
			var r sm.Result
			if json.Unmarshal([]byte(line), &r) == nil && r.Event == "sweep" && r.SubnetUp {
				return true
			}
		}
		return false
	})
	return d
}

// ipoibBroadcast is the IPoIB broadcast group of the default partition.
var ipoibBroadcast = mad.GID{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}

// saJoin sends an MCMemberRecord Set (join) or Delete (leave) of node's
// port 1 to the broadcast group, in join states states, to the SA at
// smLID and returns the answer.
func saJoin(t *testing.T, f *fabrictest.Fabric, node string, smLID uint16, method mad.Method, states uint8) mad.SAMAD {
	t.Helper()
	n := f.Topo.Node(f.Index(node))
	guid := n.GUID + 1 // a CA's port 1 GUID (ibsim's rule, which ibhca follows)
	if len(n.Ports) > 1 && n.Ports[1].GUID != 0 {
		guid = n.Ports[1].GUID
	}
	l := mad.SAMCMemberRecordLayout
	rec := mad.MCMemberRecordFields{MGID: ipoibBroadcast, PortGID: mad.MakeGID(mad.DefaultGIDPrefix, guid),
		JoinState: states}
	h := mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: 2,
		Method: method, TransactionID: uint64(time.Now().UnixNano()) & 0xffffffff, AttrID: mad.AttrSAMCMemberRecord},
		ComponentMask: l.Bit("MGID") | l.Bit("PortGID") | l.Bit("JoinState")}
	copy(h.Data[:], mad.AppendMCMemberRecord(nil, &rec))
	var r nodeproc.ReceivedMAD
	f.MustCall(node, "mad", nodeproc.MADArgs{Port: 1, DLID: smLID, QP: 1, MAD: mad.AppendSAMAD(nil, &h), TimeoutMS: 2000}, &r)
	require.Len(t, r.MAD, mad.MADSize)
	return mad.SAMAD(r.MAD)
}

// rx returns the packets node's port 1 received on its data QP.
func rx(f *fabrictest.Fabric, node string) uint64 { return f.Node(node).Ports[0].Traffic.RxPackets }

// TestSAMulticastIBSM: on a row of four switches with a host each, the
// ports that join the IPoIB broadcast group through ibsm's SA (ca2, ca3)
// get the packets another HCA (ca1, joined send-only) sends to the
// group's MLID, through the MFTs ibsm programmed; a port that did not
// join (ca0, ibsm's) gets none; after ca2 leaves, only ca3 does.
func TestSAMulticastIBSM(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	topo, err := topologies.Mesh(4)
	require.NoError(t, err)
	f := fabrictest.Up(t, "samc", topo, harness.UpOptions{})
	startIBSM(t, f, "ca0")
	smLID := f.Node("ca0").Ports[0].LID

	// The sender joins send-only, as a port must to send to a group: the
	// tree then reaches its switch.
	ans := saJoin(t, f, "ca1", smLID, mad.MethodSet, mad.JoinSendOnly)
	require.Equal(t, mad.StatusOK, ans.MAD().Status(), "send-only join: %v", ans.MAD().Status())
	var mlid uint16
	for _, member := range []string{"ca2", "ca3"} {
		ans = saJoin(t, f, member, smLID, mad.MethodSet, mad.JoinFullMember)
		require.Equal(t, mad.StatusOK, ans.MAD().Status(), "join of %s: %v", member, ans.MAD().Status())
		got, err := mad.DecodeMCMemberRecord(ans.Data())
		require.NoError(t, err)
		mlid = got.MLID
		assert.Equal(t, uint16(0xc000), mlid)
		assert.Equal(t, uint32(0x0b1b), got.QKey)
	}

	send := func() {
		f.MustCall("ca1", "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: fabrictest.PairLoad, Payload: 256,
			Dests: []uint16{mlid}, Seed: 1}, nil)
	}
	rx0, rx2, rx3 := rx(f, "ca0"), rx(f, "ca2"), rx(f, "ca3")
	send()
	fabrictest.Wait(t, 20*time.Second, "every member receives the group's packets", func() bool {
		return rx(f, "ca2") >= rx2+20 && rx(f, "ca3") >= rx3+20
	})
	f.StopTraffic([]string{"ca1"})
	assert.Equal(t, rx0, rx(f, "ca0"), "ca0 did not join and receives nothing")

	ans = saJoin(t, f, "ca2", smLID, mad.MethodDelete, mad.JoinFullMember)
	require.Equal(t, mad.StatusOK, ans.MAD().Status(), "leave: %v", ans.MAD().Status())
	time.Sleep(time.Second) // the MFT blocks changed
	rx2, rx3 = rx(f, "ca2"), rx(f, "ca3")
	send()
	fabrictest.Wait(t, 20*time.Second, "ca3, still a member, receives", func() bool { return rx(f, "ca3") >= rx3+20 })
	f.StopTraffic([]string{"ca1"})
	assert.Equal(t, rx2, rx(f, "ca2"), "after leaving, ca2 receives nothing")
	assert.Equal(t, rx0, rx(f, "ca0"))
}
