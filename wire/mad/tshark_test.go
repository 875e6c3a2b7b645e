package mad_test

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/internal/testsupport/tsharktest"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// madQP0 wraps an SMP in a sealed UD packet to QP0 on VL15, as an SM or an
// SMA sends it.
func madQP0(smp []byte, dlid, slid uint16) []byte {
	return wire.AppendUD(nil, &wire.UDFields{VL: 15, DLID: dlid, SLID: slid, PKey: 0xffff,
		DestQP: 0, SrcQP: 0, Payload: smp})
}

// madQP1 wraps a GMP in a sealed UD packet to QP1 with the well-known
// Q_Key, as perfquery sends it.
func madQP1(gmp []byte, dlid, slid uint16) []byte {
	return wire.AppendUD(nil, &wire.UDFields{VL: 0, DLID: dlid, SLID: slid, PKey: 0xffff,
		DestQP: 1, SrcQP: 1, QKey: 0x80010000, Payload: gmp})
}

// tsharkHeader is what tshark must show of a MAD's common header.
func tsharkHeader(class mad.MgmtClass, m mad.Method, status uint16, classSpecific uint16, tid uint64,
	attr mad.AttrID, mod uint32) map[string]uint64 {
	return map[string]uint64{
		"infiniband.mad.baseversion":       1,
		"infiniband.mad.mgmtclass":         uint64(class),
		"infiniband.mad.classversion":      1,
		"infiniband.mad.method":            uint64(m),
		"infiniband.mad.status":            uint64(status),
		"infiniband.mad.classspecific":     uint64(classSpecific),
		"infiniband.mad.transactionid":     tid,
		"infiniband.mad.attributeid":       uint64(attr),
		"infiniband.mad.attributemodifier": uint64(mod),
	}
}

func tsharkMerge(ms ...map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// tsharkPath is how tshark shows a 64-byte path: its bytes in hex, maybe
// colon-separated; compared without the colons.
func tsharkPath(p []byte) string { return hex.EncodeToString(p) }

type tsharkCase struct {
	name  string
	pkt   []byte
	uints map[string]uint64   // fields tshark must show with these values
	strs  map[string]string   // fields compared as text (colons dropped)
	lists map[string][]uint64 // repeated fields, in order
}

func tsharkCases(t *testing.T) []tsharkCase {
	t.Helper()
	var cases []tsharkCase

	// LID-routed SMP Get and GetResp (NodeInfo).
	const mkey = 0x0102030405060708
	get := mad.AppendSMP(nil, &mad.SMPFields{Method: mad.MethodGet, TransactionID: 0xa1, AttrID: mad.AttrNodeInfo,
		MKey: mkey})
	cases = append(cases, tsharkCase{name: "LID-routed Get NodeInfo", pkt: madQP0(get, 4, 1),
		uints: tsharkMerge(tsharkHeader(mad.ClassSubnLID, mad.MethodGet, 0, 0, 0xa1, mad.AttrNodeInfo, 0),
			map[string]uint64{"infiniband.smplid.mkey": mkey, "infiniband.bth.destqp": 0})})

	ni := mad.NodeInfoFields{BaseVersion: 1, ClassVersion: 1, NodeType: mad.NodeTypeSwitch, NumPorts: 36,
		SystemImageGUID: 0x0002c90300a1b2c0, NodeGUID: 0x0002c90300a1b2c3, PortGUID: 0x0002c90300a1b2c4,
		PartitionCap: 8, DeviceID: 0xc738, Revision: 0x000000a0, LocalPortNum: 7, VendorID: 0x0002c9}
	resp := mad.SMPFields{Method: mad.MethodGetResp, TransactionID: 0xa1, AttrID: mad.AttrNodeInfo, MKey: mkey,
		Status: mad.StatusBusy}
	mad.NodeInfo(resp.Data[:]).Encode(&ni)
	cases = append(cases, tsharkCase{name: "LID-routed GetResp NodeInfo", pkt: madQP0(mad.AppendSMP(nil, &resp), 1, 4),
		uints: tsharkMerge(tsharkHeader(mad.ClassSubnLID, mad.MethodGetResp, 1, 0, 0xa1, mad.AttrNodeInfo, 0),
			map[string]uint64{
				"infiniband.smplid.mkey":              mkey,
				"infiniband.nodeinfo.baseversion":     uint64(ni.BaseVersion),
				"infiniband.nodeinfo.classversion":    uint64(ni.ClassVersion),
				"infiniband.nodeinfo.nodetype":        uint64(ni.NodeType),
				"infiniband.nodeinfo.numports":        uint64(ni.NumPorts),
				"infiniband.nodeinfo.systemimageguid": ni.SystemImageGUID,
				"infiniband.nodeinfo.nodeguid":        ni.NodeGUID,
				"infiniband.nodeinfo.portguid":        ni.PortGUID,
				"infiniband.nodeinfo.partitioncap":    uint64(ni.PartitionCap),
				"infiniband.nodeinfo.deviceid":        uint64(ni.DeviceID),
				"infiniband.nodeinfo.revision":        uint64(ni.Revision),
				"infiniband.nodeinfo.localportnum":    uint64(ni.LocalPortNum),
				"infiniband.nodeinfo.vendorid":        uint64(ni.VendorID),
			})})

	// Directed-route SMPs: an outbound Get, a Set in transit, a GetResp
	// coming back. tshark 4.0's D field applies a 16-bit mask to one byte
	// and always shows 0, so D is checked as the top bit of the status word.
	type drCase struct {
		name     string
		f        mad.DRSMPFields
		dlid     uint16
		attrWant map[string]uint64
	}
	si := mad.SwitchInfoFields{LinearFDBCap: 49152, RandomFDBCap: 0, MulticastFDBCap: 4096, LinearFDBTop: 0x30,
		DefaultPort: 2, DefaultMulticastPrimaryPort: 3, DefaultMulticastNotPrimaryPort: 4, LifeTimeValue: 18,
		PortStateChange: true, OptimizedSLtoVLMappingProgramming: 2, LIDsPerPort: 1, PartitionEnforcementCap: 32,
		InboundEnforcementCap: true, OutboundEnforcementCap: false, FilterRawInboundCap: true,
		FilterRawOutboundCap: false, EnhancedPort0: true, MulticastFDBTop: 0xc010}
	drs := []drCase{
		{name: "DR Get NodeInfo outbound", dlid: 0xffff, f: mad.DRSMPFields{Method: mad.MethodGet, HopCount: 3,
			TransactionID: 0xb1, AttrID: mad.AttrNodeInfo, MKey: mkey, DrSLID: 0xffff, DrDLID: 0xffff,
			InitialPath: [64]byte{0, 1, 7, 2}}},
		{name: "DR Set SwitchInfo in transit", dlid: 0xffff, f: mad.DRSMPFields{Method: mad.MethodSet, HopPointer: 2,
			HopCount: 2, TransactionID: 0xb2, AttrID: mad.AttrSwitchInfo, DrSLID: 1, DrDLID: 0xffff,
			InitialPath: [64]byte{0, 3, 5}, ReturnPath: [64]byte{0, 9}},
			attrWant: map[string]uint64{
				"infiniband.switchinfo.linearfdbcap":                      uint64(si.LinearFDBCap),
				"infiniband.switchinfo.randomfdbcap":                      uint64(si.RandomFDBCap),
				"infiniband.switchinfo.multicastfdbcap":                   uint64(si.MulticastFDBCap),
				"infiniband.switchinfo.linearfdbtop":                      uint64(si.LinearFDBTop),
				"infiniband.switchinfo.defaultport":                       uint64(si.DefaultPort),
				"infiniband.switchinfo.defaultmulticastprimaryport":       uint64(si.DefaultMulticastPrimaryPort),
				"infiniband.switchinfo.defaultmulticastnotprimaryport":    uint64(si.DefaultMulticastNotPrimaryPort),
				"infiniband.switchinfo.lifetimevalue":                     uint64(si.LifeTimeValue),
				"infiniband.switchinfo.portstatechange":                   b2u(si.PortStateChange),
				"infiniband.switchinfo.optimizedsltovlmappingprogramming": uint64(si.OptimizedSLtoVLMappingProgramming),
				"infiniband.switchinfo.lidsperport":                       uint64(si.LIDsPerPort),
				"infiniband.switchinfo.partitionenforcementcap":           uint64(si.PartitionEnforcementCap),
				"infiniband.switchinfo.inboundenforcementcap":             b2u(si.InboundEnforcementCap),
				"infiniband.switchinfo.outboundenforcementcap":            b2u(si.OutboundEnforcementCap),
				"infiniband.switchinfo.filterrawinboundcap":               b2u(si.FilterRawInboundCap),
				"infiniband.switchinfo.filterrawoutboundcap":              b2u(si.FilterRawOutboundCap),
				"infiniband.switchinfo.enhancedportzero":                  b2u(si.EnhancedPort0),
			}},
		{name: "DR GetResp NodeDescription returning", dlid: 0xffff, f: mad.DRSMPFields{Method: mad.MethodGetResp,
			Status: mad.StatusInvalidField, Direction: true, HopPointer: 2, HopCount: 2, TransactionID: 0xb3,
			AttrID: mad.AttrNodeDescription, DrSLID: 0xffff, DrDLID: 0xffff,
			InitialPath: [64]byte{0, 3, 5}, ReturnPath: [64]byte{0, 9, 4}}},
	}
	mad.SwitchInfo(drs[1].f.Data[:]).Encode(&si)
	mad.NodeDescription(drs[2].f.Data[:]).SetText("ibfab switch sw7")
	for _, d := range drs {
		statusWord := uint16(d.f.Status)
		if d.f.Direction {
			statusWord |= 0x8000
		}
		c := tsharkCase{name: d.name, pkt: madQP0(mad.AppendDRSMP(nil, &d.f), d.dlid, 0xffff),
			uints: tsharkMerge(tsharkHeader(mad.ClassSubnDirected, d.f.Method, statusWord,
				uint16(d.f.HopPointer)<<8|uint16(d.f.HopCount), d.f.TransactionID, d.f.AttrID, 0),
				map[string]uint64{
					"infiniband.smpdirected.smpstatus":  uint64(statusWord),
					"infiniband.smpdirected.hoppointer": uint64(d.f.HopPointer),
					"infiniband.smpdirected.hopcount":   uint64(d.f.HopCount),
					"infiniband.smpdirected.drslid":     uint64(d.f.DrSLID),
					"infiniband.smpdirected.drdlid":     uint64(d.f.DrDLID),
					"infiniband.smplid.mkey":            d.f.MKey,
				}, d.attrWant),
			strs: map[string]string{
				"infiniband.smpdirected.initialpath": tsharkPath(d.f.InitialPath[:]),
				"infiniband.smpdirected.returnpath":  tsharkPath(d.f.ReturnPath[:]),
			}}
		if d.f.AttrID == mad.AttrNodeDescription {
			c.strs["infiniband.nodedescription.nodestring"] = "ibfab switch sw7"
		}
		cases = append(cases, c)
	}

	// PMA Get PortCounters on QP1. PortSelect is byte 1 of the PortCounters
	// data (IBA 16.1.3.5), so tshark finding it proves the data offset.
	pma := mad.PMAFields{Method: mad.MethodGet, TransactionID: 0xc1, AttrID: mad.AttrPortCounters}
	pma.Data[1] = 5
	pma.Data[2], pma.Data[3] = 0x12, 0x34
	cases = append(cases, tsharkCase{name: "PMA Get PortCounters", pkt: madQP1(mad.AppendPMA(nil, &pma), 4, 1),
		uints: tsharkMerge(tsharkHeader(mad.ClassPerfMgt, mad.MethodGet, 0, 0, 0xc1, mad.AttrPortCounters, 0),
			map[string]uint64{
				"infiniband.portcounters.portselect":    5,
				"infiniband.portcounters.counterselect": 0x1234,
				"infiniband.bth.destqp":                 1,
				"infiniband.deth.q_key":                 0x80010000,
			})})

	// GetResp of every other attribute this package owns, LID-routed.
	lidResp := func(attr mad.AttrID, mod uint32, fill func([]byte)) []byte {
		f := mad.SMPFields{Method: mad.MethodGetResp, TransactionID: 0xd0 + uint64(attr), AttrID: attr,
			AttrModifier: mod}
		fill(f.Data[:])
		return madQP0(mad.AppendSMP(nil, &f), 1, 2)
	}
	cases = append(cases, tsharkCase{name: "GetResp NodeDescription",
		pkt: lidResp(mad.AttrNodeDescription, 0, func(b []byte) {
			mad.NodeDescription(b).SetText("ibfab host h3 HCA-1")
		}),
		uints: tsharkHeader(mad.ClassSubnLID, mad.MethodGetResp, 0, 0, 0xd0+0x10, mad.AttrNodeDescription, 0),
		strs:  map[string]string{"infiniband.nodedescription.nodestring": "ibfab host h3 HCA-1"}})

	cases = append(cases, tsharkCase{name: "GetResp SwitchInfo",
		pkt: lidResp(mad.AttrSwitchInfo, 0, func(b []byte) {
			f := si
			f.PortStateChange, f.OutboundEnforcementCap, f.FilterRawOutboundCap = false, true, true
			f.InboundEnforcementCap, f.FilterRawInboundCap, f.EnhancedPort0 = false, false, false
			mad.SwitchInfo(b).Encode(&f)
		}),
		uints: tsharkMerge(tsharkHeader(mad.ClassSubnLID, mad.MethodGetResp, 0, 0, 0xd0+0x12, mad.AttrSwitchInfo, 0),
			map[string]uint64{
				"infiniband.switchinfo.lifetimevalue":          uint64(si.LifeTimeValue),
				"infiniband.switchinfo.portstatechange":        0,
				"infiniband.switchinfo.inboundenforcementcap":  0,
				"infiniband.switchinfo.outboundenforcementcap": 1,
				"infiniband.switchinfo.filterrawinboundcap":    0,
				"infiniband.switchinfo.filterrawoutboundcap":   1,
				"infiniband.switchinfo.enhancedportzero":       0,
			})})

	guids := [8]uint64{0x0002c90300000011, 0x0002c90300000012, 0, 0, 0x1111, 0x2222, 0x3333, 0xffffffffffffffff}
	cases = append(cases, tsharkCase{name: "GetResp GUIDInfo",
		pkt: lidResp(mad.AttrGUIDInfo, 0, func(b []byte) {
			mad.GUIDInfo(b).Encode(&mad.GUIDInfoFields{GUIDs: guids})
		}),
		uints: tsharkHeader(mad.ClassSubnLID, mad.MethodGetResp, 0, 0, 0xd0+0x14, mad.AttrGUIDInfo, 0),
		// tshark 4.0 files the GUIDInfo GUIDs under the SwitchInfo prefix.
		lists: map[string][]uint64{"infiniband.switchinfo.guid": guids[:]}})

	var pkeys mad.PKeyTableFields
	for i := range pkeys.PKeys {
		pkeys.PKeys[i] = mad.PKey(uint16(i)*0x0411 | uint16(i%2)<<15)
	}
	pkeys.PKeys[0] = mad.DefaultPKey
	var members, bases []uint64
	for _, k := range pkeys.PKeys {
		members = append(members, b2u(k.IsFull()))
		bases = append(bases, uint64(k.Base()))
	}
	cases = append(cases, tsharkCase{name: "GetResp P_KeyTable",
		pkt: lidResp(mad.AttrPKeyTable, mad.PKeyTableModifier(3, 1), func(b []byte) {
			mad.PKeyTable(b).Encode(&pkeys)
		}),
		uints: tsharkHeader(mad.ClassSubnLID, mad.MethodGetResp, 0, 0, 0xd0+0x16, mad.AttrPKeyTable, 0x00030001),
		lists: map[string][]uint64{
			"infiniband.p_keytable.membershiptype": members,
			"infiniband.p_keytable.p_keybase":      bases,
		}})

	sm := mad.SMInfoFields{GUID: 0x0002c90300000099, SMKey: 0x0123456789abcdef, ActCount: 0xdeadbeef, Priority: 13,
		SMState: mad.SMStateStandby}
	cases = append(cases, tsharkCase{name: "GetResp SMInfo",
		pkt: lidResp(mad.AttrSMInfo, 0, func(b []byte) { mad.SMInfo(b).Encode(&sm) }),
		uints: tsharkMerge(tsharkHeader(mad.ClassSubnLID, mad.MethodGetResp, 0, 0, 0xd0+0x20, mad.AttrSMInfo, 0),
			map[string]uint64{
				"infiniband.sminfo.guid":     sm.GUID,
				"infiniband.sminfo.sm_key":   sm.SMKey,
				"infiniband.sminfo.actcount": uint64(sm.ActCount),
				"infiniband.sminfo.priority": uint64(sm.Priority),
				"infiniband.sminfo.smstate":  uint64(sm.SMState),
			})})

	// Trap(128) from a switch's SMA to the SM, and the SM's TrapRepress.
	trap := mad.Trap128(0x0017)
	trap.IssuerLID = 0x0018 // differs from LIDADDR so a swap shows
	trap.NoticeToggle, trap.NoticeCount = true, 0x1234
	for _, m := range []mad.Method{mad.MethodTrap, mad.MethodTrapRepress} {
		f := mad.SMPFields{Method: m, TransactionID: 0xe1, AttrID: mad.AttrNotice, MKey: mkey}
		mad.Notice(f.Data[:]).Encode(&trap)
		cases = append(cases, tsharkCase{name: m.String() + " Notice 128", pkt: madQP0(mad.AppendSMP(nil, &f), 1, 0x17),
			uints: tsharkMerge(tsharkHeader(mad.ClassSubnLID, m, 0, 0, 0xe1, mad.AttrNotice, 0),
				map[string]uint64{
					"infiniband.smplid.mkey":                 mkey,
					"infiniband.notice.isgeneric":            1,
					"infiniband.notice.type":                 uint64(mad.NoticeUrgent),
					"infiniband.notice.producertypevendorid": uint64(mad.ProducerSwitch),
					"infiniband.notice.trapnumberdeviceid":   128,
					"infiniband.notice.issuerlid":            0x18,
					"infiniband.notice.noticetoggle":         1,
					"infiniband.notice.noticecount":          0x1234,
					"infiniband.trap.lidaddr":                0x17,
				})})
	}
	return cases
}

// TestTsharkCrossCheck writes every case to one ERF capture, has tshark
// dissect it, and wants every field tshark shows to hold what was set,
// with no malformed packet or expert error.
func TestTsharkCrossCheck(t *testing.T) {
	cases := tsharkCases(t)
	recs := make([]capture.Record, len(cases))
	for i, c := range cases {
		recs[i] = capture.Record{Type: capture.TypeInfiniBand, Data: c.pkt}
	}
	pkts := tsharktest.Decode(t, recs)
	require.Len(t, pkts, len(cases))
	for i, c := range cases {
		p := pkts[i]
		t.Run(c.name, func(t *testing.T) {
			assert.Empty(t, p.Problems(), "tshark problems")
			for name, want := range c.uints {
				if got := p.Uint(t, name); got != want {
					t.Errorf("tshark %s = %#x, want %#x", name, got, want)
				}
			}
			for name, want := range c.strs {
				got, ok := p.Get(name)
				require.True(t, ok, "tshark shows no %s", name)
				if strings.ReplaceAll(got, ":", "") != want {
					t.Errorf("tshark %s = %q, want %q", name, got, want)
				}
			}
			for name, want := range c.lists {
				got := p.All(name)
				require.Len(t, got, len(want), "tshark %s values", name)
				for j, s := range got {
					v, err := strconv.ParseUint(s, 0, 64)
					require.NoError(t, err)
					assert.Equal(t, want[j], v, fmt.Sprintf("tshark %s[%d]", name, j))
				}
			}
		})
	}
}

// TestWireLayerChain decodes the cross-check packets from the LRH with the
// wire layers, which hand QP0/QP1 payloads to this package's layers, and
// wants the MAD header tshark saw and the class layer.
func TestWireLayerChain(t *testing.T) {
	classLayer := map[uint64]gopacket.LayerType{
		uint64(mad.ClassSubnLID):      mad.LayerTypeSMP,
		uint64(mad.ClassSubnDirected): mad.LayerTypeDRSMP,
		uint64(mad.ClassPerfMgt):      mad.LayerTypePMA,
	}
	for _, c := range tsharkCases(t) {
		t.Run(c.name, func(t *testing.T) {
			p := gopacket.NewPacket(c.pkt, wire.LayerTypeLRH, gopacket.DecodeOptions{SkipDecodeRecovery: true})
			require.Nil(t, p.ErrorLayer(), "decode error")
			l, ok := p.Layer(mad.LayerTypeMAD).(*mad.MADLayer)
			require.True(t, ok, "no MAD layer in %v", layerTypes(p))
			assert.Equal(t, c.uints["infiniband.mad.mgmtclass"], uint64(l.MgmtClass))
			assert.Equal(t, c.uints["infiniband.mad.method"], uint64(l.Method))
			assert.Equal(t, c.uints["infiniband.mad.status"], uint64(l.Status))
			assert.Equal(t, c.uints["infiniband.mad.transactionid"], l.TransactionID)
			assert.Equal(t, c.uints["infiniband.mad.attributeid"], uint64(l.AttrID))
			assert.Equal(t, c.uints["infiniband.mad.attributemodifier"], uint64(l.AttrModifier))
			assert.NotNil(t, p.Layer(classLayer[uint64(l.MgmtClass)]), "class layer in %v", layerTypes(p))
		})
	}
}
