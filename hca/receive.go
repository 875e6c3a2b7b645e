package hca

import (
	"encoding/binary"
	"fmt"

	"ibfab/agent"
	"ibfab/internal/port"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// MADClient is the local SM side of an HCA: the ibsim-protocol attach point
// (issue 4) or a test. It receives the MADs the agent hands to the node's
// own SM — responses to requests sent with SendMAD, traps, SMInfo requests
// when IsSM is set — and sends with HCA.SendMAD.
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

// headers is what the demux needs of a received UD packet.
type headers struct {
	slid, dlid uint16
	sl         uint8
	pkey       mad.PKey
	destQP     uint32
	srcQP      uint32
	payload    []byte
}

// parseUD finds the LRH, BTH, DETH and payload of a packet the port has
// already verified (lengths, CRCs); it still checks every bound, because a
// verified packet may be of a transport the HCA does not serve.
func parseUD(b []byte) (headers, error) {
	var h headers
	lrh := wire.LRH(b)
	if !lrh.IsValid() {
		return h, fmt.Errorf("short LRH")
	}
	end := int(lrh.PktLen()) * 4 // LRH through ICRC
	if end > len(b) || end < wire.LRHSize {
		return h, fmt.Errorf("bad PktLen")
	}
	off := wire.LRHSize
	switch lrh.LNH() {
	case wire.LNHLocal:
	case wire.LNHGlobal:
		off += wire.GRHSize
	default:
		return h, fmt.Errorf("LNH %v: not an IBA transport packet", lrh.LNH())
	}
	if off+wire.BTHSize+wire.DETHSize+wire.ICRCSize > end {
		return h, fmt.Errorf("short transport headers")
	}
	bth := wire.BTH(b[off:])
	if !bth.OpCode().IsUD() {
		return h, fmt.Errorf("opcode %v: not UD", bth.OpCode())
	}
	deth := wire.DETH(b[off+wire.BTHSize:])
	pstart := off + wire.BTHSize + wire.DETHSize
	if bth.OpCode() == wire.UDSendOnlyImm {
		pstart += 4 // ImmDt
	}
	pend := end - wire.ICRCSize - int(bth.PadCnt())
	if pend < pstart {
		return h, fmt.Errorf("bad PadCnt")
	}
	h = headers{
		slid: lrh.SLID(), dlid: lrh.DLID(), sl: lrh.SL(),
		pkey: mad.PKey(bth.PKey()), destQP: bth.DestQP(), srcQP: deth.SrcQP(),
		payload: b[pstart:pend],
	}
	return h, nil
}

// receive is every port's Receiver: QP0 and QP1 to the agent, other QPs to
// the UD data QP's accounting. It releases pkt before it returns, so the
// peer gets its credit back at once.
func (h *HCA) receive(num uint8, p *port.Port, pkt *port.Packet) {
	defer pkt.Release()
	ud, err := parseUD(pkt.Bytes)
	if err != nil {
		p.CountDrop(port.DropMalformed)
		return
	}
	switch ud.destQP {
	case wire.QP0:
		h.handleMAD(num, ud)
	case wire.QP1:
		// The agent drops a GMP whose P_Key does not match and counts it in
		// PortInfo.P_KeyViolations; the port counts it too, for the PMA's
		// PortRcvConstraintErrors.
		if !h.agent.PKeyMatch(num, ud.pkey) {
			p.CountDrop(port.DropPKey)
		}
		h.handleMAD(num, ud)
	default:
		if !h.agent.PKeyMatch(num, ud.pkey) {
			p.CountDrop(port.DropPKey)
			return
		}
		h.pstat[num-1].receive(h.clk.Now(), ud.payload)
	}
}

func (h *HCA) handleMAD(num uint8, ud headers) {
	outs := h.agent.HandleMAD(agent.Inbound{
		Port: num, SLID: ud.slid, DLID: ud.dlid, SL: ud.sl,
		SrcQP: ud.srcQP, DstQP: ud.destQP, PKey: ud.pkey, MAD: ud.payload,
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
