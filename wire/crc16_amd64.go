package wire

import "golang.org/x/sys/cpu"

// The VCRC of a large packet is folded with carry-less multiplication
// (PCLMULQDQ) before the tables take the last 64 bytes and the tail: on the
// 2-core test machine the table CRC of each 2 KiB packet was over a quarter
// of a sending and of a receiving node's CPU (pprof under `ibfab bench
// fabric --only unpaced`). Folding needs no reduction of its own: the four
// accumulators are a 64-byte string congruent to the data modulo P, whose
// table CRC from a zero register is the data's (crc16Update).

//go:noescape
func crc16Fold(p *byte, n int, crc uint64, k *[2]uint64, out *[64]byte)

// crc16FoldK are the fold's multipliers: an accumulator's low half holds
// the coefficients of x^127..x^64 of its 16 bytes, its high half those of
// x^63..x^0, and a round moves both 512 bits on, by x^576 and x^512. A
// reflected carry-less product comes out one degree low, so the constants
// are x^575 and x^511 mod P.
var crc16FoldK = [2]uint64{reflect64(xPowMod16(575)), reflect64(xPowMod16(511))}

var canFold = cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE2

func crc16FoldInto(c uint16, b []byte, acc *[64]byte) (n int) {
	if !canFold || len(b) < crc16FoldMin {
		return 0
	}
	n = len(b) &^ 63
	crc16Fold(&b[0], n, uint64(c), &crc16FoldK, acc)
	return n
}
