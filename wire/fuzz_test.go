package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"ibfab/wire"
)

// The seed corpora under testdata/fuzz hold the goldens (as Ethernet frames
// for FuzzDecodeFrame) and a few damaged variants; f.Add seeds the same
// goldens so the targets stand even without the files.

// FuzzDecodeFrame feeds arbitrary Ethernet frames through gopacket.NewPacket
// (with panic recovery off), a DecodingLayerParser and every layer's
// DecodeFromBytes: none may panic, and a packet Verify accepts must decode.
func FuzzDecodeFrame(f *testing.F) {
	for _, g := range goldens {
		f.Add(frame(g))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.DecodeOptions{SkipDecodeRecovery: true})
		p, l := newParser(layers.LayerTypeEthernet)
		var decoded []gopacket.LayerType
		_ = p.DecodeLayers(data, &decoded)
		decodeEachLayer(data)
		if len(data) <= wire.EthernetSize {
			return
		}
		pkt := data[wire.EthernetSize:]
		decodeEachLayer(pkt)
		if l.eth.EthernetType == wire.EtherTypeData && wire.Verify(pkt) == nil {
			var lrh wire.LRHLayer
			if err := lrh.DecodeFromBytes(pkt, gopacket.NilDecodeFeedback); err != nil {
				t.Errorf("Verify(%x) = nil but LRH DecodeFromBytes = %v", pkt, err)
			}
		}
	})
}

// FuzzVerify checks Verify on arbitrary packets: it must not panic, and a
// packet it accepts must come out of Seal unchanged (Seal recomputes
// exactly what Verify checked) but for the LRH's reserved bits beside
// PktLen, which Verify ignores and Seal sends as zero, as IBA says (the
// fuzz budget run's input 9af13ba6bbe634c5 carried them set).
func FuzzVerify(f *testing.F) {
	for _, g := range goldens {
		if !g.link {
			f.Add(g.pkt)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := wire.Verify(data); err != nil {
			return
		}
		n, err := wire.PacketLen(data)
		if err != nil {
			t.Fatalf("Verify(%x) = nil but PacketLen = %v", data, err)
		}
		pkt := bytes.Clone(data[:n])
		if err := wire.Seal(pkt); err != nil {
			t.Fatalf("Verify(%x) = nil but Seal = %v", data, err)
		}
		want := bytes.Clone(data[:n])
		lrh := wire.LRH(want)
		lrh.SetPktLen(lrh.PktLen()) // clears the reserved bits, as Seal does
		if !bytes.Equal(pkt[:len(pkt)-wire.VCRCSize], want[:len(want)-wire.VCRCSize]) {
			t.Fatalf("Seal(%x) = %x, want it unchanged", data[:n], pkt)
		}
		if bytes.Equal(want, data[:n]) && !bytes.Equal(pkt, data[:n]) {
			t.Fatalf("Seal(%x) = %x changed the VCRC of a packet with no reserved bit set", data[:n], pkt)
		}
	})
}

// FuzzFlowControl checks the link packet decoders on arbitrary bytes: no
// panic, and sealing any six bytes yields a packet VerifyFlowControl
// accepts unless its Op is undefined.
func FuzzFlowControl(f *testing.F) {
	f.Add(goldenFCNormal)
	f.Add(goldenFCInit)
	f.Fuzz(func(t *testing.T, data []byte) {
		var l wire.FlowControlLayer
		decodeErr := l.DecodeFromBytes(data, gopacket.NilDecodeFeedback)
		verifyErr := wire.VerifyFlowControl(data)
		if decodeErr != nil {
			if verifyErr == nil {
				t.Fatalf("VerifyFlowControl(%x) = nil but DecodeFromBytes = %v", data, decodeErr)
			}
			return
		}
		if verifyErr == nil && l.LPCRC != wire.FlowControl(data).ComputeLPCRC() {
			t.Fatalf("VerifyFlowControl(%x) = nil with a wrong LPCRC", data)
		}
		pkt := bytes.Clone(data[:wire.FlowControlSize])
		if err := wire.SealFlowControl(pkt); err != nil {
			t.Fatalf("SealFlowControl(%x) = %v", data, err)
		}
		err := wire.VerifyFlowControl(pkt)
		if op := l.Op; op <= wire.FlowControlInit {
			if err != nil {
				t.Fatalf("VerifyFlowControl(SealFlowControl(%x)) = %v, want nil", data, err)
			}
		} else if !errors.Is(err, wire.ErrLinkOp) {
			t.Fatalf("VerifyFlowControl(SealFlowControl(%x)) = %v, want ErrLinkOp", data, err)
		}
	})
}
