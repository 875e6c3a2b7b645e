package hca

import (
	"fmt"

	"ibfab/agent"
	"ibfab/port"
	"ibfab/wire"
)

// The CA's side of congestion notification (Annex A10): the destination
// of a FECN-marked UD packet answers its source with a CNP; the source's
// CCA (cca.go) takes every CNP, and every other packet with BECN, as a
// notification for the destination it names.

// newPortCCA builds port num's congestion control agent over the agent's
// settings and the port.
func (h *HCA) newPortCCA(num uint8) *cca {
	return newCCA(num, h.clk, ccaPort{
		settings: func() agent.CCCA { return h.agent.CCCASettings(num) },
		lmc:      func() uint8 { return uint8(h.lmcs[num-1].Load()) },
		rate: func() uint64 {
			if p := h.Port(num); p != nil {
				return p.Rate()
			}
			return 0
		},
		maxWire: func() int {
			if p := h.Port(num); p != nil {
				return wire.UDPacketSize(p.Config().MTU, false)
			}
			return wire.UDPacketSize(DefaultFlowPayload, false)
		},
		logCA: func(ev agent.CCCAEvent) { h.agent.CCLogCA(num, ev) },
	})
}

// receiveCongestion handles the congestion bits of a UD data packet that
// arrived on port num: a BECN is a notification for its source's CCA; a
// FECN is answered with a CNP. It runs on the receive path, so the CNP is
// queued, never waited for.
func (h *HCA) receiveCongestion(num uint8, ud *wire.UDPacket) {
	c := h.ccas[num-1]
	if ud.BECN {
		c.notify(ud.SLID, ud.SL, false)
	}
	if ud.FECN {
		c.countCNP(h.sendCNP(num, ud))
	}
}

// sendCNP answers the FECN-marked packet ud with a CNP back to its source:
// DLID its SLID, SLID the DLID it came to (the alias, which tells the
// source the path that met congestion), the same SL and P_Key, DestQP its
// source QP, BECN set.
func (h *HCA) sendCNP(num uint8, ud *wire.UDPacket) error {
	p := h.Port(num)
	if p == nil {
		return fmt.Errorf("%w: %d", ErrPort, num)
	}
	vl := h.agent.VLFor(0, num, ud.SL)
	if vl >= port.VL15 {
		return fmt.Errorf("%w: SL %d", ErrUnmapped, ud.SL)
	}
	f := wire.CNPFields{VL: vl, SL: ud.SL, DLID: ud.SLID, SLID: ud.DLID, PKey: ud.PKey, DestQP: ud.SrcQP}
	pkt := port.AllocPacket(wire.CNPSize)
	pkt.Bytes = wire.AppendCNP(pkt.Bytes[:0], &f)
	return p.Send(pkt)
}

// receiveCNP takes a packet that is not UD: a CNP is a notification for
// the port's CCA (never answered, whatever its FECN); anything else is
// malformed here. It reports whether the packet was a CNP.
func (h *HCA) receiveCNP(num uint8, b []byte) bool {
	c, err := wire.ParseCNP(b)
	if err != nil {
		return false
	}
	h.ccas[num-1].notify(c.SLID, c.SL, true)
	return true
}

// SetCCA sets the congestion control mode of every port and DRB's cap (0
// keeps it); the state of every destination starts over.
func (h *HCA) SetCCA(m CCMode, capacity int) error {
	if m > CCDRB {
		return fmt.Errorf("%w: congestion control mode %d", ErrConfig, m)
	}
	if capacity < 0 || capacity > MaxDRBCap {
		return fmt.Errorf("%w: DRB cap %d (1..%d)", ErrConfig, capacity, MaxDRBCap)
	}
	for _, c := range h.ccas {
		c.setMode(m, capacity)
	}
	return nil
}

// CCAStatus returns the congestion control of the HCA: mode, cap, the
// counters of all ports and every destination with state.
func (h *HCA) CCAStatus() CCAStatus {
	st := CCAStatus{Dests: []CCADest{}}
	for i, c := range h.ccas {
		c.mu.Lock()
		if i == 0 {
			st.Mode, st.Cap = c.mode, c.cap
		}
		c.mu.Unlock()
		st.CCACounters.add(c.counters())
		st.Dests = c.status(st.Dests)
	}
	return st
}
