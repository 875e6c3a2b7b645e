package wire

import (
	"encoding/binary"
	"fmt"
)

// Base Transport Header (IBA 1.2.1 §9.2, 12 bytes, first transport header
// of every IBA packet):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    OpCode     |S|M|Pad|  TVer |             P_Key             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    resv8a     |                    DestQP                     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|A|    resv7    |                      PSN                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// S is SE (solicited event), M is MigReq, Pad is PadCnt: the number of pad
// bytes (0-3) that align the payload to 4 bytes. resv8a is a variant field:
// it is replaced by ones when the ICRC is computed. Congestion control
// (Annex A10) takes its top two bits: F is FECN, set by a congested switch
// on the way, B is BECN, set in the notification back to the source; being
// ICRC-masked, a switch that marks a packet reseals only its VCRC. ibfab's
// adaptive routing takes the next bit, X (0x20): Adapted, set by a switch
// in AFI mode that routed the packet away from its deterministic port, so
// that later switches keep it on the Adapted Flow Channel and never adapt
// it again (docs/adaptive-routing.md). Fields and Encode leave it out, as
// they do the rest of resv8a.
const (
	bthOpCode   = 0
	bthFlags    = 1
	bthPKey     = 2
	bthResv8a   = 4
	bthDestQP   = 4 // 32-bit word whose low 24 bits are DestQP
	bthAckPSN   = 8 // 32-bit word: A bit and PSN
	bthSEBit    = 0x80
	bthMBit     = 0x40
	bthPadShift = 4
	bthPadMask  = 0x3
	bthTVerMask = 0x0f
	bthAckBit   = 0x80000000
	bthFECNBit  = 0x80 // in resv8a
	bthBECNBit  = 0x40
	bthAdaptBit = 0x20
	bthQPMask   = 0x00ffffff
	bthPSNMask  = 0x00ffffff

	// BTHSize is the size of the Base Transport Header.
	BTHSize = 12
)

// OpCode is the BTH OpCode: the transport service in bits 7-5 and the
// operation in bits 4-0 (§9.2.1, Table 38).
type OpCode uint8

// OpCode values of the services this fabric carries. UC uses the RC
// operation codes with service bits 001, RD 010, UD 011.
const (
	RCSendFirst              OpCode = 0x00
	RCSendMiddle             OpCode = 0x01
	RCSendLast               OpCode = 0x02
	RCSendLastImm            OpCode = 0x03
	RCSendOnly               OpCode = 0x04
	RCSendOnlyImm            OpCode = 0x05
	RCRDMAWriteFirst         OpCode = 0x06
	RCRDMAWriteMiddle        OpCode = 0x07
	RCRDMAWriteLast          OpCode = 0x08
	RCRDMAWriteLastImm       OpCode = 0x09
	RCRDMAWriteOnly          OpCode = 0x0a
	RCRDMAWriteOnlyImm       OpCode = 0x0b
	RCRDMAReadRequest        OpCode = 0x0c
	RCRDMAReadResponseFirst  OpCode = 0x0d
	RCRDMAReadResponseMiddle OpCode = 0x0e
	RCRDMAReadResponseLast   OpCode = 0x0f
	RCRDMAReadResponseOnly   OpCode = 0x10
	RCAcknowledge            OpCode = 0x11
	RCAtomicAcknowledge      OpCode = 0x12
	RCCompareSwap            OpCode = 0x13
	RCFetchAdd               OpCode = 0x14

	UCSendFirst   OpCode = 0x20
	UCSendMiddle  OpCode = 0x21
	UCSendLast    OpCode = 0x22
	UCSendLastImm OpCode = 0x23
	UCSendOnly    OpCode = 0x24
	UCSendOnlyImm OpCode = 0x25

	UDSendOnly    OpCode = 0x64
	UDSendOnlyImm OpCode = 0x65

	// CNP is the congestion notification packet of Annex A10 (service
	// bits 100): a CA's answer to a FECN for unreliable services.
	CNP OpCode = 0x80
)

// Transport services, the top three bits of an OpCode.
const (
	ServiceRC = 0 // reliable connection
	ServiceUC = 1 // unreliable connection
	ServiceRD = 2 // reliable datagram
	ServiceUD = 3 // unreliable datagram
)

// Service returns the transport service bits (7-5) of the opcode.
func (o OpCode) Service() uint8 { return uint8(o) >> 5 }

// IsUD reports whether the opcode is an unreliable-datagram opcode, which
// carries a DETH after the BTH.
func (o OpCode) IsUD() bool { return o == UDSendOnly || o == UDSendOnlyImm }

var opNames = [...]string{
	0x00: "SEND_FIRST", 0x01: "SEND_MIDDLE", 0x02: "SEND_LAST", 0x03: "SEND_LAST_IMM",
	0x04: "SEND_ONLY", 0x05: "SEND_ONLY_IMM", 0x06: "RDMA_WRITE_FIRST",
	0x07: "RDMA_WRITE_MIDDLE", 0x08: "RDMA_WRITE_LAST", 0x09: "RDMA_WRITE_LAST_IMM",
	0x0a: "RDMA_WRITE_ONLY", 0x0b: "RDMA_WRITE_ONLY_IMM", 0x0c: "RDMA_READ_REQUEST",
	0x0d: "RDMA_READ_RESPONSE_FIRST", 0x0e: "RDMA_READ_RESPONSE_MIDDLE",
	0x0f: "RDMA_READ_RESPONSE_LAST", 0x10: "RDMA_READ_RESPONSE_ONLY", 0x11: "ACKNOWLEDGE",
	0x12: "ATOMIC_ACKNOWLEDGE", 0x13: "COMPARE_SWAP", 0x14: "FETCH_ADD",
}

// String returns the opcode as "RC_SEND_ONLY", "UD_SEND_ONLY", … or
// "OpCode(0xNN)" for codes without a name here.
func (o OpCode) String() string {
	op := uint8(o) & 0x1f
	svc := [...]string{"RC_", "UC_", "RD_", "UD_"}
	switch o.Service() {
	case ServiceRC:
		if int(op) < len(opNames) {
			return svc[0] + opNames[op]
		}
	case ServiceUC:
		if op <= 0x0b { // sends and RDMA writes
			return svc[1] + opNames[op]
		}
	case ServiceUD:
		if o == UDSendOnly || o == UDSendOnlyImm {
			return svc[3] + opNames[op]
		}
	}
	if o == CNP {
		return "CNP"
	}
	return fmt.Sprintf("OpCode(%#02x)", uint8(o))
}

// PacketBTH returns the BTH of packet b, after its LRH and, when the LNH
// says IBA global, its GRH; false for a raw packet or one too short to
// hold a BTH.
func PacketBTH(b []byte) (BTH, bool) {
	if !LRH(b).IsValid() {
		return nil, false
	}
	off := LRHSize
	switch LRH(b).LNH() {
	case LNHLocal:
	case LNHGlobal:
		off += GRHSize
	default:
		return nil, false
	}
	if len(b) < off+BTHSize {
		return nil, false
	}
	return BTH(b[off:]), true
}

// BTH is a view of a Base Transport Header at the start of a byte slice.
// Callers must check IsValid before using any accessor.
type BTH []byte

// BTHFields holds the fields of a BTH for Encode.
type BTHFields struct {
	OpCode OpCode
	SE     bool   // solicited event
	M      bool   // MigReq
	PadCnt uint8  // pad bytes after the payload, 0-3
	TVer   uint8  // transport header version, 4 bits; 0
	PKey   uint16 // partition key
	DestQP uint32 // destination queue pair, 24 bits
	FECN   bool   // congestion met on the way (Annex A10)
	BECN   bool   // congestion notified back to the source
	A      bool   // acknowledge request
	PSN    uint32 // packet sequence number, 24 bits
}

// IsValid reports whether b is long enough to hold a BTH.
func (b BTH) IsValid() bool { return len(b) >= BTHSize }

// OpCode returns the "OpCode" field.
func (b BTH) OpCode() OpCode { return OpCode(b[bthOpCode]) }

// SetOpCode sets the "OpCode" field.
func (b BTH) SetOpCode(v OpCode) { b[bthOpCode] = uint8(v) }

// SE returns the "SE" (solicited event) bit.
func (b BTH) SE() bool { return b[bthFlags]&bthSEBit != 0 }

// SetSE sets the "SE" bit.
func (b BTH) SetSE(v bool) { b[bthFlags] = setBit8(b[bthFlags], bthSEBit, v) }

// M returns the "M" (MigReq) bit.
func (b BTH) M() bool { return b[bthFlags]&bthMBit != 0 }

// SetM sets the "M" bit.
func (b BTH) SetM(v bool) { b[bthFlags] = setBit8(b[bthFlags], bthMBit, v) }

// PadCnt returns the "PadCnt" field: the pad bytes after the payload.
func (b BTH) PadCnt() uint8 { return b[bthFlags] >> bthPadShift & bthPadMask }

// SetPadCnt sets the "PadCnt" field; only the low 2 bits of v are used.
func (b BTH) SetPadCnt(v uint8) {
	b[bthFlags] = b[bthFlags]&^(bthPadMask<<bthPadShift) | (v&bthPadMask)<<bthPadShift
}

// TVer returns the "TVer" (transport header version) field.
func (b BTH) TVer() uint8 { return b[bthFlags] & bthTVerMask }

// SetTVer sets the "TVer" field; only the low 4 bits of v are used.
func (b BTH) SetTVer(v uint8) { b[bthFlags] = b[bthFlags]&^bthTVerMask | v&bthTVerMask }

// PKey returns the "P_Key" (partition key) field.
func (b BTH) PKey() uint16 { return binary.BigEndian.Uint16(b[bthPKey:]) }

// SetPKey sets the "P_Key" field.
func (b BTH) SetPKey(v uint16) { binary.BigEndian.PutUint16(b[bthPKey:], v) }

// DestQP returns the 24-bit "DestQP" (destination queue pair) field.
func (b BTH) DestQP() uint32 { return binary.BigEndian.Uint32(b[bthDestQP:]) & bthQPMask }

// SetDestQP sets the "DestQP" field; only the low 24 bits of v are used and
// resv8a (FECN, BECN included) is cleared.
func (b BTH) SetDestQP(v uint32) { binary.BigEndian.PutUint32(b[bthDestQP:], v&bthQPMask) }

// A returns the "A" (acknowledge request) bit.
func (b BTH) A() bool { return binary.BigEndian.Uint32(b[bthAckPSN:])&bthAckBit != 0 }

// SetA sets the "A" bit.
func (b BTH) SetA(v bool) { b[bthAckPSN] = setBit8(b[bthAckPSN], bthAckBit>>24, v) }

// FECN returns the forward explicit congestion notification bit.
func (b BTH) FECN() bool { return b[bthResv8a]&bthFECNBit != 0 }

// SetFECN sets the FECN bit.
func (b BTH) SetFECN(v bool) { b[bthResv8a] = setBit8(b[bthResv8a], bthFECNBit, v) }

// BECN returns the backward explicit congestion notification bit.
func (b BTH) BECN() bool { return b[bthResv8a]&bthBECNBit != 0 }

// SetBECN sets the BECN bit.
func (b BTH) SetBECN(v bool) { b[bthResv8a] = setBit8(b[bthResv8a], bthBECNBit, v) }

// Adapted returns ibfab's adapted bit (resv8a 0x20): adaptive routing sent
// the packet away from its deterministic path.
func (b BTH) Adapted() bool { return b[bthResv8a]&bthAdaptBit != 0 }

// SetAdapted sets the adapted bit.
func (b BTH) SetAdapted(v bool) { b[bthResv8a] = setBit8(b[bthResv8a], bthAdaptBit, v) }

// PSN returns the 24-bit "PSN" (packet sequence number) field.
func (b BTH) PSN() uint32 { return binary.BigEndian.Uint32(b[bthAckPSN:]) & bthPSNMask }

// SetPSN sets the "PSN" field; only the low 24 bits of v are used.
func (b BTH) SetPSN(v uint32) {
	w := binary.BigEndian.Uint32(b[bthAckPSN:])
	binary.BigEndian.PutUint32(b[bthAckPSN:], w&^bthPSNMask|v&bthPSNMask)
}

// Encode writes every field of f into b, clearing the reserved fields.
func (b BTH) Encode(f *BTHFields) {
	b[bthOpCode] = uint8(f.OpCode)
	b[bthFlags] = (f.PadCnt&bthPadMask)<<bthPadShift | f.TVer&bthTVerMask
	b.SetSE(f.SE)
	b.SetM(f.M)
	b.SetPKey(f.PKey)
	b.SetDestQP(f.DestQP)
	b.SetFECN(f.FECN)
	b.SetBECN(f.BECN)
	w := f.PSN & bthPSNMask
	if f.A {
		w |= bthAckBit
	}
	binary.BigEndian.PutUint32(b[bthAckPSN:], w)
}

// Fields returns the decoded fields of b.
func (b BTH) Fields() BTHFields {
	return BTHFields{OpCode: b.OpCode(), SE: b.SE(), M: b.M(), PadCnt: b.PadCnt(),
		TVer: b.TVer(), PKey: b.PKey(), DestQP: b.DestQP(), FECN: b.FECN(), BECN: b.BECN(), A: b.A(), PSN: b.PSN()}
}

func setBit8(b, mask uint8, v bool) uint8 {
	if v {
		return b | mask
	}
	return b &^ mask
}
