package interop_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// The capability audit: every capability a soft switch or HCA reports in
// NodeInfo, PortInfo, SwitchInfo, the PMA's and the CC agent's
// ClassPortInfo and CongestionInfo is listed in capAudit with the value
// the agents report and the test that proves the behaviour behind it.
// TestCapabilityAudit reads them from a real fabric: a value that changes,
// a capability bit nobody audited, or a proof that names no test fails it.
// A port advertises what it does and does not advertise what it does not.

// capReading is what the agents of a switch and an HCA of a running fabric
// report, read by directed route and LID-routed GMPs from an HCA.
type capReading struct {
	swNode, caNode             mad.NodeInfoFields
	swPort0, swLinked, swFree  mad.PortInfoFields // port 0, a cabled port, an uncabled port
	caPort                     mad.PortInfoFields
	sw                         mad.SwitchInfoFields
	swPMA, caPMA, swCCA, caCCA mad.ClassPortInfoFields
	swCC, caCC                 mad.CongestionInfoFields
}

// capRow is one audited field, or one bit of a capability mask (bit set).
type capRow struct {
	field string
	get   func(r *capReading) uint64
	bit   uint64
	want  uint64
	proof string // "DIR.TestName", DIR relative to the repository root: the test that shows the behaviour
}

// capBit audits one set bit of a capability mask.
func capBit(field string, bit uint64, proof string) capRow {
	return capRow{field: field, get: capMasks[field], bit: bit, want: bit, proof: proof}
}

// capValue audits a capability field's value.
func capValue(field string, get func(r *capReading) uint64, want uint64, proof string) capRow {
	return capRow{field: field, get: get, want: want, proof: proof}
}

// capMasks are the capability masks the agents report: every bit set in
// one must be audited by a capBit row.
var capMasks = map[string]func(r *capReading) uint64{
	"CA PortInfo.CapabilityMask":              func(r *capReading) uint64 { return uint64(r.caPort.CapabilityMask) },
	"switch port 0 PortInfo.CapabilityMask":   func(r *capReading) uint64 { return uint64(r.swPort0.CapabilityMask) },
	"switch port PortInfo.CapabilityMask":     func(r *capReading) uint64 { return uint64(r.swLinked.CapabilityMask) },
	"CA PortInfo.CapabilityMask2":             func(r *capReading) uint64 { return uint64(r.caPort.CapabilityMask2) },
	"switch port 0 PortInfo.CapabilityMask2":  func(r *capReading) uint64 { return uint64(r.swPort0.CapabilityMask2) },
	"switch port PortInfo.CapabilityMask2":    func(r *capReading) uint64 { return uint64(r.swLinked.CapabilityMask2) },
	"switch PMA ClassPortInfo.CapabilityMask": func(r *capReading) uint64 { return uint64(r.swPMA.CapabilityMask) },
	"CA PMA ClassPortInfo.CapabilityMask":     func(r *capReading) uint64 { return uint64(r.caPMA.CapabilityMask) },
	"switch CC ClassPortInfo.CapabilityMask":  func(r *capReading) uint64 { return uint64(r.swCCA.CapabilityMask) },
	"CA CC ClassPortInfo.CapabilityMask":      func(r *capReading) uint64 { return uint64(r.caCCA.CapabilityMask) },
	"switch CongestionInfo.CongestionInfo":    func(r *capReading) uint64 { return uint64(r.swCC.CongestionInfo) },
	"CA CongestionInfo.CongestionInfo":        func(r *capReading) uint64 { return uint64(r.caCC.CongestionInfo) },
}

func capBool(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// capAudit lists every capability the agents report, each with the test
// that shows the behaviour behind it.
var capAudit = []capRow{
	// NodeInfo.
	capValue("switch NodeInfo.PartitionCap", func(r *capReading) uint64 { return uint64(r.swNode.PartitionCap) }, 64, "agent.TestPKeyTable"),
	capValue("CA NodeInfo.PartitionCap", func(r *capReading) uint64 { return uint64(r.caNode.PartitionCap) }, 64, "agent.TestPKeyTable"),

	// PortInfo.CapabilityMask.
	capBit("CA PortInfo.CapabilityMask", uint64(mad.PortCapIsTrapSupported), "harness/interop.TestMKeyTrap"),
	capBit("CA PortInfo.CapabilityMask", uint64(mad.PortCapIsSLMappingSupported), "harness/interop.TestQoSOneSweep"),
	capBit("CA PortInfo.CapabilityMask", uint64(mad.PortCapIsSystemImageGUIDSupported), "agent.TestSystemImageGUID"),
	capBit("switch port 0 PortInfo.CapabilityMask", uint64(mad.PortCapIsTrapSupported), "agent.TestTrap128"),
	capBit("switch port 0 PortInfo.CapabilityMask", uint64(mad.PortCapIsNoticeSupported), "agent.TestTrapWaitsForSM"),
	capBit("switch port 0 PortInfo.CapabilityMask", uint64(mad.PortCapIsSLMappingSupported), "agent.TestSLtoVL"),
	capBit("switch port 0 PortInfo.CapabilityMask", uint64(mad.PortCapIsSystemImageGUIDSupported), "agent.TestSystemImageGUID"),
	// The audit fabric runs at 4X NDR: the rate bits of NDR silicon, on a
	// CA's port and a switch's port 0 (where OpenSM reads a switch's).
	capBit("CA PortInfo.CapabilityMask", uint64(mad.PortCapIsExtendedSpeedsSupported), "harness/interop.TestExtendedSpeeds"),
	capBit("CA PortInfo.CapabilityMask", uint64(mad.PortCapIsCapabilityMask2Supported), "agent.TestExtendedSpeedFields"),
	capBit("switch port 0 PortInfo.CapabilityMask", uint64(mad.PortCapIsExtendedSpeedsSupported), "harness/interop.TestExtendedSpeeds"),
	capBit("switch port 0 PortInfo.CapabilityMask", uint64(mad.PortCapIsCapabilityMask2Supported), "agent.TestSwitchPort0RateCaps"),
	capBit("CA PortInfo.CapabilityMask2", uint64(mad.PortCap2IsLinkWidth2xSupported), "port.TestLinkNegotiation"),
	capBit("CA PortInfo.CapabilityMask2", uint64(mad.PortCap2IsLinkSpeedHDRSupported), "harness/interop.TestExtendedSpeeds"),
	capBit("CA PortInfo.CapabilityMask2", uint64(mad.PortCap2IsLinkSpeedNDRSupported), "harness/interop.TestExtendedSpeeds"),
	capBit("switch port 0 PortInfo.CapabilityMask2", uint64(mad.PortCap2IsLinkWidth2xSupported), "port.TestLinkNegotiation"),
	capBit("switch port 0 PortInfo.CapabilityMask2", uint64(mad.PortCap2IsLinkSpeedHDRSupported), "harness/interop.TestExtendedSpeeds"),
	capBit("switch port 0 PortInfo.CapabilityMask2", uint64(mad.PortCap2IsLinkSpeedNDRSupported), "harness/interop.TestExtendedSpeeds"),

	// PortInfo capabilities of every port kind.
	capValue("PortInfo.VLCap (VL0-7)", func(r *capReading) uint64 {
		return capSame(r, func(p *mad.PortInfoFields) uint64 { return uint64(p.VLCap) })
	}, 4, "harness/interop.TestQoSOneSweep"),
	capValue("PortInfo.MTUCap (4096)", func(r *capReading) uint64 {
		return capSame(r, func(p *mad.PortInfoFields) uint64 { return uint64(p.MTUCap) })
	}, uint64(mad.MTU4096), "port.TestPacing"),
	capValue("PortInfo.LinkWidthSupported (1X, 2X, 4X)", func(r *capReading) uint64 {
		return capSame(r, func(p *mad.PortInfoFields) uint64 { return uint64(p.LinkWidthSupported) })
	}, uint64(mad.LinkWidth1X|mad.LinkWidth2X|mad.LinkWidth4X), "harness/interop.TestLinkWidthRetrain"),
	capValue("PortInfo.LinkSpeedSupported (SDR, DDR, QDR)", func(r *capReading) uint64 {
		return capSame(r, func(p *mad.PortInfoFields) uint64 { return uint64(p.LinkSpeedSupported) })
	}, uint64(mad.LinkSpeedSDR|mad.LinkSpeedDDR|mad.LinkSpeedQDR), "port.TestLinkNegotiation"),
	capValue("PortInfo.LinkSpeedExtSupported (FDR, EDR, HDR, NDR)", func(r *capReading) uint64 {
		return capSame(r, func(p *mad.PortInfoFields) uint64 { return uint64(p.LinkSpeedExtSupported) })
	}, 15, "harness/interop.TestExtendedSpeeds"),
	capValue("PortInfo.LinkSpeedExtSupported2 (no XDR)", func(r *capReading) uint64 {
		return capSame(r, func(p *mad.PortInfoFields) uint64 { return uint64(p.LinkSpeedExtSupported2) })
	}, 0, "agent.TestSetExtendedSpeedXDR"),
	capValue("CA and switch external PortInfo.VLArbitrationHighCap", func(r *capReading) uint64 {
		return capSame2(uint64(r.caPort.VLArbitrationHighCap), uint64(r.swLinked.VLArbitrationHighCap))
	}, 64, "portagent.TestVLArbitrationSetRuns"),
	capValue("CA and switch external PortInfo.VLArbitrationLowCap", func(r *capReading) uint64 {
		return capSame2(uint64(r.caPort.VLArbitrationLowCap), uint64(r.swLinked.VLArbitrationLowCap))
	}, 64, "harness/interop.TestQoSOneSweep"),
	capValue("switch port 0 PortInfo.VLArbitration caps (no enhanced port 0)", func(r *capReading) uint64 {
		return uint64(r.swPort0.VLArbitrationHighCap) + uint64(r.swPort0.VLArbitrationLowCap)
	}, 0, "agent.TestSwitchPort0"),
	capValue("CA and switch port 0 PortInfo.GUIDCap", func(r *capReading) uint64 {
		return capSame2(uint64(r.caPort.GUIDCap), uint64(r.swPort0.GUIDCap))
	}, 8, "agent.TestGUIDInfo"),

	// SwitchInfo.
	capValue("SwitchInfo.LinearFDBCap", func(r *capReading) uint64 { return uint64(r.sw.LinearFDBCap) }, 48*1024, "agent.TestForwardingTableCaps"),
	capValue("SwitchInfo.RandomFDBCap", func(r *capReading) uint64 { return uint64(r.sw.RandomFDBCap) }, 0, "agent.TestForwardingTables"),
	capValue("SwitchInfo.MulticastFDBCap", func(r *capReading) uint64 { return uint64(r.sw.MulticastFDBCap) }, 1024, "agent.TestForwardingTableCaps"),
	capValue("SwitchInfo.OptimizedSLtoVLMappingProgramming", func(r *capReading) uint64 { return uint64(r.sw.OptimizedSLtoVLMappingProgramming) }, 1, "agent.TestSLtoVL"),
	capValue("SwitchInfo.PartitionEnforcementCap", func(r *capReading) uint64 { return uint64(r.sw.PartitionEnforcementCap) }, 64, "harness/interop.TestPartitions"),
	capValue("SwitchInfo.InboundEnforcementCap", func(r *capReading) uint64 { return capBool(r.sw.InboundEnforcementCap) }, 1, "softswitch.TestPartitionEnforcement"),
	capValue("SwitchInfo.OutboundEnforcementCap", func(r *capReading) uint64 { return capBool(r.sw.OutboundEnforcementCap) }, 1, "softswitch.TestPartitionEnforcement"),
	capValue("SwitchInfo.FilterRawInboundCap", func(r *capReading) uint64 { return capBool(r.sw.FilterRawInboundCap) }, 0, "softswitch.TestPartitionEnforcement"),
	capValue("SwitchInfo.FilterRawOutboundCap", func(r *capReading) uint64 { return capBool(r.sw.FilterRawOutboundCap) }, 0, "softswitch.TestPartitionEnforcement"),
	capValue("SwitchInfo.EnhancedPort0", func(r *capReading) uint64 { return capBool(r.sw.EnhancedPort0) }, 0, "agent.TestSwitchPort0"),

	// The PMA's ClassPortInfo.
	capBit("switch PMA ClassPortInfo.CapabilityMask", 1<<8, "agent.TestPMA"),
	capBit("switch PMA ClassPortInfo.CapabilityMask", 1<<9, "harness/interop.TestPMAOptionalCounters"),
	capBit("switch PMA ClassPortInfo.CapabilityMask", 1<<12, "agent.TestPMACapMask"),
	capBit("CA PMA ClassPortInfo.CapabilityMask", 1<<8, "agent.TestPMA"),
	capBit("CA PMA ClassPortInfo.CapabilityMask", 1<<9, "harness/interop.TestPMAOptionalCounters"),
	capBit("CA PMA ClassPortInfo.CapabilityMask", 1<<12, "agent.TestPMACapMask"),

	// Congestion control: the values are stored and read back; no
	// mechanism acts on them yet, and nothing claims one.
	capValue("switch CongestionInfo.ControlTableCap", func(r *capReading) uint64 { return uint64(r.swCC.ControlTableCap) }, 0, "agent.TestCCStoredValues"),
	capValue("CA CongestionInfo.ControlTableCap", func(r *capReading) uint64 { return uint64(r.caCC.ControlTableCap) }, 2, "harness/interop.TestCongestionControlOpenSM"),
}

// capSame returns what field reads on every port kind of r (a CA port,
// switch port 0, a cabled and an uncabled switch port), or a value no row
// audits when they differ.
func capSame(r *capReading, field func(p *mad.PortInfoFields) uint64) uint64 {
	v := field(&r.caPort)
	for _, p := range []*mad.PortInfoFields{&r.swPort0, &r.swLinked, &r.swFree} {
		if field(p) != v {
			return capDiffer
		}
	}
	return v
}

// capSame2 is capSame for two values.
func capSame2(a, b uint64) uint64 {
	if a != b {
		return capDiffer
	}
	return a
}

// capDiffer stands for a field that reads differently on port kinds the
// audit expects to agree.
const capDiffer = 1<<64 - 1

// TestCapabilityAudit reads every capability of a switch and an HCA from a
// running fabric and checks it against capAudit.
func TestCapabilityAudit(t *testing.T) {
	r := readCapabilities(t)
	audited := map[string]uint64{}
	for _, row := range capAudit {
		require.NotNil(t, row.get, "%s: no reader (capBit of an unknown mask?)", row.field)
		got := row.get(r)
		if row.bit != 0 {
			got &= row.bit
			audited[row.field] |= row.bit
		}
		if got != row.want {
			t.Errorf("%s = %#x, audited %#x (proof %s): change the behaviour or the audit", row.field, got, row.want, row.proof)
		}
		if err := capProofExists(row.proof); err != nil {
			t.Errorf("%s: %v", row.field, err)
		}
	}
	for field, get := range capMasks {
		if extra := get(r) &^ audited[field]; extra != 0 {
			t.Errorf("%s has %d bit(s) %#x nobody audited: add capBit rows with their proofs", field, bits.OnesCount64(extra), extra)
		}
	}
}

// capProofExists checks that proof ("DIR.TestName") names a test function
// in DIR.
func capProofExists(proof string) error {
	dir, name, ok := strings.Cut(proof, ".")
	if !ok || !strings.HasPrefix(name, "Test") {
		return fmt.Errorf("proof %q is not DIR.TestName", proof)
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", dir, "*_test.go"))
	fset := token.NewFileSet()
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name {
				return nil
			}
		}
	}
	return fmt.Errorf("proof %q: no func %s in %s (%d test files)", proof, name, dir, len(files))
}

// readCapabilities brings up two switches with a host each and a free
// port, plays SM from one host (LIDs, routes, every port Active), and
// reads the other host's and its switch's capabilities.
func readCapabilities(t *testing.T) *capReading {
	topo, err := topologies.Irregular(2, 4, 1, 1)
	require.NoError(t, err)
	// At 4X NDR, so that the extended-speed fields and bits show.
	require.NoError(t, topo.SetRate(topologies.Rate{Width: topologies.Width4x, Speed: topologies.SpeedNDR}))
	f := fabrictest.Up(t, "caps", topo, harness.UpOptions{})
	hosts := f.Hosts()
	smNode, caNode := hosts[0], hosts[1]
	sm := f.NewSM(smNode)
	require.NoError(t, sm.Configure())
	ca := f.Index(caNode)
	swRef, ok := topo.Peer(topologies.PortRef{Node: ca, Port: 1})
	require.True(t, ok, "%s is not cabled", caNode)
	sw := swRef.Node
	free := 0
	for p := 1; p <= topo.Node(sw).NumPorts; p++ {
		if _, cabled := topo.Peer(topologies.PortRef{Node: sw, Port: p}); !cabled {
			free = p
		}
	}
	require.NotZero(t, free, "%s has no free port", topo.Node(sw).Name)

	dr := func(attr mad.AttrID, mod uint32, node int) []byte {
		d, err := sm.DR(mad.MethodGet, attr, mod, nil, node)
		require.NoError(t, err)
		return d
	}
	nodeInfo := func(node int) mad.NodeInfoFields {
		ni, err := mad.DecodeNodeInfo(dr(mad.AttrNodeInfo, 0, node))
		require.NoError(t, err)
		return ni
	}
	portInfo := func(node, port int) mad.PortInfoFields {
		pi, err := mad.DecodePortInfo(dr(mad.AttrPortInfo, uint32(port), node))
		require.NoError(t, err)
		return pi
	}
	tid := uint64(0xca95_0000)
	call := func(node int, m []byte) mad.MAD {
		var resp nodeproc.ReceivedMAD
		require.NoError(t, f.Call(smNode, "mad", nodeproc.MADArgs{Port: 1, DLID: sm.LID[node], QP: 1, MAD: m, TimeoutMS: 2000}, &resp))
		h := mad.MAD(resp.MAD)
		require.Equal(t, mad.StatusOK, h.Status(), "%v %v of %s", h.MgmtClass(), h.AttrID(), topo.Node(node).Name)
		return h
	}
	pma := func(node int) mad.ClassPortInfoFields {
		tid++
		r := call(node, mad.AppendPMA(nil, &mad.PMAFields{Method: mad.MethodGet, TransactionID: tid, AttrID: mad.AttrClassPortInfo}))
		c, err := mad.DecodeClassPortInfo(mad.PMA(r).Data())
		require.NoError(t, err)
		return c
	}
	cc := func(node int, attr mad.AttrID) []byte {
		tid++
		r := call(node, mad.AppendCCMAD(nil, &mad.CCMADFields{Method: mad.MethodGet, TransactionID: tid, AttrID: attr}))
		return mad.CCMAD(r).Data()
	}
	cca := func(node int) mad.ClassPortInfoFields {
		c, err := mad.DecodeClassPortInfo(cc(node, mad.AttrClassPortInfo))
		require.NoError(t, err)
		return c
	}
	congestionInfo := func(node int) mad.CongestionInfoFields {
		c, err := mad.DecodeCongestionInfo(cc(node, mad.AttrCongestionInfo))
		require.NoError(t, err)
		return c
	}
	si, err := mad.DecodeSwitchInfo(dr(mad.AttrSwitchInfo, 0, sw))
	require.NoError(t, err)
	return &capReading{
		swNode: nodeInfo(sw), caNode: nodeInfo(ca),
		swPort0: portInfo(sw, 0), swLinked: portInfo(sw, swRef.Port), swFree: portInfo(sw, free),
		caPort: portInfo(ca, 1), sw: si,
		swPMA: pma(sw), caPMA: pma(ca), swCCA: cca(sw), caCCA: cca(ca),
		swCC: congestionInfo(sw), caCC: congestionInfo(ca),
	}
}
