package mad_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

// TestSALayouts checks every record layout: its size is whole words, its
// components lie inside it without overlapping, and it has the number of
// components the component-mask tables give.
func TestSALayouts(t *testing.T) {
	want := map[string]int{"NodeRecord": 15, "PortInfoRecord": 58, "PathRecord": 24, "MCMemberRecord": 19,
		"ServiceRecord": 37, "InformInfoRecord": 16, "MultiPathRecord": 22, "SMInfoRecord": 7,
		"LinkRecord": 5, "GUIDInfoRecord": 12, "MulticastForwardingTableRecord": 5}
	for _, l := range mad.SALayouts() {
		t.Run(l.Name, func(t *testing.T) {
			assert.Zero(t, l.Size%8, "size")
			used := make([]bool, l.Size*8)
			for _, c := range l.Components {
				require.LessOrEqual(t, c.Bit+c.Bits, l.Size*8, c.Name)
				for b := c.Bit; b < c.Bit+c.Bits; b++ {
					assert.False(t, used[b], "%s overlaps at bit %d", c.Name, b)
					used[b] = true
				}
			}
			if n, ok := want[l.Name]; ok {
				assert.Len(t, l.Components, n)
			}
			got, ok := mad.SALayout(l.Attr)
			assert.True(t, ok)
			assert.Same(t, l, got)
		})
	}
	assert.Equal(t, uint64(1)<<15, mad.SAPathRecordLayout.Bit("SL"))
	assert.Equal(t, uint64(1)<<16, mad.SAMCMemberRecordLayout.Bit("JoinState"))
	assert.Equal(t, uint64(1)<<45, mad.SAPortInfoRecordLayout.Bit("SubnetTimeOut"))
}

func samplePathRecord() mad.PathRecordFields {
	return mad.PathRecordFields{ServiceID: 0x1122334455667788, DGID: mad.MakeGID(mad.DefaultGIDPrefix, 0x0002c90300000002),
		SGID: mad.MakeGID(mad.DefaultGIDPrefix, 0x0002c90300000001), DLID: 0x0012, SLID: 0x0034, RawTraffic: true,
		FlowLabel: 0xabcde, HopLimit: 0x40, TClass: 0x21, Reversible: true, NumbPath: 0x7f, PKey: 0xffff,
		QoSClass: 0xabc, SL: 0xd, MTUSelector: 2, MTU: uint8(mad.MTU2048), RateSelector: 2, Rate: 3,
		PacketLifeTimeSelector: 2, PacketLifeTime: 0x13, Preference: 1}
}

func sampleMCMemberRecord() mad.MCMemberRecordFields {
	mgid := mad.GID{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	return mad.MCMemberRecordFields{MGID: mgid, PortGID: mad.MakeGID(mad.DefaultGIDPrefix, 7), QKey: 0x0b1b,
		MLID: 0xc001, MTUSelector: 2, MTU: 4, TClass: 3, PKey: 0xffff, RateSelector: 2, Rate: 3,
		PacketLifeTimeSelector: 2, PacketLifeTime: 18, SL: 5, FlowLabel: 0x12345, HopLimit: 9, Scope: 2,
		JoinState: mad.JoinFullMember, ProxyJoin: true}
}

func sampleInformInfoRecord() mad.InformInfoRecordFields {
	return mad.InformInfoRecordFields{SubscriberGID: mad.MakeGID(mad.DefaultGIDPrefix, 0x99), Enum: 3,
		InformInfo: mad.InformInfoFields{GID: mad.MakeGID(1, 2), LIDRangeBegin: 0xffff, LIDRangeEnd: 0x1234,
			IsGeneric: true, Subscribe: true, Type: 0xffff, TrapNumber: 64, QPN: 0x123456, RespTimeValue: 19,
			ProducerType: 0xabcdef}}
}

func sampleServiceRecord() mad.ServiceRecordFields {
	f := mad.ServiceRecordFields{ID: 0x10000ce100415453, GID: mad.MakeGID(mad.DefaultGIDPrefix, 5), PKey: 0xffff,
		Lease: mad.ServiceLeaseIndefinite, Name: "ibfab-test"}
	for i := range f.Key {
		f.Key[i] = byte(i + 1)
	}
	for i := range f.Data8 {
		f.Data8[i] = uint8(200 + i)
	}
	for i := range f.Data16 {
		f.Data16[i] = uint16(1000 * (i + 1))
	}
	f.Data32 = [4]uint32{1, 1 << 31, 3, 0xdeadbeef}
	f.Data64 = [2]uint64{1 << 63, 42}
	return f
}

// TestSARecordRoundTrip encodes every record with distinct values,
// decodes it and checks a few bits at their spec offsets.
func TestSARecordRoundTrip(t *testing.T) {
	pr := samplePathRecord()
	b := mad.AppendPathRecord(nil, &pr)
	require.Len(t, b, 64)
	assert.Equal(t, byte(0x0d), b[53]&0x0f, "SL in byte 53's low nibble")
	assert.Equal(t, byte(0x80|uint8(mad.MTU2048)), b[54], "MTUSelector 2, MTU")
	assert.Equal(t, byte(0xff), b[49], "Reversible and NumbPath")
	got, err := mad.DecodePathRecord(b)
	require.NoError(t, err)
	assert.Equal(t, pr, got)

	mc := sampleMCMemberRecord()
	b = mad.AppendMCMemberRecord(nil, &mc)
	require.Len(t, b, 56)
	assert.Equal(t, byte(0x21), b[48], "Scope 2, JoinState full")
	gotMC, err := mad.DecodeMCMemberRecord(b)
	require.NoError(t, err)
	assert.Equal(t, mc, gotMC)

	ii := sampleInformInfoRecord()
	b = mad.AppendInformInfoRecord(nil, &ii)
	gotII, err := mad.DecodeInformInfoRecord(b)
	require.NoError(t, err)
	assert.Equal(t, ii, gotII)

	sr := sampleServiceRecord()
	b = mad.AppendServiceRecord(nil, &sr)
	require.Len(t, b, 176)
	gotSR, err := mad.DecodeServiceRecord(b)
	require.NoError(t, err)
	assert.Equal(t, sr, gotSR)

	nr := mad.NodeRecordFields{LID: 9, NodeInfo: mad.NodeInfoFields{BaseVersion: 1, ClassVersion: 1, NodeType: mad.NodeTypeCA,
		NumPorts: 2, NodeGUID: 0x10, PortGUID: 0x11, SystemImageGUID: 0x12, PartitionCap: 64, LocalPortNum: 1, VendorID: 0x2c9},
		NodeDescription: "H1 HCA-1"}
	b = mad.AppendNodeRecord(nil, &nr)
	require.Len(t, b, 112)
	gotNR, err := mad.DecodeNodeRecord(b)
	require.NoError(t, err)
	assert.Equal(t, nr, gotNR)
	assert.Equal(t, uint64(0x10), mad.SANodeRecordLayout.Components[7].Uint(b), "NodeGUID component")

	mp := mad.MultiPathRecordFields{Reversible: true, NumbPath: 4, PKey: 0xffff, SL: 1, MTU: 4, Rate: 3,
		ServiceID: 0x0102030405060708, SGIDCount: 1, DGIDCount: 2,
		GIDs: []mad.GID{mad.MakeGID(1, 1), mad.MakeGID(1, 2), mad.MakeGID(1, 3)}}
	b = mad.AppendMultiPathRecord(nil, &mp)
	require.Len(t, b, 24+48)
	gotMP, err := mad.DecodeMultiPathRecord(b)
	require.NoError(t, err)
	assert.Equal(t, mp, gotMP)
	_, err = mad.DecodeMultiPathRecord(b[:60])
	assert.Error(t, err, "GIDs cut off")
}

// TestSAMatch checks component-mask matching, sub-byte components
// included.
func TestSAMatch(t *testing.T) {
	l := mad.SAPathRecordLayout
	a := samplePathRecord()
	q := a
	q.SL, q.DLID = 3, 0x99
	ab, qb := mad.AppendPathRecord(nil, &a), mad.AppendPathRecord(nil, &q)
	assert.True(t, l.Match(qb, ab, l.Bit("SLID")|l.Bit("MTU")))
	assert.False(t, l.Match(qb, ab, l.Bit("SL")))
	assert.False(t, l.Match(qb, ab, l.Bit("DLID")))
	assert.True(t, l.Match(qb, ab, 1<<63), "bits past the components are ignored")
}

// TestSAMAD round-trips the SA header.
func TestSAMAD(t *testing.T) {
	f := mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: 2,
		Method: mad.MethodGetTableResp, Status: mad.StatusSANoRecords, TransactionID: 77, AttrID: mad.AttrSAPathRecord},
		RMPPVersion: 1, RMPPType: uint8(mad.RMPPTypeData), RMPPFlags: 7, RMPPRespTime: 0x1f, SegmentNumber: 1,
		PayloadLength: 84, SMKey: 0x1234, AttributeOffset: 8, ComponentMask: 0x30}
	f.Data[0] = 0xaa
	b := mad.AppendSAMAD(nil, &f)
	got, err := mad.DecodeSAMAD(b)
	require.NoError(t, err)
	assert.Equal(t, f, got)
	assert.Equal(t, "NoRecords", mad.SAStatusName(got.MAD.Status))
	_, err = mad.DecodeSAMAD(b[:100])
	assert.Error(t, err)
	b[1] = byte(mad.ClassPerfMgt)
	_, err = mad.DecodeSAMAD(b)
	assert.Error(t, err)
}
