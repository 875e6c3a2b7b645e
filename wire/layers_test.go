package wire_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire"
	"ibfab/wire/mad"
)

var (
	macA = [6]byte{0x02, 0x1b, 0, 0, 0, 1}
	macB = [6]byte{0x02, 0x1b, 0, 0, 0, 2}
)

// frame wraps g in an Ethernet header, padded to the Ethernet minimum of 60
// bytes as a NIC may pad it.
func frame(g golden) []byte {
	et := uint16(wire.EtherTypeData)
	if g.link {
		et = wire.EtherTypeLink
	}
	f := append(wire.AppendEthernet(nil, macB, macA, et), g.pkt...)
	if len(f) < 60 {
		f = append(f, make([]byte, 60-len(f))...)
	}
	return f
}

// checkDecoded asserts that the layers decoded from g hold g's fields.
// Absent layers are nil.
func checkDecoded(t *testing.T, g golden, lrh *wire.LRHLayer, grh *wire.GRHLayer, bth *wire.BTHLayer,
	deth *wire.DETHLayer, fc *wire.FlowControlLayer) {
	t.Helper()
	if g.link {
		require.NotNil(t, fc, "flow control layer")
		want := g.fc
		want.LPCRC = binary.LittleEndian.Uint16(g.pkt[4:])
		assert.Equal(t, want, fc.FlowControlFields)
		assert.Equal(t, g.pkt, fc.Contents)
		return
	}
	require.NotNil(t, lrh, "LRH layer")
	assert.Equal(t, g.lrh, lrh.LRHFields)
	n := len(g.pkt)
	assert.Equal(t, binary.LittleEndian.Uint16(g.pkt[n-2:]), lrh.VCRC, "VCRC")
	if g.lrh.LNH.HasICRC() {
		assert.Equal(t, binary.LittleEndian.Uint32(g.pkt[n-6:]), lrh.ICRC, "ICRC")
	}
	if g.grh != nil {
		require.NotNil(t, grh, "GRH layer")
		assert.Equal(t, *g.grh, grh.GRHFields)
	}
	if g.bth != nil {
		require.NotNil(t, bth, "BTH layer")
		assert.Equal(t, *g.bth, bth.BTHFields)
	}
	last := lrh.Payload
	if g.deth != nil {
		require.NotNil(t, deth, "DETH layer")
		assert.Equal(t, *g.deth, deth.DETHFields)
		assert.Equal(t, g.bth.DestQP, deth.DestQP, "DETH DestQP taken from the BTH")
		last = deth.Payload
	} else if bth != nil {
		last = bth.Payload
	}
	assert.Equal(t, hex.EncodeToString(g.payload), hex.EncodeToString(last), "payload")
}

func TestNewPacket(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			p := gopacket.NewPacket(frame(g), layers.LayerTypeEthernet, gopacket.DecodeOptions{SkipDecodeRecovery: true})
			if !g.mad { // MAD decoding belongs to package mad
				require.Nil(t, p.ErrorLayer(), "decode error")
			}
			get := func(lt gopacket.LayerType) gopacket.Layer { return p.Layer(lt) }
			lrh, _ := get(wire.LayerTypeLRH).(*wire.LRHLayer)
			grh, _ := get(wire.LayerTypeGRH).(*wire.GRHLayer)
			bth, _ := get(wire.LayerTypeBTH).(*wire.BTHLayer)
			deth, _ := get(wire.LayerTypeDETH).(*wire.DETHLayer)
			fc, _ := get(wire.LayerTypeFlowControl).(*wire.FlowControlLayer)
			checkDecoded(t, g, lrh, grh, bth, deth, fc)

			var want []gopacket.LayerType
			switch {
			case g.link:
				want = []gopacket.LayerType{layers.LayerTypeEthernet, wire.LayerTypeFlowControl}
			case g.lrh.LNH == wire.LNHRaw:
				want = []gopacket.LayerType{layers.LayerTypeEthernet, wire.LayerTypeLRH, gopacket.LayerTypePayload}
			case g.grh != nil:
				want = []gopacket.LayerType{layers.LayerTypeEthernet, wire.LayerTypeLRH, wire.LayerTypeGRH,
					wire.LayerTypeBTH, wire.LayerTypeDETH, gopacket.LayerTypePayload}
			case g.mad:
				want = []gopacket.LayerType{layers.LayerTypeEthernet, wire.LayerTypeLRH, wire.LayerTypeBTH,
					wire.LayerTypeDETH, mad.LayerTypeMAD}
			case g.deth != nil:
				want = []gopacket.LayerType{layers.LayerTypeEthernet, wire.LayerTypeLRH, wire.LayerTypeBTH,
					wire.LayerTypeDETH, gopacket.LayerTypePayload}
			default:
				want = []gopacket.LayerType{layers.LayerTypeEthernet, wire.LayerTypeLRH, wire.LayerTypeBTH,
					gopacket.LayerTypePayload}
			}
			var got []gopacket.LayerType
			for _, l := range p.Layers() {
				got = append(got, l.LayerType())
			}
			require.GreaterOrEqual(t, len(got), len(want), "layers %v", got)
			assert.Equal(t, want, got[:len(want)])
			if !g.link {
				// Without Ethernet (as in an ERF capture) the LRH is the
				// link layer, its flow SLID to DLID.
				p := gopacket.NewPacket(g.pkt, wire.LayerTypeLRH, gopacket.DecodeOptions{SkipDecodeRecovery: true})
				require.NotNil(t, p.LinkLayer())
				flow := p.LinkLayer().LinkFlow()
				assert.Equal(t, fmt.Sprintf("LID %#06x", g.lrh.SLID), flow.Src().String())
				assert.Equal(t, fmt.Sprintf("LID %#06x", g.lrh.DLID), flow.Dst().String())
			}
		})
	}
}

// newParser returns a DecodingLayerParser over every wire layer, starting
// at first, with the DETH wired to the BTH for its DestQP. It ignores the
// MAD layer type, which this package does not decode.
func newParser(first gopacket.LayerType) (*gopacket.DecodingLayerParser, *parsed) {
	l := &parsed{}
	l.deth.BTH = &l.bth
	p := gopacket.NewDecodingLayerParser(first, &l.eth, &l.lrh, &l.grh, &l.bth, &l.deth, &l.payload, &l.fc)
	p.IgnoreUnsupported = true
	return p, l
}

type parsed struct {
	eth     layers.Ethernet
	lrh     wire.LRHLayer
	grh     wire.GRHLayer
	bth     wire.BTHLayer
	deth    wire.DETHLayer
	payload gopacket.Payload
	fc      wire.FlowControlLayer
}

func TestDecodingLayerParser(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			p, l := newParser(layers.LayerTypeEthernet)
			var decoded []gopacket.LayerType
			require.NoError(t, p.DecodeLayers(frame(g), &decoded))
			has := func(lt gopacket.LayerType) bool {
				for _, d := range decoded {
					if d == lt {
						return true
					}
				}
				return false
			}
			pick := func(lt gopacket.LayerType, v any) any {
				if has(lt) {
					return v
				}
				return nil
			}
			lrh, _ := pick(wire.LayerTypeLRH, &l.lrh).(*wire.LRHLayer)
			grh, _ := pick(wire.LayerTypeGRH, &l.grh).(*wire.GRHLayer)
			bth, _ := pick(wire.LayerTypeBTH, &l.bth).(*wire.BTHLayer)
			deth, _ := pick(wire.LayerTypeDETH, &l.deth).(*wire.DETHLayer)
			fc, _ := pick(wire.LayerTypeFlowControl, &l.fc).(*wire.FlowControlLayer)
			checkDecoded(t, g, lrh, grh, bth, deth, fc)
			if g.mad {
				assert.Equal(t, mad.LayerTypeMAD, l.deth.NextLayerType())
			}
		})
	}
}

// serializable returns the layers decoded from pkt (an IBA packet, from
// the LRH or link packet on), ready to serialize again.
func serializable(t *testing.T, g golden) []gopacket.SerializableLayer {
	t.Helper()
	first := wire.LayerTypeLRH
	if g.link {
		first = wire.LayerTypeFlowControl
	}
	p, l := newParser(first)
	var decoded []gopacket.LayerType
	require.NoError(t, p.DecodeLayers(g.pkt, &decoded))
	var out []gopacket.SerializableLayer
	for _, lt := range decoded {
		switch lt {
		case wire.LayerTypeLRH:
			out = append(out, &l.lrh)
		case wire.LayerTypeGRH:
			out = append(out, &l.grh)
		case wire.LayerTypeBTH:
			out = append(out, &l.bth)
		case wire.LayerTypeDETH:
			out = append(out, &l.deth)
		case gopacket.LayerTypePayload:
			out = append(out, &l.payload)
		case wire.LayerTypeFlowControl:
			out = append(out, &l.fc)
		}
	}
	if g.mad { // the MAD the parser left undecoded
		out = append(out, gopacket.Payload(l.deth.Payload))
	}
	return out
}

var allOptions = []gopacket.SerializeOptions{
	{},
	{FixLengths: true},
	{ComputeChecksums: true},
	{FixLengths: true, ComputeChecksums: true},
}

// TestSerializeRoundTrip decodes each golden and serializes its layers
// again under every option combination: the bytes must not change.
func TestSerializeRoundTrip(t *testing.T) {
	for _, g := range goldens {
		for _, opts := range allOptions {
			t.Run(g.name, func(t *testing.T) {
				ls := serializable(t, g)
				buf := gopacket.NewSerializeBuffer()
				require.NoError(t, gopacket.SerializeLayers(buf, opts, ls...))
				if got := buf.Bytes(); !bytes.Equal(got, g.pkt) {
					t.Errorf("SerializeLayers(%+v) =\n%s\nwant\n%s", opts, hex.Dump(got), hex.Dump(g.pkt))
				}
			})
		}
	}
}

// TestSerializeFromFields builds each golden from its fields alone, lengths,
// pad counts and CRCs left zero: FixLengths and ComputeChecksums must fill
// them in to give the golden bytes.
func TestSerializeFromFields(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			var ls []gopacket.SerializableLayer
			if g.link {
				f := g.fc
				ls = append(ls, &wire.FlowControlLayer{FlowControlFields: f})
			} else {
				lrh := g.lrh
				lrh.PktLen = 0
				ls = append(ls, &wire.LRHLayer{LRHFields: lrh})
				if g.grh != nil {
					grh := *g.grh
					grh.PayLen = 0
					ls = append(ls, &wire.GRHLayer{GRHFields: grh})
				}
				if g.bth != nil {
					bth := *g.bth
					bth.PadCnt = 0
					ls = append(ls, &wire.BTHLayer{BTHFields: bth})
				}
				if g.deth != nil {
					ls = append(ls, &wire.DETHLayer{DETHFields: *g.deth})
				}
				ls = append(ls, gopacket.Payload(g.payload))
			}
			buf := gopacket.NewSerializeBuffer()
			opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
			require.NoError(t, gopacket.SerializeLayers(buf, opts, ls...))
			if got := buf.Bytes(); !bytes.Equal(got, g.pkt) {
				t.Errorf("SerializeLayers(%+v) =\n%s\nwant\n%s", opts, hex.Dump(got), hex.Dump(g.pkt))
			}
		})
	}
}

// TestSerializeUnaligned: a raw packet's payload has no pad count to align
// it, so FixLengths must refuse an unaligned one rather than lie in PktLen.
func TestSerializeUnaligned(t *testing.T) {
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true},
		&wire.LRHLayer{LRHFields: wire.LRHFields{LNH: wire.LNHRaw}}, gopacket.Payload{1, 2, 3})
	assert.ErrorIs(t, err, wire.ErrPktLen)
}

// TestDecodePrefixes decodes every prefix of every golden frame, through
// both decode paths and through each layer directly: none may panic, and
// every prefix that cuts the IBA packet short must fail in the first IBA
// layer.
func TestDecodePrefixes(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			f := frame(g)
			for n := range len(f) {
				b := f[:n]
				gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.DecodeOptions{SkipDecodeRecovery: true})
				p, _ := newParser(layers.LayerTypeEthernet)
				var decoded []gopacket.LayerType
				err := p.DecodeLayers(b, &decoded)
				// An empty Ethernet payload ends the parse without error.
				if n > wire.EthernetSize && n < wire.EthernetSize+len(g.pkt) && err == nil {
					t.Errorf("DecodeLayers(%d of %d bytes) = nil, want an error", n, len(f))
				}
				decodeEachLayer(b)
				if n > wire.EthernetSize {
					decodeEachLayer(b[wire.EthernetSize:])
				}
			}
		})
	}
}

// decodeEachLayer feeds b to every layer's DecodeFromBytes, so that no
// gopacket recovery can hide a panic.
func decodeEachLayer(b []byte) {
	df := gopacket.NilDecodeFeedback
	bth := &wire.BTHLayer{}
	for _, l := range []gopacket.DecodingLayer{&wire.LRHLayer{}, &wire.GRHLayer{}, bth,
		&wire.DETHLayer{BTH: bth}, &wire.FlowControlLayer{}} {
		_ = l.DecodeFromBytes(b, df)
		_ = l.NextLayerType()
	}
}

// TestDecodeVerifyAllocs: receiving a MAD frame (decode through the parser,
// then Verify) must not allocate.
func TestDecodeVerifyAllocs(t *testing.T) {
	f := frame(goldens[0])
	p, l := newParser(layers.LayerTypeEthernet)
	decoded := make([]gopacket.LayerType, 0, 8)
	allocs := testing.AllocsPerRun(1000, func() {
		if err := p.DecodeLayers(f, &decoded); err != nil {
			t.Fatal(err)
		}
		if err := wire.Verify(l.eth.Payload); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "allocations per decode+verify")
	flow := frame(goldens[len(goldens)-1])
	allocs = testing.AllocsPerRun(1000, func() {
		if err := p.DecodeLayers(flow, &decoded); err != nil {
			t.Fatal(err)
		}
		if err := wire.VerifyFlowControl(l.fc.Contents); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "allocations per link packet decode+verify")
}
