package softswitch

import (
	"errors"

	"ibfab/agent"
	"ibfab/port"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// ErrNotMAD is returned by ParseMAD for a packet that is not a UD datagram
// to QP0 or QP1 carrying a whole MAD.
var ErrNotMAD = errors.New("softswitch: not a MAD packet")

// ParseMAD reads the addressing and the MAD of a UD packet to QP0 or QP1
// that arrived on physical port n, for agent.HandleMAD. The Inbound's MAD
// aliases b. b must be a packet the port layer verified (lengths and
// CRCs); anything else is an error, never a panic.
func ParseMAD(n uint8, b []byte) (agent.Inbound, error) {
	u, err := wire.ParseUD(b)
	if err != nil || u.OpCode != wire.UDSendOnly || u.DestQP != wire.QP0 && u.DestQP != wire.QP1 || len(u.Payload) < mad.MADSize {
		return agent.Inbound{}, ErrNotMAD
	}
	return agent.Inbound{
		Port:  n,
		SLID:  u.SLID,
		DLID:  u.DLID,
		SL:    u.SL,
		SrcQP: u.SrcQP,
		DstQP: u.DestQP,
		PKey:  mad.PKey(u.PKey),
		MAD:   u.Payload[:mad.MADSize],
	}, nil
}

// NewOutboundPacket returns o as a sealed packet ready for port.Send.
func NewOutboundPacket(o *agent.Outbound) *port.Packet {
	f := o.UDFields()
	pkt := port.AllocPacket(wire.UDPacketSize(len(f.Payload), f.GRH != nil))
	pkt.Bytes = wire.AppendUD(pkt.Bytes[:0], &f)
	return pkt
}

// forAgent reports whether the packet in (already parsed) is addressed to
// the switch's SMA or PMA rather than to be switched: SMPs (directed-route
// or not) to the permissive LID, anything to the switch's own LID. A
// directed-route SMP in the LID-routed part of its route (the prefix
// towards DrSLID's far end, or the answer's way back to DrSLID) carries
// another node's LID and is switched by the LFT like any packet.
func (s *Switch) forAgent(in agent.Inbound) bool {
	if in.DLID == mad.PermissiveLID && in.DstQP == wire.QP0 {
		return true
	}
	return s.agent.HasLID(in.Port, in.DLID)
}

// toAgent hands a MAD to the agent and sends what it returns. The packet
// is released first: the agent does not keep the MAD, and the input
// buffer should not wait for the answer.
func (s *Switch) toAgent(in agent.Inbound, pkt *port.Packet) {
	s.stats.toAgent.Add(1)
	arb := in.DstQP == wire.QP0 && mad.MAD(in.MAD).AttrID() == mad.AttrVLArbitration
	outs := s.agent.HandleMAD(in)
	pkt.Release() // in.MAD is gone from here on
	for i := range outs {
		s.sendOutbound(outs[i])
	}
	if arb {
		// A VLArbitrationTable Set reaches no PortControl call: pick
		// the tables up here.
		for n := range s.ports {
			s.syncArbitration(uint8(n))
		}
	}
}

// sendOutbound transmits one of the agent's Outbounds. It is also the
// agent's Sender (traps).
func (s *Switch) sendOutbound(o agent.Outbound) {
	if o.Local {
		s.stats.localMADs.Add(1)
		return
	}
	p := s.Port(o.Port)
	if p == nil {
		s.stats.badOutbound.Add(1)
		return
	}
	if err := p.Send(NewOutboundPacket(&o)); err != nil {
		s.stats.sendFailed.Add(1)
		return
	}
	s.stats.fromAgent.Add(1)
}
