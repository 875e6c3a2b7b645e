#include "textflag.h"

// func crc16Fold(p *byte, n int, crc uint64, k *[2]uint64, out *[64]byte)
//
// Folds n bytes at p (n a multiple of 64, at least 64) into four 16-byte
// accumulators congruent to them modulo the CRC-16's polynomial and writes
// them to out; crc is XORed into the first bytes (the register's preset).
// Each round multiplies every accumulator's low half by k[0] and its high
// half by k[1] (x^575 and x^511 mod P, bit-reflected: crc16_amd64.go) and
// adds the next 64 bytes: four independent carry-less multiply chains.
TEXT ·crc16Fold(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ crc+16(FP), AX
	MOVQ k+24(FP), BX
	MOVQ out+32(FP), DI

	MOVOU 0(SI), X0
	MOVOU 16(SI), X1
	MOVOU 32(SI), X2
	MOVOU 48(SI), X3
	MOVQ  AX, X4
	PXOR  X4, X0
	MOVOU (BX), X4
	ADDQ  $64, SI
	SUBQ  $64, CX

loop:
	CMPQ CX, $64
	JB   done
	MOVO X0, X5
	MOVO X1, X6
	MOVO X2, X7
	MOVO X3, X8
	PCLMULQDQ $0x00, X4, X0
	PCLMULQDQ $0x00, X4, X1
	PCLMULQDQ $0x00, X4, X2
	PCLMULQDQ $0x00, X4, X3
	PCLMULQDQ $0x11, X4, X5
	PCLMULQDQ $0x11, X4, X6
	PCLMULQDQ $0x11, X4, X7
	PCLMULQDQ $0x11, X4, X8
	MOVOU 0(SI), X9
	MOVOU 16(SI), X10
	MOVOU 32(SI), X11
	MOVOU 48(SI), X12
	PXOR  X5, X0
	PXOR  X6, X1
	PXOR  X7, X2
	PXOR  X8, X3
	PXOR  X9, X0
	PXOR  X10, X1
	PXOR  X11, X2
	PXOR  X12, X3
	ADDQ  $64, SI
	SUBQ  $64, CX
	JMP   loop

done:
	MOVOU X0, 0(DI)
	MOVOU X1, 16(DI)
	MOVOU X2, 32(DI)
	MOVOU X3, 48(DI)
	RET
