package simproto

import (
	"encoding/binary"
	"fmt"
)

// A MAD datagram, C struct sim_request:
//
//	 0 DLID: 16 bits big-endian in the first 2 bytes of a 4-byte slot
//	 4 SLID: likewise; a client sends 0xffff for a permissive DLID and 0
//	   otherwise ("fill in my port's LID")
//	 8 destination QP, 32 bits big-endian
//	12 source QP, 32 bits big-endian
//	16 status, 32 bits big-endian: 0, or StatusTimeout on a request the
//	   server hands back unanswered
//	20 padding
//	24 length of the MAD, 64 bits big-endian
//	32 MAD (256 bytes)
//
// The LID slots hold htons(lid) in a host-order uint32; on the little-endian
// hosts this was tested on, that is the big-endian LID followed by two zero
// bytes, which is what the accessors read and write.
const (
	reqDLID   = 0
	reqSLID   = 4
	reqDQP    = 8
	reqSQP    = 12
	reqStatus = 16
	reqPad    = 20
	reqLength = 24
	reqMAD    = 32

	MADSize     = 256
	RequestSize = reqMAD + MADSize // 288
)

// StatusTimeout is the status of a request handed back without an answer:
// Linux's ETIMEDOUT, what the kernel's umad layer reports for a send that
// timed out.
const StatusTimeout = 110

// Request is a view of a MAD datagram. Its methods do not check lengths:
// callers must check IsValid first, or they may panic.
type Request []byte

// RequestFields holds a MAD datagram, for building one.
type RequestFields struct {
	DLID, SLID uint16
	DestQP     uint32
	SrcQP      uint32
	Status     uint32
	Length     uint64 // MADSize when zero in Encode
	MAD        []byte // at most MADSize bytes, zero-padded
}

// IsValid reports whether r is exactly one MAD datagram: ibsim takes
// nothing shorter or longer.
func (r Request) IsValid() bool { return len(r) == RequestSize }

func lidAt(b []byte) uint16 {
	// htons(lid) stored as a host-order uint32: the LID is the low 16 bits
	// of that uint32, big-endian in memory.
	var s [2]byte
	host.PutUint16(s[:], uint16(host.Uint32(b)))
	return binary.BigEndian.Uint16(s[:])
}

func putLIDAt(b []byte, lid uint16) {
	var s [2]byte
	binary.BigEndian.PutUint16(s[:], lid)
	host.PutUint32(b, uint32(host.Uint16(s[:])))
}

// DLID returns the destination LID.
func (r Request) DLID() uint16 { return lidAt(r[reqDLID:]) }

// SetDLID sets the destination LID.
func (r Request) SetDLID(lid uint16) { putLIDAt(r[reqDLID:], lid) }

// SLID returns the source LID.
func (r Request) SLID() uint16 { return lidAt(r[reqSLID:]) }

// SetSLID sets the source LID.
func (r Request) SetSLID(lid uint16) { putLIDAt(r[reqSLID:], lid) }

// DestQP returns the destination QP.
func (r Request) DestQP() uint32 { return binary.BigEndian.Uint32(r[reqDQP:]) }

// SetDestQP sets the destination QP.
func (r Request) SetDestQP(qp uint32) { binary.BigEndian.PutUint32(r[reqDQP:], qp) }

// SrcQP returns the source QP.
func (r Request) SrcQP() uint32 { return binary.BigEndian.Uint32(r[reqSQP:]) }

// SetSrcQP sets the source QP.
func (r Request) SetSrcQP(qp uint32) { binary.BigEndian.PutUint32(r[reqSQP:], qp) }

// Status returns the status.
func (r Request) Status() uint32 { return binary.BigEndian.Uint32(r[reqStatus:]) }

// SetStatus sets the status.
func (r Request) SetStatus(s uint32) { binary.BigEndian.PutUint32(r[reqStatus:], s) }

// Length returns the length field.
func (r Request) Length() uint64 { return binary.BigEndian.Uint64(r[reqLength:]) }

// SetLength sets the length field.
func (r Request) SetLength(n uint64) { binary.BigEndian.PutUint64(r[reqLength:], n) }

// MAD returns the 256 MAD bytes.
func (r Request) MAD() []byte { return r[reqMAD:RequestSize] }

// Encode writes f into r.
func (r Request) Encode(f *RequestFields) {
	r.SetDLID(f.DLID)
	r.SetSLID(f.SLID)
	r.SetDestQP(f.DestQP)
	r.SetSrcQP(f.SrcQP)
	r.SetStatus(f.Status)
	clear(r[reqPad:reqLength])
	n := f.Length
	if n == 0 {
		n = MADSize
	}
	r.SetLength(n)
	clear(r.MAD()[copy(r.MAD(), f.MAD):])
}

// Fields returns the fields of r; MAD is a copy.
func (r Request) Fields() RequestFields {
	return RequestFields{DLID: r.DLID(), SLID: r.SLID(), DestQP: r.DestQP(), SrcQP: r.SrcQP(),
		Status: r.Status(), Length: r.Length(), MAD: append([]byte(nil), r.MAD()...)}
}

// AppendRequest appends the MAD datagram f to dst.
func AppendRequest(dst []byte, f *RequestFields) []byte {
	dst, b := grow(dst, RequestSize)
	Request(b).Encode(f)
	return dst
}

// DecodeRequest returns the MAD datagram in b, which must be exactly
// RequestSize bytes. The MAD itself is not checked: that is the job of
// whoever processes it.
func DecodeRequest(b []byte) (RequestFields, error) {
	if !Request(b).IsValid() {
		return RequestFields{}, fmt.Errorf("%w: MAD datagram of %d bytes, want %d", ErrSize, len(b), RequestSize)
	}
	return Request(b).Fields(), nil
}
