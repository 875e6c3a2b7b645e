package wire_test

import (
	"hash/crc32"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"ibfab/wire"
)

// benchUD returns the UD packet fields of the benchmarks: a 256-byte MAD to
// QP0, or a 2 KiB payload to a data QP.
func benchUD(mad bool) *wire.UDFields {
	f := &wire.UDFields{VL: 0, SL: 0, DLID: 2, SLID: 1, PKey: 0xffff, DestQP: 0x42, PSN: 1,
		QKey: 0x1234, SrcQP: 0x43, Payload: make([]byte, 2048)}
	if mad {
		f.VL, f.DestQP, f.QKey, f.SrcQP, f.Payload = 15, 0, 0, 0, nodeInfoSMP(0x81, 1)
	}
	return f
}

func benchmarkEncode(b *testing.B, mad bool) {
	f := benchUD(mad)
	buf := wire.AppendEthernet(nil, macB, macA, wire.EtherTypeData)
	buf = wire.AppendUD(buf, f)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = wire.AppendEthernet(buf[:0], macB, macA, wire.EtherTypeData)
		buf = wire.AppendUD(buf, f)
	}
}

func benchmarkDecodeVerify(b *testing.B, mad bool) {
	frame := wire.AppendUD(wire.AppendEthernet(nil, macB, macA, wire.EtherTypeData), benchUD(mad))
	p, l := newParser(layers.LayerTypeEthernet)
	decoded := make([]gopacket.LayerType, 0, 8)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.DecodeLayers(frame, &decoded); err != nil {
			b.Fatal(err)
		}
		if err := wire.Verify(l.eth.Payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeSealMAD(b *testing.B)   { benchmarkEncode(b, true) }
func BenchmarkEncodeSeal2K(b *testing.B)    { benchmarkEncode(b, false) }
func BenchmarkDecodeVerifyMAD(b *testing.B) { benchmarkDecodeVerify(b, true) }
func BenchmarkDecodeVerify2K(b *testing.B)  { benchmarkDecodeVerify(b, false) }

// benchmarkBaseline is the floor the codec benchmarks are read against, in
// the same run: one pass of the standard library's CRC-32 over the frame,
// the least any verifying decoder must do. Report EncodeSeal*/DecodeVerify*
// as ratios to it, since absolute times vary with the machine's load.
func benchmarkBaseline(b *testing.B, mad bool) {
	frame := wire.AppendUD(wire.AppendEthernet(nil, macB, macA, wire.EtherTypeData), benchUD(mad))
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	var sum uint32
	for b.Loop() {
		sum += crc32.ChecksumIEEE(frame)
	}
	_ = sum
}

func BenchmarkBaselineCRC32MAD(b *testing.B) { benchmarkBaseline(b, true) }
func BenchmarkBaselineCRC32_2K(b *testing.B) { benchmarkBaseline(b, false) }

// BenchmarkCRC16_2K is the VCRC of a 2 KiB UD packet.
func BenchmarkCRC16_2K(b *testing.B) {
	buf := make([]byte, 2088)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(buf)))
	var c uint16
	for range b.N {
		c ^= wire.CRC16(buf)
	}
	sinkCRC16 = c
}

var sinkCRC16 uint16
