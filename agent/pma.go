package agent

import (
	"fmt"
	"slices"
	"sync"

	"ibfab/wire"
	"ibfab/wire/mad"
)

// The PMA, IBA 16.1: PortCounters and PortCountersExtended Get and Set
// (a Set zeroes the counters CounterSelect names, then answers like a
// Get), ClassPortInfo Get. PortSelect names the port; 0xff asks for the
// sum over all ports, which this PMA supports on switches and CAs alike
// and says so in ClassPortInfo. Other GMP classes are the SM's business
// (Local) when an SM is attached, else answered with a bad-version status,
// which is what a node without an agent for a class says; congestion
// control requests (class 0x21) are the node's CC agent's (cc.go). With
// Config.LocalGMP they, and every GMP response, go to the node's MAD
// client, which finds the requester of a response by its TID (saquery's SA
// answers at a CA that is not the SM's). Adaptive routing requests (class
// 0x0A) are the node's AR agent's (ar.go), at every node: a CA answers
// that it has none.

// receiveGMP handles a MAD that arrived on QP1.
func (a *Agent) receiveGMP(in Inbound) []Outbound {
	if in.DLID != mad.PermissiveLID && !a.HasLID(in.Port, in.DLID) {
		a.stats.misaddressed.Add(1)
		return nil
	}
	sma := a.smaPort(in.Port)
	if !a.PKeyMatch(sma, in.PKey) {
		a.pkeyViolation(sma)
		return nil
	}
	m := own(in)
	h := mad.MAD(m)
	if h.MgmtClass() == mad.ClassCongestion && isAgentRequest(h.Method()) {
		return a.receiveCC(in, m)
	}
	// Only a switch serves the adaptive routing class. Class 0x0A is
	// also Mellanox's vendor class (vendstat), which a CA hands to its MAD
	// client like any class it has no agent for.
	if h.MgmtClass() == mad.ClassVendorAR && a.isSwitch() && isAgentRequest(h.Method()) {
		return a.receiveAR(in, m)
	}
	if a.cfg.LocalGMP && (h.Method().IsResponse() || h.MgmtClass() != mad.ClassPerfMgt) {
		return a.toLocal(in, m)
	}
	if h.MgmtClass() != mad.ClassPerfMgt {
		a.mu.Lock()
		sm := a.hasSM(in.Port)
		a.mu.Unlock()
		switch {
		case sm:
			return a.toLocal(in, m)
		case h.Method().IsResponse():
			a.stats.unexpected.Add(1)
			return nil
		}
		a.respondGMP(m, mad.StatusBadVersion)
		return a.gmpReply(in, m)
	}
	if h.Method().IsResponse() || h.Method() == mad.MethodTrap {
		// For a performance manager running next to the SM.
		return a.toLocal(in, m)
	}
	a.respondGMP(m, a.servePMA(h))
	return a.gmpReply(in, m)
}

// isAgentRequest reports whether a method of a class the agent serves
// itself (congestion control 0x21, adaptive routing 0x0A) is one it
// answers: every request but a Trap or TrapRepress, which go to the
// manager.
func isAgentRequest(m mad.Method) bool {
	return !m.IsResponse() && m != mad.MethodTrap && m != mad.MethodTrapRepress
}

// pkeyViolation counts a GMP whose P_Key the SMA port's table rejects, in
// PortInfo.P_KeyViolations and in Stats.
func (a *Agent) pkeyViolation(sma uint8) {
	a.stats.pkeyViolations.Add(1)
	a.mu.Lock()
	defer a.mu.Unlock()
	info := &a.port[sma].info
	info.PKeyViolations = mad.SatAdd(info.PKeyViolations, 1)
}

// respondGMP turns the request m into its GetResp with status st.
func (a *Agent) respondGMP(m []byte, st mad.Status) {
	h := mad.MAD(m)
	h.SetMethod(mad.MethodGetResp)
	h.SetStatus(st)
	a.stats.responses.Add(1)
	a.stats.countStatus(st)
}

// getOrSet checks the base and class version and the method of a request
// to one of the agent's GMP classes (PMA, CC, AR), which serve Get and
// Set only: set says which, or st says what to answer (not StatusOK).
func getOrSet(h mad.MAD, classVersion uint8) (set bool, st mad.Status) {
	if h.BaseVersion() != mad.BaseVersion || h.ClassVersion() != classVersion {
		return false, mad.StatusBadVersion
	}
	switch h.Method() {
	case mad.MethodGet:
		return false, mad.StatusOK
	case mad.MethodSet:
		return true, mad.StatusOK
	}
	return false, mad.StatusMethodUnsupported
}

// gmpReply addresses the response m to the requester of in.
func (a *Agent) gmpReply(in Inbound, m []byte) []Outbound {
	out, local, ok := a.routeTo(in.Port, in.SLID)
	if !ok {
		a.stats.unroutable.Add(1)
		return nil
	}
	sma := a.smaPort(in.Port)
	outs := a.gmpOut(sma, out, a.ownSLID(sma, in.DLID), in.SLID, in.SL, in.DstQP, in.SrcQP, in.PKey, m)
	if local && len(outs) > 0 {
		outs[0].Local = true
		a.stats.local.Add(1)
	}
	return outs
}

// gmpOut builds a GMP Outbound from the SMA port sma out of port out; the
// VL comes from the SLtoVL table, and an SL that maps to VL15 (unmapped)
// cannot be sent.
func (a *Agent) gmpOut(sma, out uint8, slid, dlid uint16, sl uint8, srcQP, dstQP uint32, pkey mad.PKey, m []byte) []Outbound {
	vl := a.VLFor(sma, out, sl)
	if vl == vl15 {
		a.stats.unroutable.Add(1)
		return nil
	}
	return []Outbound{{
		Port: out, SLID: slid, DLID: dlid, SL: sl, VL: vl,
		SrcQP: srcQP, DestQP: dstQP, QKey: wire.QP1QKey, PKey: pkey, MAD: m,
	}}
}

// servePMA serves a PMA request and returns the status; the response data
// is written into h in place.
func (a *Agent) servePMA(h mad.MAD) mad.Status {
	set, st := getOrSet(h, mad.PerfMgtVersion)
	if st != mad.StatusOK {
		return st
	}
	data := mad.PMA(h).Data()
	serve, ok := a.pmaDispatch[h.AttrID()]
	if !ok {
		return mad.StatusMethodAttrUnsupported
	}
	return serve(a, h.AttrID(), set, data)
}

// pmaServe serves one PMA attribute: data is the request's attribute data,
// overwritten with the response's.
type pmaServe func(a *Agent, attr mad.AttrID, set bool, data []byte) mad.Status

// pmaAttrs returns the PMA's dispatch table: the attributes it serves.
// The optional counter attributes are there when the node's Counters
// count them. The table depends only on the node type and those
// attributes, so agents alike share one (read-only once built): a table
// per agent was 2.5 MB of a 9,200-node plane's heap.
func (a *Agent) pmaAttrs() map[mad.AttrID]pmaServe {
	var optional []mad.AttrID
	if oc, ok := a.cfg.Counters.(OptionalCounters); ok {
		for attr, l := range mad.PMAOptionalLayouts {
			if l.SwitchOnly && !a.isSwitch() {
				continue // a CA port neither marks nor detects congestion
			}
			if _, counted := oc.OptionalCounters(0, attr, 0); counted {
				optional = append(optional, attr)
			}
		}
	}
	slices.Sort(optional)
	k := pmaTableKey{sw: a.isSwitch(), optional: fmt.Sprint(optional)}
	if t, ok := pmaTables.Load(k); ok {
		return t.(map[mad.AttrID]pmaServe)
	}
	t := map[mad.AttrID]pmaServe{
		mad.AttrClassPortInfo: func(a *Agent, _ mad.AttrID, set bool, data []byte) mad.Status {
			if set {
				return mad.StatusMethodAttrUnsupported
			}
			a.classPortInfo(data)
			return mad.StatusOK
		},
		mad.AttrPortCounters: func(a *Agent, _ mad.AttrID, set bool, data []byte) mad.Status {
			return a.portCounters(set, data)
		},
		mad.AttrPortCountersExtended: func(a *Agent, _ mad.AttrID, set bool, data []byte) mad.Status {
			return a.portCountersExt(set, data)
		},
	}
	for _, attr := range optional {
		t[attr] = (*Agent).optionalCounters
	}
	got, _ := pmaTables.LoadOrStore(k, t)
	return got.(map[mad.AttrID]pmaServe)
}

// pmaTableKey is what a PMA dispatch table depends on: the node type and
// the optional attributes served, sorted, as text.
type pmaTableKey struct {
	sw       bool
	optional string
}

// pmaTables holds the PMA dispatch tables built so far, by pmaTableKey.
var pmaTables sync.Map

// PMA ClassPortInfo capability bits (IBA 16.1.3.1, libibmad's IB_PM_*).
const (
	pmaCapAllPortSelect = 1 << 8  // PortSelect 0xff sums all ports
	pmaCapExtWidth      = 1 << 9  // PortCountersExtended, unicast and multicast counters included
	pmaCapPortXmitWait  = 1 << 12 // PortCounters.PortXmitWait counts
)

// pmaCapMask derives ClassPortInfo.CapabilityMask from what the PMA
// serves: AllPortSelect always; extended width when PortCountersExtended
// is served (with all eight counters); PortXmitWait when a data plane
// counts it (Counters set: the port counts credit waits). The optional attributes have no bits of their own (the spec
// puts them in PortSamplesControl.OptionMask, an attribute this PMA does
// not serve).
func (a *Agent) pmaCapMask() uint16 {
	m := uint16(pmaCapAllPortSelect)
	attrs := a.pmaDispatch
	if _, ok := attrs[mad.AttrPortCountersExtended]; ok {
		m |= pmaCapExtWidth
	}
	if _, ok := attrs[mad.AttrPortCounters]; ok && a.cfg.Counters != nil {
		m |= pmaCapPortXmitWait
	}
	return m
}

// classPortInfo writes the PMA's ClassPortInfo (IBA 13.4.8.1): versions,
// capabilities, RespTimeValue; no redirection, no traps.
func (a *Agent) classPortInfo(data []byte) {
	clear(data)
	mad.ClassPortInfo(data).Encode(&mad.ClassPortInfoFields{BaseVersion: mad.BaseVersion,
		ClassVersion: mad.PerfMgtVersion, CapabilityMask: a.pmaCapMask(), RespTimeValue: a.cfg.RespTimeValue})
}

// optionalCounters serves an optional counter attribute: Get, or Set
// resetting the counters CounterSelect names, for one port or the sum
// over all (each counter saturating at its width).
func (a *Agent) optionalCounters(attr mad.AttrID, set bool, data []byte) mad.Status {
	l := mad.PMAOptionalLayouts[attr]
	oc := a.cfg.Counters.(OptionalCounters)
	req := l.Fields(data)
	ports, ok := a.pmaPorts(req.PortSelect)
	if !ok {
		return mad.StatusInvalidField
	}
	sum := mad.PMACounterSetFields{OpCode: req.OpCode, PortSelect: req.PortSelect, CounterSelect: req.CounterSelect}
	for _, p := range ports {
		if set {
			oc.ResetOptionalCounters(p, attr, req.OpCode, req.CounterSelect)
		}
		c, _ := oc.OptionalCounters(p, attr, req.OpCode)
		for i := range len(l.Names) {
			sum.Counters[i] = min(mad.SatAdd(sum.Counters[i], c[i]), l.Max())
		}
	}
	clear(data)
	l.Encode(data, &sum)
	return mad.StatusOK
}

// pmaPorts returns the ports a PortSelect names, or false when it names
// none: 0xff is every port, a switch also has port 0.
func (a *Agent) pmaPorts(sel uint8) ([]uint8, bool) {
	if sel == mad.PortSelectAll {
		ps := a.allPorts()
		if !a.isSwitch() {
			ps = ps[1:]
		}
		return ps, true
	}
	return []uint8{sel}, a.validPort(sel)
}

func (a *Agent) portCounters(set bool, data []byte) mad.Status {
	c := mad.PortCounters(data)
	sel, cs, cs2 := c.PortSelect(), c.CounterSelect(), c.CounterSelect2()
	ports, ok := a.pmaPorts(sel)
	if !ok {
		return mad.StatusInvalidField
	}
	var sum mad.PortCountersFields
	for _, p := range ports {
		if a.cfg.Counters == nil {
			break
		}
		if set {
			a.cfg.Counters.ResetPortCounters(p, cs, cs2)
		}
		addCounters(&sum, a.cfg.Counters.PortCounters(p))
	}
	sum.PortSelect, sum.CounterSelect, sum.CounterSelect2 = sel, cs, cs2
	clear(data)
	c.Encode(&sum)
	return mad.StatusOK
}

func (a *Agent) portCountersExt(set bool, data []byte) mad.Status {
	c := mad.PortCountersExtended(data)
	sel, cs := c.PortSelect(), c.CounterSelect()
	ports, ok := a.pmaPorts(sel)
	if !ok {
		return mad.StatusInvalidField
	}
	var sum mad.PortCountersExtendedFields
	for _, p := range ports {
		if a.cfg.Counters == nil {
			break
		}
		if set {
			a.cfg.Counters.ResetPortCountersExtended(p, cs)
		}
		x := a.cfg.Counters.PortCountersExtended(p)
		sum.PortXmitData = mad.SatAdd(sum.PortXmitData, x.PortXmitData)
		sum.PortRcvData = mad.SatAdd(sum.PortRcvData, x.PortRcvData)
		sum.PortXmitPkts = mad.SatAdd(sum.PortXmitPkts, x.PortXmitPkts)
		sum.PortRcvPkts = mad.SatAdd(sum.PortRcvPkts, x.PortRcvPkts)
		sum.PortUnicastXmitPkts = mad.SatAdd(sum.PortUnicastXmitPkts, x.PortUnicastXmitPkts)
		sum.PortUnicastRcvPkts = mad.SatAdd(sum.PortUnicastRcvPkts, x.PortUnicastRcvPkts)
		sum.PortMulticastXmitPkts = mad.SatAdd(sum.PortMulticastXmitPkts, x.PortMulticastXmitPkts)
		sum.PortMulticastRcvPkts = mad.SatAdd(sum.PortMulticastRcvPkts, x.PortMulticastRcvPkts)
	}
	sum.PortSelect, sum.CounterSelect = sel, cs
	clear(data)
	c.Encode(&sum)
	return mad.StatusOK
}

// addCounters adds x to sum, each counter saturating at its width.
func addCounters(sum *mad.PortCountersFields, x mad.PortCountersFields) {
	sum.SymbolErrorCounter = mad.SatAdd(sum.SymbolErrorCounter, uint64(x.SymbolErrorCounter))
	sum.LinkErrorRecoveryCounter = mad.SatAdd(sum.LinkErrorRecoveryCounter, uint64(x.LinkErrorRecoveryCounter))
	sum.LinkDownedCounter = mad.SatAdd(sum.LinkDownedCounter, uint64(x.LinkDownedCounter))
	sum.PortRcvErrors = mad.SatAdd(sum.PortRcvErrors, uint64(x.PortRcvErrors))
	sum.PortRcvRemotePhysicalErrors = mad.SatAdd(sum.PortRcvRemotePhysicalErrors, uint64(x.PortRcvRemotePhysicalErrors))
	sum.PortRcvSwitchRelayErrors = mad.SatAdd(sum.PortRcvSwitchRelayErrors, uint64(x.PortRcvSwitchRelayErrors))
	sum.PortXmitDiscards = mad.SatAdd(sum.PortXmitDiscards, uint64(x.PortXmitDiscards))
	sum.PortXmitConstraintErrors = mad.SatAdd(sum.PortXmitConstraintErrors, uint64(x.PortXmitConstraintErrors))
	sum.PortRcvConstraintErrors = mad.SatAdd(sum.PortRcvConstraintErrors, uint64(x.PortRcvConstraintErrors))
	sum.LocalLinkIntegrityErrors = mad.SatAdd4(sum.LocalLinkIntegrityErrors, uint64(x.LocalLinkIntegrityErrors))
	sum.ExcessiveBufferOverrunErrors = mad.SatAdd4(sum.ExcessiveBufferOverrunErrors, uint64(x.ExcessiveBufferOverrunErrors))
	sum.VL15Dropped = mad.SatAdd(sum.VL15Dropped, uint64(x.VL15Dropped))
	sum.PortXmitData = mad.SatAdd(sum.PortXmitData, uint64(x.PortXmitData))
	sum.PortRcvData = mad.SatAdd(sum.PortRcvData, uint64(x.PortRcvData))
	sum.PortXmitPkts = mad.SatAdd(sum.PortXmitPkts, uint64(x.PortXmitPkts))
	sum.PortRcvPkts = mad.SatAdd(sum.PortRcvPkts, uint64(x.PortRcvPkts))
	sum.PortXmitWait = mad.SatAdd(sum.PortXmitWait, uint64(x.PortXmitWait))
}
