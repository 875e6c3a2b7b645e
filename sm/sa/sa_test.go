package sa_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/sm"
	"ibfab/sm/sa"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// sent collects what the SA sends.
type sent struct{ all []sa.Response }

func (s *sent) SendSA(r sa.Response) error { s.all = append(s.all, r); return nil }

func (s *sent) last(t *testing.T) sa.Response {
	t.Helper()
	require.NotEmpty(t, s.all, "nothing sent")
	return s.all[len(s.all)-1]
}

// env is a swept fabric of two leaves, two spines and two HCAs per leaf,
// the SM on the first HCA, and an SA fed its view.
type env struct {
	f     *memfabric.Fabric
	port  *memport.Port
	sm    *sm.SM
	sa    *sa.SA
	out   *sent
	hcas  []int // CA node indexes in the SM's subnet
	sn    *sm.Subnet
	topo  *topologies.Topology
	smNod int
}

func newEnv(t testing.TB) *env { return newEnvWith(t, sm.Config{}) }

func newEnvWith(t testing.TB, cfg sm.Config) *env {
	t.Helper()
	topo, err := topologies.FatTree(2, 2, 2)
	require.NoError(t, err)
	return newEnvTopo(t, topo, cfg)
}

// newEnvTopo is newEnvWith on topo, a fat tree of two leaves with two
// HCAs each.
func newEnvTopo(t testing.TB, topo *topologies.Topology, cfg sm.Config) *env {
	t.Helper()
	ca := -1
	for i, n := range topo.Nodes() {
		if n.Type == topologies.CA {
			ca = i
			break
		}
	}
	f, err := memfabric.NewFabric(topo)
	require.NoError(t, err)
	t.Cleanup(f.Close)
	p, err := memport.New(f, ca, 1)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	s, err := sm.New(p, cfg)
	require.NoError(t, err)
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	require.True(t, res.SubnetUp, "%+v", res)
	out := &sent{}
	a, err := sa.New(sa.Config{Sender: out, Clock: f.Clock(), SMKey: 0x5eed})
	require.NoError(t, err)
	a.Update(s.View())
	e := &env{f: f, port: p, sm: s, sa: a, out: out, sn: s.Subnet(), topo: topo, smNod: ca}
	for i, n := range e.sn.Topo.Nodes() {
		if n.Type == topologies.CA {
			e.hcas = append(e.hcas, i)
		}
	}
	require.Len(t, e.hcas, 4)
	return e
}

// lid returns the LID of HCA k's port 1.
func (e *env) lid(k int) uint16 { return e.sn.LID[e.hcas[k]][1] }

// gid returns the port GID of HCA k.
func (e *env) gid(k int) mad.GID {
	return mad.MakeGID(mad.DefaultGIDPrefix, e.sn.Topo.Node(e.hcas[k]).Ports[1].GUID)
}

// ask sends the SA one request from HCA k's LID and returns its answer.
func (e *env) ask(t *testing.T, from int, method mad.Method, attr mad.AttrID, mask uint64, rec []byte) sa.Response {
	t.Helper()
	f := mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: sa.ClassVersion,
		Method: method, TransactionID: 0x1234, AttrID: attr}, ComponentMask: mask}
	copy(f.Data[:], rec)
	return e.askMAD(t, from, mad.AppendSAMAD(nil, &f))
}

func (e *env) askMAD(t *testing.T, from int, b []byte) sa.Response {
	t.Helper()
	n := len(e.out.all)
	e.sa.HandleMAD(madport.MAD{LID: e.lid(from), QP: 1, Data: b})
	require.Len(t, e.out.all, n+1, "one answer")
	r := e.out.last(t)
	assert.Equal(t, uint64(0x1234), r.Header.MAD.TransactionID)
	return r
}

// records splits a GetTable answer into records.
func records(t *testing.T, r sa.Response) [][]byte {
	t.Helper()
	size := int(r.Header.AttributeOffset) * 8
	require.NotZero(t, size)
	require.Zero(t, len(r.Payload)%size)
	var out [][]byte
	for off := 0; off < len(r.Payload); off += size {
		out = append(out, r.Payload[off:off+size])
	}
	return out
}

func TestNodeRecords(t *testing.T) {
	e := newEnv(t)
	r := e.ask(t, 1, mad.MethodGetTable, mad.AttrSANodeRecord, 0, nil)
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	assert.Equal(t, mad.MethodGetTableResp, r.Header.MAD.Method)
	assert.Equal(t, uint16(14), r.Header.AttributeOffset)
	recs := records(t, r)
	assert.Len(t, recs, 8, "4 switches and 4 HCA ports")
	byLID := map[uint16]mad.NodeRecordFields{}
	for _, b := range recs {
		f, err := mad.DecodeNodeRecord(b)
		require.NoError(t, err)
		byLID[f.LID] = f
	}
	for _, e2 := range e.sn.EndPorts() {
		f, ok := byLID[e2.LID]
		require.True(t, ok, "LID %d", e2.LID)
		n := e.sn.Topo.Node(e2.Node)
		assert.Equal(t, n.GUID, f.NodeInfo.NodeGUID)
		assert.Equal(t, n.Description, f.NodeDescription)
		assert.Equal(t, uint8(n.NumPorts), f.NodeInfo.NumPorts)
	}

	l := mad.SANodeRecordLayout
	one := mad.AppendNodeRecord(nil, &mad.NodeRecordFields{LID: e.lid(2)})
	r = e.ask(t, 1, mad.MethodGet, mad.AttrSANodeRecord, l.Bit("LID"), one)
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	assert.Equal(t, mad.MethodGetResp, r.Header.MAD.Method)
	got, err := mad.DecodeNodeRecord(r.Payload)
	require.NoError(t, err)
	assert.Equal(t, e.sn.Topo.Node(e.hcas[2]).GUID, got.NodeInfo.NodeGUID)

	byType := mad.AppendNodeRecord(nil, &mad.NodeRecordFields{NodeInfo: mad.NodeInfoFields{NodeType: mad.NodeTypeSwitch}})
	r = e.ask(t, 1, mad.MethodGetTable, mad.AttrSANodeRecord, l.Bit("NodeType"), byType)
	assert.Len(t, records(t, r), 4, "switches only")
}

// TestStatuses checks the answers to bad queries.
func TestStatuses(t *testing.T) {
	e := newEnv(t)
	l := mad.SANodeRecordLayout
	tests := []struct {
		name   string
		method mad.Method
		attr   mad.AttrID
		mask   uint64
		rec    []byte
		want   mad.Status
	}{
		{"Get many", mad.MethodGet, mad.AttrSANodeRecord, 0, nil, mad.StatusSATooManyRecords},
		{"Get none", mad.MethodGet, mad.AttrSANodeRecord, l.Bit("LID"),
			mad.AppendNodeRecord(nil, &mad.NodeRecordFields{LID: 999}), mad.StatusSANoRecords},
		{"unknown attribute", mad.MethodGet, 0x0999, 0, nil, mad.StatusMethodAttrUnsupported},
		{"unknown method", mad.MethodSend, mad.AttrSANodeRecord, 0, nil, mad.StatusMethodUnsupported},
		{"Set of a read-only record", mad.MethodSet, mad.AttrSANodeRecord, 0, nil, mad.StatusMethodAttrUnsupported},
		{"GetTable of ClassPortInfo", mad.MethodGetTable, mad.AttrSAClassPortInfo, 0, nil, mad.StatusMethodAttrUnsupported},
		{"ServiceRecord without GID", mad.MethodSet, mad.AttrSAServiceRecord, mad.SAServiceRecordLayout.Bit("ServiceID"),
			nil, mad.StatusSAReqInvalid},
		{"join without PortGID", mad.MethodSet, mad.AttrSAMCMemberRecord, mad.SAMCMemberRecordLayout.Bit("MGID"),
			nil, mad.StatusSAReqInsufficient},
		{"PathRecord to an unknown GID", mad.MethodGet, mad.AttrSAPathRecord, mad.SAPathRecordLayout.Bit("DGID"),
			mad.AppendPathRecord(nil, &mad.PathRecordFields{DGID: mad.MakeGID(mad.DefaultGIDPrefix, 0xdead)}),
			mad.StatusSAReqInvalidGID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.ask(t, 1, tt.method, tt.attr, tt.mask, tt.rec)
			assert.Equal(t, tt.want, r.Header.MAD.Status, "%v", r.Header.MAD.Status)
			assert.True(t, r.Header.MAD.Method.IsResponse())
		})
	}
	t.Run("bad class version", func(t *testing.T) {
		f := mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: 1,
			Method: mad.MethodGet, TransactionID: 0x1234, AttrID: mad.AttrSANodeRecord}}
		r := e.askMAD(t, 1, mad.AppendSAMAD(nil, &f))
		assert.Equal(t, mad.StatusBadVersion, r.Header.MAD.Status)
	})
	r := e.ask(t, 1, mad.MethodGet, mad.AttrSAClassPortInfo, 0, nil)
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	cpi, err := mad.DecodeClassPortInfo(r.Payload)
	require.NoError(t, err)
	assert.Equal(t, uint8(sa.ClassVersion), cpi.ClassVersion)
}

// TestPathRecords checks paths between every pair of HCA ports, with
// selectors, and that a path needs the LFTs to deliver.
func TestPathRecords(t *testing.T) {
	e := newEnv(t)
	l := mad.SAPathRecordLayout
	ask := func(q mad.PathRecordFields, mask uint64) sa.Response {
		return e.ask(t, 0, mad.MethodGet, mad.AttrSAPathRecord, mask, mad.AppendPathRecord(nil, &q))
	}
	for a := range 4 {
		for b := range 4 {
			r := ask(mad.PathRecordFields{SLID: e.lid(a), DLID: e.lid(b)}, l.Bit("SLID")|l.Bit("DLID"))
			require.Equal(t, mad.StatusOK, r.Header.MAD.Status, "%d→%d", a, b)
			f, err := mad.DecodePathRecord(r.Payload)
			require.NoError(t, err)
			assert.Equal(t, e.gid(a), f.SGID)
			assert.Equal(t, e.gid(b), f.DGID)
			assert.True(t, f.Reversible)
			assert.Equal(t, uint16(0xffff), f.PKey)
			pi := e.sn.PortInfo[e.hcas[a]][1]
			assert.Equal(t, uint8(pi.NeighborMTU), f.MTU)
		}
	}
	// By GIDs, as ibv/rdma_cm ask.
	r := ask(mad.PathRecordFields{SGID: e.gid(0), DGID: e.gid(3)}, l.Bit("SGID")|l.Bit("DGID"))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	f, _ := mad.DecodePathRecord(r.Payload)
	assert.Equal(t, e.lid(3), f.DLID)

	// Selectors: an MTU below the path's is given; one above it is not.
	mtu := uint8(e.sn.PortInfo[e.hcas[0]][1].NeighborMTU)
	pair := mad.PathRecordFields{SLID: e.lid(0), DLID: e.lid(3)}
	q := pair
	q.MTUSelector, q.MTU = mad.SelectorLess, mtu
	r = ask(q, l.Bit("SLID")|l.Bit("DLID")|l.Bit("MTUSelector")|l.Bit("MTU"))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	f, _ = mad.DecodePathRecord(r.Payload)
	assert.Equal(t, mtu-1, f.MTU)
	q.MTUSelector, q.MTU = mad.SelectorGreater, mtu
	r = ask(q, l.Bit("SLID")|l.Bit("DLID")|l.Bit("MTUSelector")|l.Bit("MTU"))
	assert.Equal(t, mad.StatusSANoRecords, r.Header.MAD.Status)
	q = pair
	q.SL = 3
	r = ask(q, l.Bit("SLID")|l.Bit("DLID")|l.Bit("SL"))
	f, _ = mad.DecodePathRecord(r.Payload)
	assert.Equal(t, uint8(3), f.SL)

	// GetTable of every path: 4 HCA ports and 4 switches, all pairs.
	r = e.ask(t, 0, mad.MethodGetTable, mad.AttrSAPathRecord, 0, nil)
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	assert.Len(t, records(t, r), 8*8)

	// A path the LFTs do not deliver is no path: break the first
	// switch's entry for HCA 3 in a copy of the routes.
	v := e.sm.View()
	rt := *v.Routes
	rt.LFT = append([][]uint8(nil), rt.LFT...)
	for _, s := range e.sn.Switches() {
		rt.LFT[s] = append([]uint8(nil), rt.LFT[s]...)
		rt.LFT[s][e.lid(3)] = mad.LFTNoPort
	}
	v.Routes = &rt
	e.sa.Update(v)
	r = ask(pair, l.Bit("SLID")|l.Bit("DLID"))
	assert.Equal(t, mad.StatusSANoRecords, r.Header.MAD.Status)
}

func TestTablesMatchFabric(t *testing.T) {
	e := newEnv(t)
	r := e.ask(t, 0, mad.MethodGetTable, mad.AttrSALinkRecord, 0, nil)
	links := records(t, r)
	assert.Len(t, links, 2*e.sn.Topo.NumLinks(), "both directions of every cable")

	r = e.ask(t, 0, mad.MethodGetTable, mad.AttrSAPortInfoRecord, mad.SAPortInfoRecordLayout.Bit("EndportLID"),
		mad.AppendPortInfoRecord(nil, &mad.PortInfoRecordFields{EndportLID: e.lid(1)}))
	pis := records(t, r)
	require.Len(t, pis, 1)
	pi, _ := mad.DecodePortInfoRecord(pis[0])
	assert.Equal(t, e.lid(1), pi.PortInfo.LID)
	assert.Zero(t, pi.PortInfo.MKey, "M_Key hidden")

	r = e.ask(t, 0, mad.MethodGetTable, mad.AttrSALFTRecord, 0, nil)
	lfts := records(t, r)
	rt := e.sm.Routes()
	for _, b := range lfts {
		f, _ := mad.DecodeLFTRecord(b)
		o, ok := e.sn.Owner(f.LID)
		require.True(t, ok)
		node := e.sn.EndPorts()[o].Node
		for k, p := range f.LFT.Ports {
			if lid := int(f.BlockNum)*64 + k; lid <= int(rt.MaxLID) {
				assert.Equal(t, rt.LFT[node][lid], p, "switch LID %d entry %d", f.LID, lid)
			}
		}
	}
	assert.Len(t, lfts, 4, "one block per switch")

	r = e.ask(t, 0, mad.MethodGet, mad.AttrSASMInfoRecord, 0, nil)
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	smi, _ := mad.DecodeSMInfoRecord(r.Payload)
	assert.Equal(t, e.sn.SMLID, smi.LID)
	assert.Equal(t, mad.SMStateMaster, smi.SMInfo.SMState)

	for _, attr := range []mad.AttrID{mad.AttrSASwitchInfoRecord, mad.AttrSAGUIDInfoRecord} {
		r = e.ask(t, 0, mad.MethodGetTable, attr, 0, nil)
		require.Equal(t, mad.StatusOK, r.Header.MAD.Status, "%v", attr)
		assert.NotEmpty(t, records(t, r), "%v", attr)
	}
	// P_Key tables only for a requester with the SM_Key, as OpenSM.
	r = e.ask(t, 0, mad.MethodGetTable, mad.AttrSAPKeyTableRecord, 0, nil)
	assert.Equal(t, mad.StatusSAReqInvalid, r.Header.MAD.Status)
	f := mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: sa.ClassVersion,
		Method: mad.MethodGetTable, TransactionID: 0x1234, AttrID: mad.AttrSAPKeyTableRecord}, SMKey: 0x5eed}
	r = e.askMAD(t, 0, mad.AppendSAMAD(nil, &f))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	pk := records(t, r)
	n := 0
	blocks := func(capacity int) int { return max(1, (capacity+31)/32) }
	for _, ep := range e.sn.EndPorts() {
		n += blocks(int(e.sn.PartitionCap[ep.Node]))
		if e.sn.IsSwitch(ep.Node) {
			n += e.sn.Topo.Node(ep.Node).NumPorts * blocks(int(e.sn.Switch[ep.Node].PartitionEnforcementCap))
		}
	}
	assert.Len(t, pk, n, "the blocks PartitionCap holds, of every end port, and PartitionEnforcementCap of every switch port")
	p0, _ := mad.DecodePKeyTableRecord(pk[0])
	assert.Equal(t, mad.PKey(0xffff), p0.PKeys.PKeys[0])
}

func TestServiceRecords(t *testing.T) {
	e := newEnv(t)
	l := mad.SAServiceRecordLayout
	set := mad.ServiceRecordFields{ID: 0x1000, GID: e.gid(1), Lease: 10, Name: "svc"}
	mask := l.Bit("ServiceID") | l.Bit("ServiceGID") | l.Bit("ServiceLease") | l.Bit("ServiceName")
	r := e.ask(t, 1, mad.MethodSet, mad.AttrSAServiceRecord, mask, mad.AppendServiceRecord(nil, &set))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	got, _ := mad.DecodeServiceRecord(r.Payload)
	assert.Equal(t, uint16(0xffff), got.PKey)
	r = e.ask(t, 2, mad.MethodGet, mad.AttrSAServiceRecord, l.Bit("ServiceName"), mad.AppendServiceRecord(nil, &set))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	e.f.Advance(11 * time.Second)
	r = e.ask(t, 2, mad.MethodGet, mad.AttrSAServiceRecord, l.Bit("ServiceName"), mad.AppendServiceRecord(nil, &set))
	assert.Equal(t, mad.StatusSANoRecords, r.Header.MAD.Status, "lease ended")

	set.Lease = mad.ServiceLeaseIndefinite
	e.ask(t, 1, mad.MethodSet, mad.AttrSAServiceRecord, mask, mad.AppendServiceRecord(nil, &set))
	r = e.ask(t, 1, mad.MethodDelete, mad.AttrSAServiceRecord, l.Bit("ServiceID")|l.Bit("ServiceGID"),
		mad.AppendServiceRecord(nil, &set))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	assert.Equal(t, mad.MethodDeleteResp, r.Header.MAD.Method)
	r = e.ask(t, 1, mad.MethodGetTable, mad.AttrSAServiceRecord, 0, nil)
	assert.Empty(t, r.Payload)
}

// join builds an MCMemberRecord join of HCA k.
func join(e *env, k int, mgid mad.GID, states uint8) (mad.MCMemberRecordFields, uint64) {
	l := mad.SAMCMemberRecordLayout
	return mad.MCMemberRecordFields{MGID: mgid, PortGID: e.gid(k), JoinState: states},
		l.Bit("MGID") | l.Bit("PortGID") | l.Bit("JoinState")
}

var broadcast = mad.GID{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}

func TestMulticast(t *testing.T) {
	e := newEnv(t)
	l := mad.SAMCMemberRecordLayout
	// A subscriber to every trap, on HCA 3.
	ii := mad.InformInfoFields{LIDRangeBegin: 0xffff, IsGeneric: true, Subscribe: true, Type: 0xffff,
		TrapNumber: 0xffff, QPN: 1, ProducerType: 0xffffff}
	r := e.ask(t, 3, mad.MethodSet, mad.AttrSAInformInfo, 0, mad.AppendInformInfo(nil, &ii))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)

	// Joining the broadcast group the SA made at start.
	q, mask := join(e, 0, broadcast, mad.JoinFullMember)
	r = e.ask(t, 0, mad.MethodSet, mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status, "%v", r.Header.MAD.Status)
	got, _ := mad.DecodeMCMemberRecord(r.Payload)
	assert.Equal(t, uint16(0xc000), got.MLID)
	assert.Equal(t, uint32(0x0b1b), got.QKey)
	assert.Equal(t, uint16(0xffff), got.PKey)

	// Another HCA joins naming the wrong Q_Key: refused.
	q, mask = join(e, 2, broadcast, mad.JoinFullMember)
	q.QKey = 7
	r = e.ask(t, 2, mad.MethodSet, mad.AttrSAMCMemberRecord, mask|l.Bit("Q_Key"), mad.AppendMCMemberRecord(nil, &q))
	assert.Equal(t, mad.StatusSAReqInvalid, r.Header.MAD.Status)
	// Joining for another port of the same partition, as OpenSM takes
	// it (ProxyJoin or not).
	q, mask = join(e, 2, broadcast, mad.JoinFullMember)
	r = e.ask(t, 1, mad.MethodSet, mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)

	// The MFT blocks: each leaf's port to its member, and the way
	// between the leaves through one spine.
	sets := e.sa.TakeSets()
	require.NotEmpty(t, sets)
	ports := map[int]uint16{}
	for _, s := range sets {
		assert.Equal(t, mad.AttrMulticastFwdTbl, s.Attr)
		m := mad.MulticastForwardingTable(s.Data).PortMask(0)
		ports[s.Node] |= m
		e.sa.SetDone(s, nil)
	}
	assert.Len(t, ports, 3, "two leaves and one spine")
	for k := range 3 {
		if k == 1 {
			continue
		}
		ep := e.sn.EndPorts()
		o, _ := e.sn.Owner(e.lid(k))
		assert.NotZero(t, ports[ep[o].Switch]&(1<<ep[o].SwitchPort), "member %d's leaf port", k)
	}
	assert.Empty(t, e.sa.TakeSets(), "nothing changed, nothing to send")
	r = e.ask(t, 0, mad.MethodGetTable, mad.AttrSAMFTRecord, 0, nil)
	assert.Len(t, records(t, r), 3)

	// Creating a group: the full create mask is needed; trap 66 goes to
	// the subscriber.
	mgid := mad.GID{0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	q, mask = join(e, 1, mgid, mad.JoinFullMember)
	r = e.ask(t, 1, mad.MethodSet, mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))
	assert.Equal(t, mad.StatusSAReqInsufficient, r.Header.MAD.Status)
	q.QKey, q.PKey = 0x1111, 0xffff
	mask |= l.Bit("Q_Key") | l.Bit("P_Key") | l.Bit("TClass") | l.Bit("FlowLabel") | l.Bit("SL")
	before := len(e.out.all)
	e.sa.HandleMAD(madport.MAD{LID: e.lid(1), QP: 1, Data: setMAD(mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))})
	require.Len(t, e.out.all, before+2, "a Report and the answer")
	rep := e.out.all[before]
	assert.Equal(t, mad.MethodReport, rep.Header.MAD.Method)
	assert.Equal(t, e.lid(3), rep.To.LID)
	n, _ := mad.DecodeNotice(rep.Payload)
	assert.Equal(t, uint16(sa.TrapMcGroupCreated), n.TrapNumber)
	got, _ = mad.DecodeMCMemberRecord(e.out.all[before+1].Payload)
	assert.Equal(t, uint16(0xc001), got.MLID)

	// Leaving: the group goes with its last member (trap 67).
	del := setMAD(mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))
	mad.MAD(del).SetMethod(mad.MethodDelete)
	e.sa.HandleMAD(madport.MAD{LID: e.lid(1), QP: 1, Data: del})
	require.Equal(t, mad.StatusOK, e.out.last(t).Header.MAD.Status)
	assert.Len(t, e.sa.Groups(), 1)
	var traps []uint16
	for _, s := range e.out.all[before+2:] {
		if s.Header.MAD.Method == mad.MethodReport {
			n, _ := mad.DecodeNotice(s.Payload)
			traps = append(traps, n.TrapNumber)
		}
	}
	assert.Equal(t, []uint16{sa.TrapMcGroupDeleted}, traps)
	r = e.ask(t, 1, mad.MethodDelete, mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))
	assert.Equal(t, mad.StatusSAReqInvalid, r.Header.MAD.Status, "no such group")
}

func setMAD(attr mad.AttrID, mask uint64, rec []byte) []byte {
	f := mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: sa.ClassVersion,
		Method: mad.MethodSet, TransactionID: 0x1234, AttrID: attr}, ComponentMask: mask}
	copy(f.Data[:], rec)
	return mad.AppendSAMAD(nil, &f)
}

// TestReportsPortGone: a subscriber hears trap 65 when a sweep no longer
// finds a port, and its multicast membership ends.
func TestReportsPortGone(t *testing.T) {
	e := newEnv(t)
	ii := mad.InformInfoFields{LIDRangeBegin: 0xffff, IsGeneric: true, Subscribe: true, Type: 0xffff,
		TrapNumber: sa.TrapGIDOutOfService, QPN: 1}
	r := e.ask(t, 0, mad.MethodSet, mad.AttrSAInformInfo, 0, mad.AppendInformInfo(nil, &ii))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	r = e.ask(t, 0, mad.MethodGetTable, mad.AttrSAInformInfoRecord, 0, nil)
	assert.Len(t, records(t, r), 1)
	q, mask := join(e, 3, broadcast, mad.JoinFullMember)
	r = e.ask(t, 3, mad.MethodSet, mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)

	gone := e.gid(3)
	name := ""
	for _, n := range e.topo.Nodes() {
		if n.GUID == e.sn.Topo.Node(e.hcas[3]).GUID {
			name = n.Name
		}
	}
	require.NoError(t, e.port.PowerOff(name))
	_, err := e.sm.Sweep(context.Background())
	require.NoError(t, err)
	before := len(e.out.all)
	e.sa.Update(e.sm.View())
	require.Len(t, e.out.all, before+1)
	n, _ := mad.DecodeNotice(e.out.all[before].Payload)
	assert.Equal(t, uint16(sa.TrapGIDOutOfService), n.TrapNumber)
	var g mad.GID
	copy(g[:], n.DataDetails[6:])
	assert.Equal(t, gone, g)
	r = e.ask(t, 0, mad.MethodGetTable, mad.AttrSAMCMemberRecord, 0, nil)
	recs := records(t, r)
	require.Len(t, recs, 1, "the broadcast group, no member left")
	mc, _ := mad.DecodeMCMemberRecord(recs[0])
	assert.True(t, mc.PortGID.IsZero(), "the member left with its port")
}

// TestThroughSM runs the SA inside the SM: requests reach it only while
// the SM is master, and the MFT blocks it asks for are sent between
// sweeps.
func TestThroughSM(t *testing.T) {
	e := newEnv(t)
	e.sm.SetSubnetAdmin(e.sa)
	q, mask := join(e, 1, broadcast, mad.JoinFullMember)
	e.sa.HandleMAD(madport.MAD{LID: e.lid(1), QP: 1, Data: setMAD(mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))})
	q, _ = join(e, 3, broadcast, mad.JoinFullMember)
	e.sa.HandleMAD(madport.MAD{LID: e.lid(3), QP: 1, Data: setMAD(mad.AttrSAMCMemberRecord, mask, mad.AppendMCMemberRecord(nil, &q))})
	require.NoError(t, e.sm.Serve(context.Background(), 50*time.Millisecond))
	st := e.sa.Stats()
	assert.Equal(t, uint64(3), st.MFTSets, "two leaves and a spine")
	assert.Zero(t, st.MFTFails)
	require.NoError(t, e.sm.Serve(context.Background(), 50*time.Millisecond))
	assert.Equal(t, uint64(3), e.sa.Stats().MFTSets, "only changed blocks are sent")
	// The blocks reached the switches: read one back.
	o, _ := e.sn.Owner(e.lid(1))
	leaf := e.sn.EndPorts()[o]
	data := getMFT(t, e, leaf.Switch)
	assert.NotZero(t, mad.MulticastForwardingTable(data).PortMask(0)&(1<<leaf.SwitchPort))
}

// getMFT reads MFT block 0, position 0 of switch node i by directed route.
func getMFT(t *testing.T, e *env, i int) []byte {
	t.Helper()
	f := mad.DRSMPFields{Method: mad.MethodGet, TransactionID: 0x77, AttrID: mad.AttrMulticastFwdTbl,
		HopCount: uint8(len(e.sn.Paths[i]) - 1), DrSLID: 0xffff, DrDLID: 0xffff}
	copy(f.InitialPath[:], e.sn.Paths[i])
	require.NoError(t, e.port.Send(madport.MAD{LID: 0xffff, Data: mad.AppendDRSMP(nil, &f)}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		m, err := e.port.Recv(ctx)
		require.NoError(t, err)
		if mad.MAD(m.Data).TransactionID() == 0x77 {
			return append([]byte(nil), mad.DRSMP(m.Data).Data()...)
		}
	}
}

// TestVLTableRecords: the SLtoVL and VLArbitration tables an SM with
// --vl-tables set wrote are the records; without, there are none.
func TestVLTableRecords(t *testing.T) {
	for _, mode := range []sm.VLTables{sm.VLTablesKeep, sm.VLTablesSet} {
		e := newEnvWith(t, sm.Config{PortConfig: sm.PortConfig{VLTables: mode}})
		// Every port: a switch's 0-n, each HCA's one; SLtoVL per (output,
		// input) pair of a switch, once per HCA port; VLArbitration
		// blocks 1-4 of each port. Tables ibsm did not write read zero.
		ports, pairs := 4, 4
		for _, i := range e.sn.Switches() {
			n := e.sn.Topo.Node(i).NumPorts
			ports += n + 1
			pairs += (n + 1) * (n + 1)
		}
		sl := records(t, e.ask(t, 0, mad.MethodGetTable, mad.AttrSASLtoVLRecord, 0, nil))
		assert.Len(t, sl, pairs, "%v: SLtoVL records", mode)
		va := records(t, e.ask(t, 0, mad.MethodGetTable, mad.AttrSAVLArbRecord, 0, nil))
		assert.Len(t, va, 4*ports, "%v: VLArbitration records", mode)
		written := func(recs [][]byte) bool {
			for _, r := range recs {
				if slices.ContainsFunc(r[8:], func(b byte) bool { return b != 0 }) {
					return true
				}
			}
			return false
		}
		assert.Equal(t, mode == sm.VLTablesSet, written(sl), "%v: SLtoVL tables written", mode)
		assert.Equal(t, mode == sm.VLTablesSet, written(va), "%v: VLArbitration tables written", mode)

		// An HCA's port asked as port 0 (osmtest's way) is its own port.
		l := mad.SAVLArbRecordLayout
		q := mad.AppendVLArbRecord(nil, &mad.VLArbRecordFields{LID: e.lid(2), BlockNum: 3})
		r := e.ask(t, 0, mad.MethodGet, mad.AttrSAVLArbRecord, l.Bit("LID")|l.Bit("OutputPortNum")|l.Bit("BlockNum"), q)
		require.Equal(t, mad.StatusOK, r.Header.MAD.Status, "%v: VLArbitration of an HCA's port 0", mode)
		f, err := mad.DecodeVLArbRecord(r.Payload)
		require.NoError(t, err)
		assert.Equal(t, mad.VLArbRecordFields{LID: e.lid(2), OutputPortNum: 1, BlockNum: 3}, mad.VLArbRecordFields{
			LID: f.LID, OutputPortNum: f.OutputPortNum, BlockNum: f.BlockNum})
		ls := mad.SASLtoVLRecordLayout
		qs := mad.AppendSLtoVLRecord(nil, &mad.SLtoVLRecordFields{LID: e.lid(2)})
		r = e.ask(t, 0, mad.MethodGet, mad.AttrSASLtoVLRecord, ls.Bit("LID")|ls.Bit("InputPortNum")|ls.Bit("OutputPortNum"), qs)
		require.Equal(t, mad.StatusOK, r.Header.MAD.Status, "%v: SLtoVL of an HCA's port", mode)
		fs, err := mad.DecodeSLtoVLRecord(r.Payload)
		require.NoError(t, err)
		assert.Equal(t, e.lid(2), fs.LID)
		// A switch's pair, by its LID.
		sw := e.sn.Switches()[0]
		qs = mad.AppendSLtoVLRecord(nil, &mad.SLtoVLRecordFields{LID: e.sn.LID[sw][0], InputPortNum: 2, OutputPortNum: 1})
		r = e.ask(t, 0, mad.MethodGet, mad.AttrSASLtoVLRecord, ls.Bit("LID")|ls.Bit("InputPortNum")|ls.Bit("OutputPortNum"), qs)
		assert.Equal(t, mad.StatusOK, r.Header.MAD.Status, "%v: SLtoVL of a switch's pair", mode)
	}
}

// TestMultiPath asks for paths from one port to two others.
func TestMultiPath(t *testing.T) {
	e := newEnv(t)
	l := mad.SAMultiPathRecordLayout
	q := mad.MultiPathRecordFields{NumbPath: 10, SGIDCount: 1, DGIDCount: 2, GIDs: []mad.GID{e.gid(0), e.gid(2), e.gid(3)}}
	mask := l.Bit("NumbPath") | l.Bit("SGIDCount") | l.Bit("DGIDCount")
	r := e.ask(t, 0, mad.MethodGetMulti, mad.AttrSAMultiPathRecord, mask, mad.AppendMultiPathRecord(nil, &q))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	assert.Equal(t, mad.MethodGetMultiResp, r.Header.MAD.Method)
	recs := records(t, r)
	require.Len(t, recs, 2)
	for i, b := range recs {
		f, err := mad.DecodePathRecord(b)
		require.NoError(t, err)
		assert.Equal(t, e.lid(0), f.SLID)
		assert.Equal(t, e.lid(2+i), f.DLID)
	}
	q.NumbPath = 1
	r = e.ask(t, 0, mad.MethodGetMulti, mad.AttrSAMultiPathRecord, mask, mad.AppendMultiPathRecord(nil, &q))
	assert.Len(t, records(t, r), 1, "NumbPath bounds the answer")
	r = e.ask(t, 0, mad.MethodGetMulti, mad.AttrSAMultiPathRecord, l.Bit("NumbPath"), mad.AppendMultiPathRecord(nil, &q))
	assert.Equal(t, mad.StatusSAReqInsufficient, r.Header.MAD.Status)
	// The counts alone suffice (OpenSM's rule, osmtest's query): every
	// path, up to 127.
	counts := l.Bit("SGIDCount") | l.Bit("DGIDCount")
	r = e.ask(t, 0, mad.MethodGetMulti, mad.AttrSAMultiPathRecord, counts, mad.AppendMultiPathRecord(nil, &q))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	assert.Len(t, records(t, r), 2, "no NumbPath: every path")
	z := q
	z.DGIDCount = 0
	z.GIDs = q.GIDs[:1]
	r = e.ask(t, 0, mad.MethodGetMulti, mad.AttrSAMultiPathRecord, counts, mad.AppendMultiPathRecord(nil, &z))
	assert.Equal(t, mad.StatusSAReqInvalid, r.Header.MAD.Status, "no destination GID")
	r = e.ask(t, 0, mad.MethodGet, mad.AttrSAMultiPathRecord, mask, mad.AppendMultiPathRecord(nil, &q))
	assert.Equal(t, mad.StatusMethodAttrUnsupported, r.Header.MAD.Status, "MultiPathRecord takes GetMulti")
}

// TestPathRecordsLMC: with LMC 1 a pair of ports has four paths, one per
// (SLID, DLID) alias pair, and each the routes of its DLID.
func TestPathRecordsLMC(t *testing.T) {
	e := newEnvWith(t, sm.Config{LIDConfig: sm.LIDConfig{LMC: 1}})
	l := mad.SAPathRecordLayout
	q := mad.PathRecordFields{SGID: e.gid(0), DGID: e.gid(3)}
	r := e.ask(t, 0, mad.MethodGetTable, mad.AttrSAPathRecord, l.Bit("SGID")|l.Bit("DGID"), mad.AppendPathRecord(nil, &q))
	recs := records(t, r)
	require.Len(t, recs, 4)
	pairs := map[[2]uint16]bool{}
	for _, b := range recs {
		f, _ := mad.DecodePathRecord(b)
		pairs[[2]uint16{f.SLID, f.DLID}] = true
		if rt := e.sm.Routes(); rt.Layers > 1 {
			assert.Equal(t, uint8(f.DLID-e.lid(3)), f.SL, "alias i on SL i")
		}
	}
	assert.Len(t, pairs, 4)
	q = mad.PathRecordFields{SLID: e.lid(0) + 1, DLID: e.lid(3) + 1}
	r = e.ask(t, 0, mad.MethodGet, mad.AttrSAPathRecord, l.Bit("SLID")|l.Bit("DLID"), mad.AppendPathRecord(nil, &q))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	f, _ := mad.DecodePathRecord(r.Payload)
	assert.Equal(t, e.lid(3)+1, f.DLID)
	assert.Equal(t, e.gid(3), f.DGID)
}

// TestReportsComeBack: a port that comes back is trap 64, a link between
// switches that goes down trap 128; a Report is sent again until its
// ReportResponse comes.
func TestReportsComeBack(t *testing.T) {
	e := newEnv(t)
	ii := mad.InformInfoFields{LIDRangeBegin: 0xffff, IsGeneric: true, Subscribe: true, Type: 0xffff,
		TrapNumber: 0xffff, QPN: 1}
	r := e.ask(t, 0, mad.MethodSet, mad.AttrSAInformInfo, 0, mad.AppendInformInfo(nil, &ii))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	name := func(i int) string {
		for _, n := range e.topo.Nodes() {
			if n.GUID == e.sn.Topo.Node(i).GUID {
				return n.Name
			}
		}
		return ""
	}
	traps := func(from int) []uint16 {
		var out []uint16
		for _, s := range e.out.all[from:] {
			if s.Header.MAD.Method == mad.MethodReport {
				n, _ := mad.DecodeNotice(s.Payload)
				out = append(out, n.TrapNumber)
			}
		}
		return out
	}
	sweep := func() {
		_, err := e.sm.Sweep(context.Background())
		require.NoError(t, err)
		e.sa.Update(e.sm.View())
	}
	require.NoError(t, e.port.PowerOff(name(e.hcas[3])))
	sweep()
	before := len(e.out.all)
	require.NoError(t, e.port.PowerOn(name(e.hcas[3])))
	sweep()
	assert.Contains(t, traps(before), uint16(sa.TrapGIDInService))

	// A spine's link to a leaf goes down.
	var sw, port int
	for _, s := range e.sn.Switches() {
		for p := 1; p <= e.sn.Topo.Node(s).NumPorts; p++ {
			if peer, ok := e.sn.Topo.Peer(topologies.PortRef{Node: s, Port: p}); ok && e.sn.IsSwitch(peer.Node) {
				sw, port = s, p
			}
		}
	}
	before = len(e.out.all)
	require.NoError(t, e.port.SetLink(name(sw), uint8(port), false))
	sweep()
	assert.Contains(t, traps(before), uint16(sa.TrapLinkStateChange))

	// Unanswered, a Report goes again after ReportTimeout, up to
	// ReportTries times; answered, no more.
	before = len(e.out.all)
	last := e.out.all[before-1]
	require.Equal(t, mad.MethodReport, last.Header.MAD.Method, "%+v", last.Header.MAD)
	e.f.Advance(sa.ReportTimeout + time.Millisecond)
	e.sa.TakeSets()
	require.Greater(t, len(e.out.all), before, "resent")
	var resent []uint64
	for _, rep := range e.out.all[before:] {
		resent = append(resent, rep.Header.MAD.TransactionID)
	}
	assert.Contains(t, resent, last.Header.MAD.TransactionID)
	for _, rep := range e.out.all {
		if rep.Header.MAD.Method != mad.MethodReport {
			continue
		}
		f := rep.Header
		f.MAD.Method = mad.MethodReportResp
		e.sa.HandleMAD(madport.MAD{LID: rep.To.LID, QP: 1, Data: mad.AppendSAMAD(nil, &f)})
	}
	before = len(e.out.all)
	e.f.Advance(sa.ReportTimeout + time.Millisecond)
	e.sa.TakeSets()
	assert.Len(t, e.out.all, before, "every Report answered: nothing resent")
	assert.NotZero(t, e.sa.Stats().ReportAck)
}

// TestMulticastPathRecord: a PathRecord to a group's MGID is the group's
// path from the source.
func TestMulticastPathRecord(t *testing.T) {
	e := newEnv(t)
	l := mad.SAPathRecordLayout
	q := mad.PathRecordFields{SGID: e.gid(1), DGID: broadcast}
	r := e.ask(t, 1, mad.MethodGet, mad.AttrSAPathRecord, l.Bit("SGID")|l.Bit("DGID"), mad.AppendPathRecord(nil, &q))
	require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
	f, _ := mad.DecodePathRecord(r.Payload)
	assert.Equal(t, uint16(0xc000), f.DLID)
	assert.Equal(t, e.lid(1), f.SLID)
	assert.Equal(t, uint8(mad.MTU2048), f.MTU)
	assert.False(t, f.Reversible)
	q.DGID[15] = 1 // no such group
	r = e.ask(t, 1, mad.MethodGet, mad.AttrSAPathRecord, l.Bit("SGID")|l.Bit("DGID"), mad.AppendPathRecord(nil, &q))
	assert.Equal(t, mad.StatusSANoRecords, r.Header.MAD.Status)
}
