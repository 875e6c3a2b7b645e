package agent_test

import (
	"testing"

	"ibfab/agent"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// TestStatus walks every error status the agent answers with.
func TestStatus(t *testing.T) {
	badBase := func(b []byte) []byte { mad.MAD(b).SetBaseVersion(2); return b }
	badClass := func(b []byte) []byte { mad.MAD(b).SetClassVersion(2); return b }
	pi := func(mut func(*mad.PortInfoFields)) []byte {
		f := mad.PortInfoFields{NeighborMTU: mad.MTU2048, LinkDownDefaultState: mad.PhysStatePolling}
		mut(&f)
		return smp(mad.MethodSet, mad.AttrPortInfo, 1, mad.AppendPortInfo(nil, &f))
	}
	pcSel := func(sel uint8) []byte {
		return pma(mad.MethodGet, mad.AttrPortCounters, mad.AppendPortCounters(nil, &mad.PortCountersFields{PortSelect: sel}))
	}
	tests := []struct {
		name  string
		ca    bool
		in    agent.Inbound
		want  mad.Status
		count func(agent.Stats) uint64
	}{
		{"bad base version", false, lidSMP(badBase(smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil))), mad.StatusBadVersion, badVer},
		{"bad class version", false, lidSMP(badClass(smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil))), mad.StatusBadVersion, badVer},
		{"unknown method", false, lidSMP(smp(0x04, mad.AttrNodeInfo, 0, nil)), mad.StatusMethodUnsupported, badMeth},
		{"Send method", true, lidSMP(smp(mad.MethodSend, mad.AttrNodeInfo, 0, nil)), mad.StatusMethodUnsupported, badMeth},
		{"unknown attribute", false, lidSMP(smp(mad.MethodGet, 0x00ff, 0, nil)), mad.StatusMethodAttrUnsupported, badAttr},
		{"RandomFwdTbl", false, lidSMP(smp(mad.MethodGet, mad.AttrRandomFwdTbl, 0, nil)), mad.StatusMethodAttrUnsupported, badAttr},
		{"Set NodeInfo", false, lidSMP(smp(mad.MethodSet, mad.AttrNodeInfo, 0, nil)), mad.StatusMethodAttrUnsupported, badAttr},
		{"Set NodeDescription", true, lidSMP(smp(mad.MethodSet, mad.AttrNodeDescription, 0, nil)), mad.StatusMethodAttrUnsupported, badAttr},
		{"SwitchInfo on a CA", true, lidSMP(smp(mad.MethodGet, mad.AttrSwitchInfo, 0, nil)), mad.StatusMethodAttrUnsupported, badAttr},
		{"LFT on a CA", true, lidSMP(smp(mad.MethodGet, mad.AttrLinearFwdTbl, 0, nil)), mad.StatusMethodAttrUnsupported, badAttr},
		{"MFT on a CA", true, lidSMP(smp(mad.MethodGet, mad.AttrMulticastFwdTbl, 0, nil)), mad.StatusMethodAttrUnsupported, badAttr},
		{"SMInfo without an SM", false, lidSMP(smp(mad.MethodGet, mad.AttrSMInfo, 0, nil)), mad.StatusMethodAttrUnsupported, badAttr},
		{"PortInfo port beyond NumPorts", false, lidSMP(smp(mad.MethodGet, mad.AttrPortInfo, 5, nil)), mad.StatusInvalidField, badField},
		{"PortInfo reserved modifier bits", false, lidSMP(smp(mad.MethodGet, mad.AttrPortInfo, 0x100, nil)), mad.StatusInvalidField, badField},
		{"CA Set PortInfo of another port", true, lidSMP(smp(mad.MethodSet, mad.AttrPortInfo, 2, nil)), mad.StatusInvalidField, badField},
		{"PortInfo Set PortState Init", false, lidSMP(pi(func(f *mad.PortInfoFields) { f.PortState = mad.PortStateInit })), mad.StatusInvalidField, badField},
		{"PortInfo Set PortState 5", false, lidSMP(pi(func(f *mad.PortInfoFields) { f.PortState = 5 })), mad.StatusInvalidField, badField},
		{"PortInfo Set PhysState LinkUp", false, lidSMP(pi(func(f *mad.PortInfoFields) { f.PortPhysicalState = mad.PhysStateLinkUp })), mad.StatusInvalidField, badField},
		{"PortInfo Set NeighborMTU 0", false, lidSMP(pi(func(f *mad.PortInfoFields) { f.NeighborMTU = 0 })), mad.StatusInvalidField, badField},
		{"PortInfo Set NeighborMTU over cap", false, lidSMP(pi(func(f *mad.PortInfoFields) { f.NeighborMTU = 6 })), mad.StatusInvalidField, badField},
		{"PortInfo Set OperationalVLs over cap", false, lidSMP(pi(func(f *mad.PortInfoFields) { f.OperationalVLs = 5 })), mad.StatusInvalidField, badField},
		{"PortInfo Set width not supported", false, lidSMP(pi(func(f *mad.PortInfoFields) { f.LinkWidthEnabled = 0x10 })), mad.StatusInvalidField, badField},
		{"PortInfo Set LinkDownDefaultState 3", false, lidSMP(pi(func(f *mad.PortInfoFields) { f.LinkDownDefaultState = 3 })), mad.StatusInvalidField, badField},
		{"CA PortInfo Set multicast LID", true, lidSMP(pi(func(f *mad.PortInfoFields) { f.LID = 0xc001 })), mad.StatusInvalidField, badField},
		{"LFT block beyond cap", false, lidSMP(smp(mad.MethodGet, mad.AttrLinearFwdTbl, 1, nil)), mad.StatusInvalidField, badField},
		{"LFT block beyond unicast", false, lidSMP(smp(mad.MethodGet, mad.AttrLinearFwdTbl, 768, nil)), mad.StatusInvalidField, badField},
		{"MFT position beyond ports", false, lidSMP(smp(mad.MethodGet, mad.AttrMulticastFwdTbl, mad.MFTModifier(0, 1), nil)), mad.StatusInvalidField, badField},
		{"MFT block beyond cap", false, lidSMP(smp(mad.MethodGet, mad.AttrMulticastFwdTbl, mad.MFTModifier(1, 0), nil)), mad.StatusInvalidField, badField},
		{"SwitchInfo Set top beyond cap", false, lidSMP(smp(mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{LinearFDBTop: 64}))), mad.StatusInvalidField, badField},
		{"SwitchInfo modifier", false, lidSMP(smp(mad.MethodGet, mad.AttrSwitchInfo, 1, nil)), mad.StatusInvalidField, badField},
		{"PKeyTable block beyond cap", true, lidSMP(smp(mad.MethodGet, mad.AttrPKeyTable, 2, nil)), mad.StatusInvalidField, badField},
		{"PKeyTable port beyond NumPorts", false, lidSMP(smp(mad.MethodGet, mad.AttrPKeyTable, 9<<16, nil)), mad.StatusInvalidField, badField},
		{"PKeyTable external port without enforcement", false, lidSMP(smp(mad.MethodGet, mad.AttrPKeyTable, 1<<16, nil)), mad.StatusInvalidField, badField},
		{"SLtoVL port beyond NumPorts", false, lidSMP(smp(mad.MethodGet, mad.AttrSLtoVLMapping, 9, nil)), mad.StatusInvalidField, badField},
		{"SLtoVL Get with all-ports bit", false, lidSMP(smp(mad.MethodGet, mad.AttrSLtoVLMapping, 1<<16, nil)), mad.StatusInvalidField, badField},
		{"SLtoVL reserved bits", false, lidSMP(smp(mad.MethodGet, mad.AttrSLtoVLMapping, 1<<20, nil)), mad.StatusInvalidField, badField},
		{"VLArb block 0", false, lidSMP(smp(mad.MethodGet, mad.AttrVLArbitration, 1, nil)), mad.StatusInvalidField, badField},
		{"VLArb base port 0", false, lidSMP(smp(mad.MethodGet, mad.AttrVLArbitration, uint32(mad.VLArbModifier(mad.VLArbHigh0, 0)), nil)), mad.StatusInvalidField, badField},
		{"VLArb block beyond cap", true, lidSMP(smp(mad.MethodGet, mad.AttrVLArbitration, uint32(mad.VLArbModifier(mad.VLArbLow32, 0)), nil)), mad.StatusInvalidField, badField},
		{"GUIDInfo block beyond cap", true, lidSMP(smp(mad.MethodGet, mad.AttrGUIDInfo, 1, nil)), mad.StatusInvalidField, badField},
		{"PMA bad class version", true, gmp(badClass(pma(mad.MethodGet, mad.AttrPortCounters, nil))), mad.StatusBadVersion, badVer},
		{"PMA unknown method", true, gmp(pma(mad.MethodSend, mad.AttrPortCounters, nil)), mad.StatusMethodUnsupported, badMeth},
		{"PMA PortSamplesControl", true, gmp(pma(mad.MethodGet, mad.AttrPortSamplesControl, nil)), mad.StatusMethodAttrUnsupported, badAttr},
		{"PMA Set ClassPortInfo", false, gmp(pma(mad.MethodSet, mad.AttrClassPortInfo, nil)), mad.StatusMethodAttrUnsupported, badAttr},
		{"PMA PortSelect beyond NumPorts", false, gmp(pcSel(9)), mad.StatusInvalidField, badField},
		{"PMA PortSelect 0 on a CA", true, gmp(pcSel(0)), mad.StatusInvalidField, badField},
		{"GMP class without an agent", false, gmp(mad.AppendMAD(nil, &mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassCM, ClassVersion: 2, Method: mad.MethodGet}, nil)), mad.StatusBadVersion, badVer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := newNode(t, mad.NodeTypeSwitch, 4, func(c *agent.Config) { c.LinearFDBCap = 64; c.MulticastFDBCap = 32 })
			if tt.ca {
				nd = newNode(t, mad.NodeTypeCA, 2, func(c *agent.Config) { c.VLArbLowCap = 32 })
			}
			before := tt.count(nd.a.Stats())
			o := one(t, nd.a.HandleMAD(tt.in))
			h := mad.MAD(o.MAD)
			if got := h.Status(); got != tt.want {
				t.Errorf("status = %v, want %v", got, tt.want)
			}
			if h.Method() != mad.MethodGetResp || h.TransactionID() != mad.MAD(tt.in.MAD).TransactionID() {
				t.Errorf("response method %v TID %#x, want GetResp with the request's TID", h.Method(), h.TransactionID())
			}
			if o.DLID != tt.in.SLID || o.Port != tt.in.Port || o.DestQP != tt.in.SrcQP {
				t.Errorf("response to DLID %d port %d QP %d, want %d, %d, %d", o.DLID, o.Port, o.DestQP, tt.in.SLID, tt.in.Port, tt.in.SrcQP)
			}
			if got := tt.count(nd.a.Stats()); got != before+1 {
				t.Errorf("status counter %d, want %d", got, before+1)
			}
		})
	}
}

func badVer(s agent.Stats) uint64   { return s.BadVersion }
func badMeth(s agent.Stats) uint64  { return s.MethodUnsupported }
func badAttr(s agent.Stats) uint64  { return s.MethodAttrUnsupport }
func badField(s agent.Stats) uint64 { return s.InvalidField }

// TestDrops covers the MADs the agent drops without answering, each
// counted once.
func TestDrops(t *testing.T) {
	short := lidSMP(smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil))
	short.MAD = short.MAD[:100]
	port0 := lidSMP(smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil))
	port0.Port = 0
	port9 := lidSMP(smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil))
	port9.Port = 9
	smpOnQP1 := lidSMP(smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil))
	smpOnQP1.DstQP = wire.QP1
	pmaOnQP0 := gmp(pma(mad.MethodGet, mad.AttrClassPortInfo, nil))
	pmaOnQP0.DstQP = wire.QP0
	misaddressed := lidSMP(smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil))
	misaddressed.DLID = 7
	pmaMisaddressed := gmp(pma(mad.MethodGet, mad.AttrClassPortInfo, nil))
	pmaMisaddressed.DLID = 7
	drDir, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1}})
	mad.DRSMP(drDir).SetDirection(true)
	drHops, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1}})
	mad.DRSMP(drHops).SetHopCount(64)
	repress := lidSMP(smp(mad.MethodTrapRepress, mad.AttrPortInfo, 0, nil))
	pmaResp := gmp(pma(mad.MethodGetResp, mad.AttrPortCounters, nil))
	tests := []struct {
		name  string
		in    agent.Inbound
		count func(agent.Stats) uint64
	}{
		{"short MAD", short, func(s agent.Stats) uint64 { return s.Malformed }},
		{"arrival port 0", port0, func(s agent.Stats) uint64 { return s.Malformed }},
		{"arrival port beyond NumPorts", port9, func(s agent.Stats) uint64 { return s.Malformed }},
		{"SMP on QP1", smpOnQP1, func(s agent.Stats) uint64 { return s.Malformed }},
		{"PMA on QP0", pmaOnQP0, func(s agent.Stats) uint64 { return s.Malformed }},
		{"LID-routed SMP for another LID", misaddressed, func(s agent.Stats) uint64 { return s.Misaddressed }},
		{"GMP for another LID", pmaMisaddressed, func(s agent.Stats) uint64 { return s.Misaddressed }},
		{"DR request with the D bit", lidDR(drDir), func(s agent.Stats) uint64 { return s.DRDropped }},
		{"DR hop count 64", lidDR(drHops), func(s agent.Stats) uint64 { return s.DRDropped }},
		{"TrapRepress of PortInfo", repress, func(s agent.Stats) uint64 { return s.Unexpected }},
		{"PMA response without an SM", pmaResp, func(s agent.Stats) uint64 { return s.Local }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := newNode(t, mad.NodeTypeSwitch, 4)
			before := nd.a.Stats()
			outs := nd.a.HandleMAD(tt.in)
			if tt.name == "PMA response without an SM" {
				// Responses go to the local SM, whoever the caller finds there.
				if o := one(t, outs); !o.Local {
					t.Errorf("PMA response not handed to the SM: %+v", o)
				}
			} else if len(outs) != 0 {
				t.Fatalf("HandleMAD = %+v, want nothing", outs)
			}
			after := nd.a.Stats()
			if got, want := tt.count(after), tt.count(before)+1; got != want {
				t.Errorf("counter %d, want %d (stats %+v)", got, want, after)
			}
			if after.Responses != before.Responses {
				t.Errorf("responses went from %d to %d", before.Responses, after.Responses)
			}
		})
	}
}

// lidDR is the Inbound of a directed-route SMP arriving on port 1.
func lidDR(b []byte) agent.Inbound {
	return agent.Inbound{Port: 1, SLID: mad.PermissiveLID, DLID: mad.PermissiveLID, DstQP: wire.QP0, MAD: b}
}
