// Package porttest helps tests of code built on package port: Settle lets
// a fabric of ports and pipes come to rest before a test advances its
// manual clock, and the builders make the packets tests send.
package porttest

import (
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/wire"
)

// Settle blocks until nothing moves among ports and pipes without the
// clock advancing: every packet written has been delivered, every
// transmitter is parked (waiting for work, credits or its pacing timer)
// and no port has written anything since the previous look. Pass one end
// of each pipe; every open end must be attached. It must not be called
// from a Receiver or Dispatcher call.
func Settle(ports []*port.Port, pipes ...*pipe.Endpoint) {
	var last []uint64
	for {
		for _, e := range pipes {
			e.Idle()
		}
		now := make([]uint64, len(ports))
		for i, p := range ports {
			now[i] = p.WaitIdle()
		}
		if last != nil && equal(last, now) {
			return
		}
		last = now
	}
}

func equal(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// UDSize returns the size of the packet UD builds for a payload of n bytes.
func UDSize(n int) int { return wire.UDPacketSize(n, false) }

// UD returns a sealed UD SEND_ONLY packet on vl to dlid, QP 2, with an
// n-byte payload whose bytes start at seq (so packets can be told apart).
// On VL15 it is addressed to QP0, as an SMP must be.
func UD(vl uint8, dlid uint16, n int, seq byte) []byte {
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = seq + byte(i)
	}
	qp := uint32(2)
	if vl == port.VL15 {
		qp = wire.QP0
	}
	return wire.AppendUD(nil, &wire.UDFields{
		VL: vl, DLID: dlid, SLID: 1, PKey: 0xffff,
		DestQP: qp, QKey: 0x1234, SrcQP: qp, Payload: payload,
	})
}

// SMP returns a sealed 256-byte-MAD packet on VL15 to QP0.
func SMP(dlid uint16, seq byte) []byte { return UD(port.VL15, dlid, 256, seq) }

// FC returns a sealed flow-control link packet.
func FC(op wire.FlowControlOp, vl uint8, fctbs, fccl uint16) []byte {
	return wire.AppendFlowControl(nil, &wire.FlowControlFields{Op: op, VL: vl, FCTBS: fctbs, FCCL: fccl})
}
