package hca

import "encoding/binary"

// A flow's payload is a generator's (the send stamp) followed by a flow
// tag: its own magic, so that the zeros after a generator's stamp never
// read as a flow, the flow's ID and a per-flow sequence number, from
// which the receiver tells lost and reordered packets.
//
//	0      4          12         16       20             28
//	| ibfa | send ns  | iflw     | id     | sequence     | …
const (
	flowMagic   = 0x69666c77 // "iflw"
	flowTagSize = 16         // magic (4) + ID (4) + sequence (8)
	// FlowHeaderSize is the smallest payload of a flow: stamp and tag.
	FlowHeaderSize = stampSize + flowTagSize
)

// FlowTag identifies a packet of a flow: the ID the flow's sender chose
// (unique among the flows of its HCA) and the packet's place in the flow,
// from 0.
type FlowTag struct {
	ID  uint32
	Seq uint64
}

// PutFlowTag writes the tag after the stamp of b, which holds at least
// FlowHeaderSize bytes.
func PutFlowTag(b []byte, t FlowTag) {
	binary.BigEndian.PutUint32(b[stampSize:], flowMagic)
	binary.BigEndian.PutUint32(b[stampSize+4:], t.ID)
	binary.BigEndian.PutUint64(b[stampSize+8:], t.Seq)
}

// ReadFlowTag returns the flow tag of a payload and whether it has one: a
// send stamp followed by the flow magic. A generator's payload (the
// stamp, then zeros) and foreign payloads have none.
func ReadFlowTag(b []byte) (FlowTag, bool) {
	if len(b) < FlowHeaderSize {
		return FlowTag{}, false
	}
	if _, ok := readStamp(b); !ok || binary.BigEndian.Uint32(b[stampSize:]) != flowMagic {
		return FlowTag{}, false
	}
	return FlowTag{ID: binary.BigEndian.Uint32(b[stampSize+4:]), Seq: binary.BigEndian.Uint64(b[stampSize+8:])}, true
}
