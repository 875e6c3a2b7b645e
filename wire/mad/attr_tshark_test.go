package mad_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/internal/testsupport/tsharktest"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// tsharkPortInfo sets every PortInfo field to a non-zero value, distinct
// from its neighbours where the field is wide enough.
func tsharkPortInfo() mad.PortInfoFields {
	return mad.PortInfoFields{
		MKey:                                0x0102030405060708,
		GIDPrefix:                           0xfe800000000000aa,
		LID:                                 0x0011,
		MasterSMLID:                         0x0022,
		CapabilityMask:                      mad.PortCapIsSM | mad.PortCapIsTrapSupported | mad.PortCapIsSLMappingSupported | mad.PortCapIsClientReregistrationSupported,
		DiagCode:                            0x0033,
		MKeyLeasePeriod:                     0x0044,
		LocalPortNum:                        5,
		LinkWidthEnabled:                    mad.LinkWidth1X | mad.LinkWidth4X | mad.LinkWidth12X,
		LinkWidthSupported:                  mad.LinkWidth1X | mad.LinkWidth4X,
		LinkWidthActive:                     mad.LinkWidth4X,
		LinkSpeedSupported:                  mad.LinkSpeedSDR | mad.LinkSpeedDDR | mad.LinkSpeedQDR,
		PortState:                           mad.PortStateActive,
		PortPhysicalState:                   mad.PhysStateLinkUp,
		LinkDownDefaultState:                mad.PhysStatePolling,
		MKeyProtectBits:                     3,
		LMC:                                 6,
		LinkSpeedActive:                     mad.LinkSpeedQDR,
		LinkSpeedEnabled:                    mad.LinkSpeedSDR | mad.LinkSpeedDDR,
		NeighborMTU:                         mad.MTU2048,
		MasterSMSL:                          9,
		VLCap:                               3,
		InitType:                            0x0a,
		VLHighLimit:                         0x77,
		VLArbitrationHighCap:                0x08,
		VLArbitrationLowCap:                 0x20,
		InitTypeReply:                       0x0c,
		MTUCap:                              mad.MTU4096,
		VLStallCount:                        7,
		HOQLife:                             0x13,
		OperationalVLs:                      0x0e,
		PartitionEnforcementInbound:         true,
		PartitionEnforcementOutbound:        true,
		FilterRawInbound:                    true,
		FilterRawOutbound:                   true,
		MKeyViolations:                      0x0101,
		PKeyViolations:                      0x0202,
		QKeyViolations:                      0x0303,
		GUIDCap:                             0x40,
		ClientReregister:                    true,
		MulticastPKeyTrapSuppressionEnabled: 2,
		SubnetTimeOut:                       0x12,
		RespTimeValue:                       0x11,
		LocalPhyErrors:                      0x0b,
		OverrunErrors:                       0x0d,
		MaxCreditHint:                       0x0555,
		LinkRoundTripLatency:                0x123456,
		CapabilityMask2:                     0x0066,
		LinkSpeedExtActive:                  1,
		LinkSpeedExtSupported:               3,
		LinkSpeedExtEnabled:                 0x1e,
	}
}

// tsharkPortCounters sets every PortCounters field to a distinct non-zero
// value.
func tsharkPortCounters() mad.PortCountersFields {
	return mad.PortCountersFields{
		PortSelect: 7, CounterSelect: 0xf00f,
		SymbolErrorCounter: 1001, LinkErrorRecoveryCounter: 12, LinkDownedCounter: 13,
		PortRcvErrors: 1004, PortRcvRemotePhysicalErrors: 1005, PortRcvSwitchRelayErrors: 1006,
		PortXmitDiscards: 1007, PortXmitConstraintErrors: 18, PortRcvConstraintErrors: 19,
		CounterSelect2: 1, LocalLinkIntegrityErrors: 10, ExcessiveBufferOverrunErrors: 11,
		VL15Dropped: 1012, PortXmitData: 100013, PortRcvData: 100014, PortXmitPkts: 100015,
		PortRcvPkts: 100016, PortXmitWait: 100017,
	}
}

// tsharkPortCountersExtended sets every PortCountersExtended field to a
// distinct non-zero value, most past 32 bits.
func tsharkPortCountersExtended() mad.PortCountersExtendedFields {
	return mad.PortCountersExtendedFields{
		PortSelect: 3, CounterSelect: 0x00ff,
		PortXmitData: 1 << 40, PortRcvData: 1<<40 + 1, PortXmitPkts: 1<<33 + 2, PortRcvPkts: 1<<33 + 3,
		PortUnicastXmitPkts: 0x0102030405060708, PortUnicastRcvPkts: 0x1112131415161718,
		PortMulticastXmitPkts: 77, PortMulticastRcvPkts: 0x7fffffffffffffff,
	}
}

// smpFrame wraps attribute data in a SubnGetResp(attr) SMP on QP0/VL15.
func smpFrame(attr mad.AttrID, mod uint32, data []byte) []byte {
	f := mad.SMPFields{Method: mad.MethodGetResp, TransactionID: 0x00000000cafe0001,
		AttrID: attr, AttrModifier: mod, MKey: 0x1122334455667788}
	copy(f.Data[:], data)
	return wire.AppendUD(nil, &wire.UDFields{VL: 15, DLID: 0x0001, SLID: 0x0011, PKey: 0xffff,
		DestQP: wire.QP0, PSN: 1, SrcQP: wire.QP0, Payload: mad.AppendSMP(nil, &f)})
}

// pmaFrame wraps attribute data in a PerfMgt GetResp(attr) on QP1.
func pmaFrame(attr mad.AttrID, data []byte) []byte {
	f := mad.PMAFields{Method: mad.MethodGetResp, TransactionID: 0x00000000cafe0002, AttrID: attr}
	copy(f.Data[:], data)
	return wire.AppendUD(nil, &wire.UDFields{VL: 0, SL: 1, DLID: 0x0001, SLID: 0x0011, PKey: 0xffff,
		DestQP: wire.QP1, PSN: 2, QKey: wire.QP1QKey, SrcQP: wire.QP1, Payload: mad.AppendPMA(nil, &f)})
}

// tsharkWant is a tshark field and the values it must show, in order.
type tsharkWant struct {
	field  string
	values []uint64
}

func one(field string, v uint64) tsharkWant { return tsharkWant{field, []uint64{v}} }

func flag(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func portInfoWants(f mad.PortInfoFields) []tsharkWant {
	const p = "infiniband.portinfo."
	return []tsharkWant{
		one(p+"m_key", f.MKey),
		one(p+"guid", f.GIDPrefix), // tshark's name for GIDPrefix
		one(p+"lid", uint64(f.LID)),
		one(p+"mastersmlid", uint64(f.MasterSMLID)),
		one(p+"capabilitymask", uint64(f.CapabilityMask)),
		one(p+"capabilitymask.issm", 1),
		one(p+"capabilitymask.trapsupported", 1),
		one(p+"capabilitymask.slmappingsupported", 1),
		one(p+"capabilitymask.clientregistrationsupported", 1),
		one(p+"capabilitymask.noticesupported", 0),
		one(p+"diagcode", uint64(f.DiagCode)),
		one(p+"m_keyleaseperiod", uint64(f.MKeyLeasePeriod)),
		one(p+"localportnum", uint64(f.LocalPortNum)),
		one(p+"linkwidthenabled", uint64(f.LinkWidthEnabled)),
		one(p+"linkwidthsupported", uint64(f.LinkWidthSupported)),
		one(p+"linkwidthactive", uint64(f.LinkWidthActive)),
		one(p+"linkspeedsupported", uint64(f.LinkSpeedSupported)),
		one(p+"portstate", uint64(f.PortState)),
		one(p+"portphysicalstate", uint64(f.PortPhysicalState)),
		one(p+"linkdowndefaultstate", uint64(f.LinkDownDefaultState)),
		one(p+"m_keyprotectbits", uint64(f.MKeyProtectBits)),
		one(p+"lmc", uint64(f.LMC)),
		one(p+"linkspeedactive", uint64(f.LinkSpeedActive)),
		one(p+"linkspeedenabled", uint64(f.LinkSpeedEnabled)),
		one(p+"neighbormtu", uint64(f.NeighborMTU)),
		one(p+"mastersmsl", uint64(f.MasterSMSL)),
		one(p+"vlcap", uint64(f.VLCap)),
		one(p+"inittype", uint64(f.InitType)),
		one(p+"vlhighlimit", uint64(f.VLHighLimit)),
		one(p+"vlarbitrationhighcap", uint64(f.VLArbitrationHighCap)),
		one(p+"vlarbitrationlowcap", uint64(f.VLArbitrationLowCap)),
		one(p+"inittypereply", uint64(f.InitTypeReply)),
		one(p+"mtucap", uint64(f.MTUCap)),
		one(p+"vlstallcount", uint64(f.VLStallCount)),
		one(p+"hoqlife", uint64(f.HOQLife)),
		one(p+"operationalvls", uint64(f.OperationalVLs)),
		one(p+"partitionenforcementinbound", flag(f.PartitionEnforcementInbound)),
		one(p+"partitionenforcementoutbound", flag(f.PartitionEnforcementOutbound)),
		one(p+"filterrawinbound", flag(f.FilterRawInbound)),
		one(p+"filterrawoutbound", flag(f.FilterRawOutbound)),
		one(p+"m_keyviolations", uint64(f.MKeyViolations)),
		one(p+"p_keyviolations", uint64(f.PKeyViolations)),
		one(p+"q_keyviolations", uint64(f.QKeyViolations)),
		one(p+"guidcap", uint64(f.GUIDCap)),
		one(p+"clientreregister", flag(f.ClientReregister)),
		one(p+"subnettimeout", uint64(f.SubnetTimeOut)),
		one(p+"resptimevalue", uint64(f.RespTimeValue)),
		one(p+"localphyerrors", uint64(f.LocalPhyErrors)),
		one(p+"overrunerrors", uint64(f.OverrunErrors)),
		one(p+"maxcredithint", uint64(f.MaxCreditHint)),
		one(p+"linkroundtriplatency", uint64(f.LinkRoundTripLatency)),
	}
}

func portCountersWants(f mad.PortCountersFields) []tsharkWant {
	const p = "infiniband.portcounters."
	return []tsharkWant{
		one(p+"portselect", uint64(f.PortSelect)),
		one(p+"counterselect", uint64(f.CounterSelect)),
		one(p+"symbolerrorcounter", uint64(f.SymbolErrorCounter)),
		one(p+"linkerrorrecoverycounter", uint64(f.LinkErrorRecoveryCounter)),
		one(p+"linkdownedcounter", uint64(f.LinkDownedCounter)),
		one(p+"portrcverrors", uint64(f.PortRcvErrors)),
		one(p+"portrcvremotephysicalerrors", uint64(f.PortRcvRemotePhysicalErrors)),
		one(p+"portrcvswitchrelayerrors", uint64(f.PortRcvSwitchRelayErrors)),
		one(p+"portxmitdiscards", uint64(f.PortXmitDiscards)),
		one(p+"portxmitconstrainterrors", uint64(f.PortXmitConstraintErrors)),
		one(p+"portrcvconstrainterrors", uint64(f.PortRcvConstraintErrors)),
		one(p+"locallinkintegrityerrors", uint64(f.LocalLinkIntegrityErrors)),
		one(p+"excessivebufferoverrunerrors", uint64(f.ExcessiveBufferOverrunErrors)),
		one(p+"vl15dropped", uint64(f.VL15Dropped)),
		one(p+"portxmitdata", uint64(f.PortXmitData)),
		one(p+"portrcvdata", uint64(f.PortRcvData)),
		one(p+"portxmitpkts", uint64(f.PortXmitPkts)),
		one(p+"portrcvpkts", uint64(f.PortRcvPkts)),
	}
}

func portCountersExtWants(f mad.PortCountersExtendedFields) []tsharkWant {
	const p = "infiniband.portcounters_ext."
	return []tsharkWant{
		one(p+"portselect", uint64(f.PortSelect)),
		one(p+"counterselect", uint64(f.CounterSelect)),
		one(p+"portxmitdata", f.PortXmitData),
		one(p+"portrcvdata", f.PortRcvData),
		one(p+"portxmitpkts", f.PortXmitPkts),
		one(p+"portrcvpkts", f.PortRcvPkts),
		one(p+"portunicastxmitpkts", f.PortUnicastXmitPkts),
		one(p+"portunicastrcvpkts", f.PortUnicastRcvPkts),
		one(p+"portmulticastxmitpkts", f.PortMulticastXmitPkts),
		one(p+"portmulticastrcvpkts", f.PortMulticastRcvPkts),
	}
}

// TestTsharkAttributes has Wireshark's InfiniBand dissector, an independent
// implementation, decode each attribute inside a sealed UD frame and checks
// every field it shows against what was encoded. tshark 4.0 does not show
// PortInfo's MulticastPKeyTrapSuppressionEnabled, CapabilityMask2 and
// extended speeds, PortCounters' CounterSelect2 and PortXmitWait, nor the
// second half of an MFT block; the layout tests pin those to libibmad's
// offsets.
func TestTsharkAttributes(t *testing.T) {
	pi := tsharkPortInfo()

	var sl mad.SLtoVLMappingTableFields
	var slHigh, slLow []uint64
	for i := range sl.VL {
		sl.VL[i] = uint8((i*7 + 3) % 16)
		if i%2 == 0 {
			slHigh = append(slHigh, uint64(sl.VL[i]))
		} else {
			slLow = append(slLow, uint64(sl.VL[i]))
		}
	}

	var va mad.VLArbitrationTableFields
	var vaVL, vaWeight []uint64
	for i := range va.Entries {
		va.Entries[i] = mad.VLArbEntry{VL: uint8(i % 15), Weight: uint8(255 - i*3)}
		vaVL = append(vaVL, uint64(va.Entries[i].VL))
		vaWeight = append(vaWeight, uint64(va.Entries[i].Weight))
	}

	var lft mad.LinearForwardingTableFields
	var lftPorts []uint64
	for i := range lft.Ports {
		lft.Ports[i] = uint8((i*5)%37 + 1)
		if i == 0 {
			lft.Ports[i] = mad.LFTNoPort
		}
		lftPorts = append(lftPorts, uint64(lft.Ports[i]))
	}

	var mft mad.MulticastForwardingTableFields
	var mftMasks []uint64
	for i := range mft.PortMasks {
		mft.PortMasks[i] = uint16(0x8001 ^ (i * 0x0421))
		mftMasks = append(mftMasks, uint64(mft.PortMasks[i]))
	}

	pc := tsharkPortCounters()
	pce := tsharkPortCountersExtended()

	tests := []struct {
		name  string
		frame []byte
		mad   []tsharkWant
		wants []tsharkWant
	}{
		{
			name:  "PortInfo",
			frame: smpFrame(mad.AttrPortInfo, 5, mad.AppendPortInfo(nil, &pi)),
			mad:   []tsharkWant{one("infiniband.mad.attributeid", 0x15), one("infiniband.mad.attributemodifier", 5)},
			wants: portInfoWants(pi),
		},
		{
			name:  "SLtoVLMappingTable",
			frame: smpFrame(mad.AttrSLtoVLMapping, mad.SLtoVLModifier{InPort: 2, OutPort: 3}.Modifier(), mad.AppendSLtoVLMappingTable(nil, &sl)),
			mad:   []tsharkWant{one("infiniband.mad.attributeid", 0x17), one("infiniband.mad.attributemodifier", 0x0203)},
			wants: []tsharkWant{
				{"infiniband.sltovlmappingtable.sltovlhighbits", slHigh},
				{"infiniband.sltovlmappingtable.sltovllowbits", slLow},
			},
		},
		{
			name:  "VLArbitrationTable",
			frame: smpFrame(mad.AttrVLArbitration, mad.VLArbModifier(mad.VLArbHigh0, 4), mad.AppendVLArbitrationTable(nil, &va)),
			mad:   []tsharkWant{one("infiniband.mad.attributeid", 0x18), one("infiniband.mad.attributemodifier", 0x00030004)},
			wants: []tsharkWant{
				{"infiniband.vlarbitrationtable.vl", vaVL},
				{"infiniband.vlarbitrationtable.weight", vaWeight},
			},
		},
		{
			name:  "LinearForwardingTable",
			frame: smpFrame(mad.AttrLinearFwdTbl, 3, mad.AppendLinearForwardingTable(nil, &lft)),
			mad:   []tsharkWant{one("infiniband.mad.attributeid", 0x19), one("infiniband.mad.attributemodifier", 3)},
			wants: []tsharkWant{{"infiniband.linearforwardingtable.port", lftPorts}},
		},
		{
			name:  "MulticastForwardingTable",
			frame: smpFrame(mad.AttrMulticastFwdTbl, mad.MFTModifier(2, 1), mad.AppendMulticastForwardingTable(nil, &mft)),
			mad:   []tsharkWant{one("infiniband.mad.attributeid", 0x1b), one("infiniband.mad.attributemodifier", 0x10000002)},
			// tshark 4.0 dissects only the first 16 of the block's 32
			// masks (IBA 14.2.5.12, libibmad and OpenSM all have 32).
			wants: []tsharkWant{{"infiniband.multicastforwardingtable.portmask", mftMasks[:16]}},
		},
		{
			name:  "PortCounters",
			frame: pmaFrame(mad.AttrPortCounters, mad.AppendPortCounters(nil, &pc)),
			mad:   []tsharkWant{one("infiniband.mad.mgmtclass", 0x04), one("infiniband.mad.attributeid", 0x12)},
			wants: portCountersWants(pc),
		},
		{
			name:  "PortCountersExtended",
			frame: pmaFrame(mad.AttrPortCountersExtended, mad.AppendPortCountersExtended(nil, &pce)),
			mad:   []tsharkWant{one("infiniband.mad.mgmtclass", 0x04), one("infiniband.mad.attributeid", 0x1d)},
			wants: portCountersExtWants(pce),
		},
	}

	recs := make([]capture.Record, len(tests))
	for i, tt := range tests {
		recs[i] = capture.Record{Type: capture.TypeInfiniBand, Data: tt.frame}
	}
	pkts := tsharktest.Decode(t, recs)
	require.Len(t, pkts, len(tests))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pkts[i]
			assert.Empty(t, p.Problems(), "tshark problems")
			assert.Equal(t, uint64(mad.MethodGetResp), p.Uint(t, "infiniband.mad.method"))
			for _, w := range append(tt.mad, tt.wants...) {
				got := p.All(w.field)
				if len(got) != len(w.values) {
					t.Errorf("tshark shows %d values of %s, want %d: %v", len(got), w.field, len(w.values), got)
					continue
				}
				for j, s := range got {
					v, err := strconv.ParseUint(s, 0, 64)
					if err != nil || v != w.values[j] {
						t.Errorf("tshark %s[%d] = %q, want %#x", w.field, j, s, w.values[j])
					}
				}
			}
		})
	}
}
