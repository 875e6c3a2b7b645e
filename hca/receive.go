package hca

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"ibfab/agent"
	"ibfab/port"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// MADClient is the local SM side of an HCA: the ibsim-protocol attach point
// (issue 4) or a test. It receives the MADs the agent hands to the node's
// own SM — responses to requests sent with SendMAD, traps, SMInfo requests
// and TrapRepresses of the SM's own traps when IsSM is set, and, with
// agent.Config.LocalGMP, the GMPs the agent does not serve — and sends with
// HCA.SendMAD.
type MADClient interface {
	// DeliverMAD is called with a Local Outbound of the agent that arrived
	// on port. It is called from the port's receive goroutine (or from
	// SendMAD's caller, for MADs that loop back into the node) and must
	// not block for long, nor call HCA.Close.
	DeliverMAD(port uint8, o agent.Outbound)
}

// MADClientFunc adapts a function to MADClient.
type MADClientFunc func(port uint8, o agent.Outbound)

// DeliverMAD implements MADClient.
func (f MADClientFunc) DeliverMAD(port uint8, o agent.Outbound) { f(port, o) }

// receive is every port's Receiver: QP0 and QP1 to the agent, other QPs to
// the UD data QP's accounting. It releases pkt before it returns, so the
// peer gets its credit back at once.
func (h *HCA) receive(num uint8, p *port.Port, pkt *port.Packet) {
	defer pkt.Release()
	ud, err := wire.ParseUD(pkt.Bytes)
	if err != nil {
		if !errors.Is(err, wire.ErrNotUD) || !h.receiveCNP(num, pkt.Bytes) {
			p.CountDrop(port.DropMalformed)
		}
		return
	}
	switch ud.DestQP {
	case wire.QP0:
		h.handleMAD(num, ud)
	case wire.QP1:
		// The agent drops a GMP whose P_Key does not match and counts it in
		// PortInfo.P_KeyViolations; the port counts it too, for the PMA's
		// PortRcvConstraintErrors.
		if !h.agent.PKeyMatch(num, mad.PKey(ud.PKey)) {
			p.CountDrop(port.DropPKey)
		}
		h.handleMAD(num, ud)
	default:
		if !h.agent.PKeyMatch(num, mad.PKey(ud.PKey)) {
			p.CountDropPacket(port.DropPKey, pkt.Bytes)
			return
		}
		h.receiveCongestion(num, &ud)
		pk := rxPacket{slid: ud.SLID, sl: ud.SL, wire: len(pkt.Bytes), payload: ud.Payload}
		h.pstat[num-1].receive(h.clk.Now(), pk, time.Duration(h.flowBucket.Load()))
	}
}

func (h *HCA) handleMAD(num uint8, ud wire.UDPacket) {
	outs := h.agent.HandleMAD(agent.Inbound{
		Port: num, SLID: ud.SLID, DLID: ud.DLID, SL: ud.SL,
		SrcQP: ud.SrcQP, DstQP: ud.DestQP, PKey: mad.PKey(ud.PKey), MAD: ud.Payload,
	})
	h.dispatch(outs)
}

// dispatch transmits the agent's outbounds and hands the local ones to the
// MAD client. It returns the first transmit error.
func (h *HCA) dispatch(outs []agent.Outbound) error {
	var first error
	for i := range outs {
		o := &outs[i]
		if o.Local {
			if h.mc == nil {
				h.clientDropped.Add(1)
				continue
			}
			h.mc.DeliverMAD(o.Port, *o)
			continue
		}
		if err := h.transmit(o); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// transmit wraps an outbound MAD in LRH/BTH/DETH and sends it. The port
// counts what it drops.
func (h *HCA) transmit(o *agent.Outbound) error {
	p := h.Port(o.Port)
	if p == nil {
		return fmt.Errorf("%w: %d", ErrPort, o.Port)
	}
	f := o.UDFields()
	pkt := port.AllocPacket(wire.UDPacketSize(len(o.MAD), false))
	pkt.Bytes = wire.AppendUD(pkt.Bytes[:0], &f)
	return p.Send(pkt)
}

// SendMAD sends a MAD for the SM attached to this HCA at r.Port through the
// node's SMI (agent.Send): directed-route SMPs leave by their initial path on
// VL15, LID-routed ones and GMPs to r.DLID (GMPs on the VL the port's SLtoVL
// gives r.SL); what is addressed to this node itself comes back through
// DeliverMAD. It returns the first transmit error.
func (h *HCA) SendMAD(r agent.Request) error {
	if h.isClosed() {
		return ErrClosed
	}
	if h.Port(r.Port) == nil {
		return fmt.Errorf("%w: %d", ErrPort, r.Port)
	}
	return h.dispatch(h.agent.Send(r))
}

func (h *HCA) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.closed
}

// The UD payload of generated traffic starts with a stamp, so the receiver
// can tell it from other payloads and compute the one-way latency on the
// shared clock.
const (
	stampMagic = 0x69626661 // "ibfa"
	stampSize  = 12         // magic (4) + send time in Unix ns (8)
)

func putStamp(b []byte, ns int64) {
	binary.BigEndian.PutUint32(b, stampMagic)
	binary.BigEndian.PutUint64(b[4:], uint64(ns))
}

func readStamp(b []byte) (int64, bool) {
	if len(b) < stampSize || binary.BigEndian.Uint32(b) != stampMagic {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b[4:])), true
}
