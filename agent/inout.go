package agent

import (
	"ibfab/wire"
	"ibfab/wire/mad"
)

// Inbound is one MAD that arrived on a physical port, with the addressing
// of the packet that carried it.
type Inbound struct {
	Port  uint8  // arrival port, 1..NumPorts
	SLID  uint16 // LRH SLID
	DLID  uint16 // LRH DLID: permissive, or a LID of this node
	SL    uint8  // LRH SL
	SrcQP uint32 // DETH SrcQP
	DstQP uint32 // BTH DestQP: 0 for SMPs, 1 for GMPs
	PKey  mad.PKey
	MAD   []byte // the MAD, mad.MADSize bytes; not retained unless Owned
	// Owned hands MAD over to the agent, which may then answer or forward
	// the MAD in it instead of in a copy: memfabric, whose packets have
	// one owner at a time, sets it; a data plane whose receive buffer is
	// reused must not. A copy per hop was half of what a management plane
	// allocated during an OpenSM sweep (1 GB on 9,200 nodes).
	Owned bool
}

// Request is a MAD the node's own SM (at an attach point) sends through
// the node's SMI: see Agent.Send.
type Request struct {
	// Port is the port the SM sends from: a CA port, or 0 on a switch.
	Port uint8
	// DLID is the LRH DLID of a LID-routed MAD, or of the LID-routed
	// prefix of a directed-route SMP whose DrSLID is not permissive. It is
	// ignored for purely directed SMPs.
	DLID   uint16
	SL     uint8
	DestQP uint32   // 0 for SMPs, 1 for GMPs; ignored for SMPs
	PKey   mad.PKey // GMPs only; 0 means the default partition
	MAD    []byte   // mad.MADSize bytes; not retained
}

// Outbound is one MAD the caller must move on: transmit it out of Port
// wrapped in LRH/BTH/DETH (UDFields builds them for wire.AppendUD), or,
// when Local is set, hand it to the node's own SM at port Port.
type Outbound struct {
	// Local means the MAD is for the SM attached to this node (a response
	// to one of its requests, a trap, an SMInfo request); nothing is
	// transmitted.
	Local bool
	// Port is the output port (1..NumPorts; 0 only with Local on a switch).
	Port   uint8
	SLID   uint16
	DLID   uint16
	SL, VL uint8
	SrcQP  uint32
	DestQP uint32
	QKey   uint32
	PKey   mad.PKey
	// MAD is a fresh mad.MADSize-byte buffer the caller owns.
	MAD []byte
}

// UDFields returns the fields wire.AppendUD needs to build the packet that
// carries o.
func (o *Outbound) UDFields() wire.UDFields {
	return wire.UDFields{
		VL:      o.VL,
		SL:      o.SL,
		DLID:    o.DLID,
		SLID:    o.SLID,
		PKey:    uint16(o.PKey),
		DestQP:  o.DestQP,
		QKey:    o.QKey,
		SrcQP:   o.SrcQP,
		Payload: o.MAD,
	}
}

// vl15 is the management VL: SMPs travel on it and nothing else does.
const vl15 = 15

// smpOut returns an Outbound for an SMP out of port with the given LIDs.
func smpOut(port uint8, slid, dlid uint16, sl uint8, m []byte) Outbound {
	return Outbound{
		Port: port, SLID: slid, DLID: dlid, SL: sl, VL: vl15,
		SrcQP: wire.QP0, DestQP: wire.QP0, PKey: mad.DefaultPKey, MAD: m,
	}
}
