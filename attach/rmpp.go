package attach

import (
	"encoding/binary"

	"ibfab/wire/mad"
)

// The attach point stands where the kernel's MAD layer stands on a real
// host, and that layer, not the client, owns two things about a MAD's
// size: how many bytes go on the wire and how many a receiver is told it
// got. libumad2sim passes the length the client wrote (at most 256 bytes;
// the rest of its datagram is uninitialised stack) and hands the receiver
// the length the server reports. So:
//
//   - Sending, the bytes past the client's length are zeroed: the kernel
//     sends a zero-padded MAD, and nothing else may reach the wire.
//   - A MAD of an RMPP class with the Active flag set (OpenSM's SA
//     answers: GetTableResp and friends) is a one-segment RMPP transfer,
//     and the attach point fills in what the kernel's RMPP sender does
//     (mad.c alloc_send_rmpp_list, ib_mad_rmpp.c send_next_seg): version
//     1, type DATA, segment 1, First|Last, PayloadLength = length - 36.
//     OpenSM sets the Active flag and nothing else of the header.
//   - Receiving, an RMPP-active single-segment DATA MAD is reported as 36
//     + PayloadLength bytes, what the kernel's reassembly reports for a
//     one-segment transfer (get_mad_len); every other MAD is 256 bytes.
//
// Responses larger than one MAD are cut to 256 bytes by libumad2sim
// before the attach point sees them (as under ibsim): full segmentation
// and the ACK/STOP/ABORT exchange are not done here. A client that does
// RMPP itself (ibsm's SA through simclient, with package rmpp) writes its
// segments' headers, which are left as they are (once it has shown it
// does, by an ACK, STOP or ABORT or a segment of several, every header,
// a bad one too, as a raw agent's on a real host), and gets the ACK, STOP
// and ABORT of its transfers; those reach no other client (a libumad2sim
// client would take an ACK for a new request).

// rmppMAD is a view of a MAD of an RMPP class whose RMPP header (IBA
// 13.6.2.1) follows the common header. Callers check the length
// (at least rmppHeaderEnd) before using it.
type rmppMAD []byte

// Offsets and values of the RMPP header.
const (
	rmppVersionOff = 24
	rmppTypeOff    = 25
	rmppFlagsOff   = 26 // RRespTime in the top 5 bits, RMPPFlags in the low 3
	rmppStatusOff  = 27
	rmppSegmentOff = 28
	rmppPayLenOff  = 32
	rmppHeaderEnd  = 36

	rmppVersion1 = 1
	rmppTypeData = 1

	rmppFlagActive = 1 << 0
	rmppFlagFirst  = 1 << 1
	rmppFlagLast   = 1 << 2

	// rmppSegmentData is the payload one segment carries: a MAD less the
	// common and RMPP headers (IB_MGMT_RMPP_DATA).
	rmppSegmentData = mad.MADSize - rmppHeaderEnd
)

// isRMPPClass reports whether class c carries an RMPP header (the
// kernel's ib_is_mad_class_rmpp): SubnAdm, DevMgt, DevAdm, BIS and the
// vendor range 2.
func isRMPPClass(c mad.MgmtClass) bool {
	switch c {
	case mad.ClassSubnAdm, mad.ClassDevMgt, classDevAdm, classBIS:
		return true
	}
	return c >= classVendor2First && c <= classVendor2Last
}

// Classes wire/mad does not name.
const (
	classDevAdm       mad.MgmtClass = 0x10
	classBIS          mad.MgmtClass = 0x12
	classVendor2First mad.MgmtClass = 0x30
	classVendor2Last  mad.MgmtClass = 0x4f
)

func (r rmppMAD) flags() uint8 { return r[rmppFlagsOff] & 7 }

func (r rmppMAD) payloadLength() uint32 { return binary.BigEndian.Uint32(r[rmppPayLenOff:]) }

// isActive reports whether r is a MAD of an RMPP class with RMPP active:
// what a client hands the kernel's RMPP sender.
func (r rmppMAD) isActive() bool {
	return len(r) >= rmppHeaderEnd && isRMPPClass(mad.MAD(r).MgmtClass()) && r.flags()&rmppFlagActive != 0
}

// isActiveData reports whether r is an RMPP-active MAD of type DATA: a
// segment of an RMPP transfer.
func (r rmppMAD) isActiveData() bool { return r.isActive() && r[rmppTypeOff] == rmppTypeData }

// isControl reports whether r is an RMPP-active ACK, STOP or ABORT.
func (r rmppMAD) isControl() bool {
	return r.isActive() && r[rmppVersionOff] == rmppVersion1 && r[rmppTypeOff] != rmppTypeData
}

// isClientSegment reports whether r is an RMPP DATA segment whose header
// its sender wrote (version 1, type DATA, a segment number): a client doing
// RMPP itself, whose header the attach point leaves alone. OpenSM through
// libumad2sim sets only the Active flag.
func (r rmppMAD) isClientSegment() bool {
	return r.isActiveData() && r[rmppVersionOff] == rmppVersion1 && binary.BigEndian.Uint32(r[rmppSegmentOff:]) >= 1
}

// isMultiSegment reports whether r is a segment of a transfer of more than
// one: not both First and Last.
func (r rmppMAD) isMultiSegment() bool {
	return r.flags()&(rmppFlagFirst|rmppFlagLast) != rmppFlagFirst|rmppFlagLast
}

// sealOneSegment fills in the RMPP header of an RMPP-active MAD of n bytes
// (the client's length, at most 256) sent as a whole transfer, as the
// kernel's RMPP sender does for a transfer of one segment.
func (r rmppMAD) sealOneSegment(n int) {
	r[rmppVersionOff] = rmppVersion1
	r[rmppTypeOff] = rmppTypeData
	r[rmppFlagsOff] |= rmppFlagFirst | rmppFlagLast
	r[rmppStatusOff] = 0
	binary.BigEndian.PutUint32(r[rmppSegmentOff:], 1)
	binary.BigEndian.PutUint32(r[rmppPayLenOff:], uint32(max(n, rmppHeaderEnd)-rmppHeaderEnd))
}

// receivedLength returns the length a client is told a received MAD m
// has: 36 + PayloadLength for a one-segment RMPP DATA transfer whose
// PayloadLength fits a segment, else mad.MADSize (the kernel's get_mad_len
// ignores a PayloadLength out of range, and every non-RMPP MAD is 256).
func receivedLength(m []byte) int {
	r := rmppMAD(m)
	if len(m) < mad.MADSize || !r.isActiveData() {
		return mad.MADSize
	}
	if r.flags()&(rmppFlagFirst|rmppFlagLast) != rmppFlagFirst|rmppFlagLast {
		return mad.MADSize
	}
	if pl := r.payloadLength(); pl <= rmppSegmentData {
		return rmppHeaderEnd + int(pl)
	}
	return mad.MADSize
}
