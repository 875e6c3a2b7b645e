package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"ibfab/wire/mad"
)

// Layer types of this package, in gopacket's application range (1000-1999).
// gopacket's own layers package has started to use the bottom of that range
// (1010 is its GTPv2), so ibfab keeps to the top: wire holds 1900-1909,
// package mad 1910-1919.
var (
	// LayerTypeLRH is the Local Route Header with the packet's ICRC and VCRC.
	LayerTypeLRH = gopacket.RegisterLayerType(1900, gopacket.LayerTypeMetadata{Name: "IBLRH", Decoder: gopacket.DecodeFunc(decodeLRH)})
	// LayerTypeGRH is the Global Route Header.
	LayerTypeGRH = gopacket.RegisterLayerType(1901, gopacket.LayerTypeMetadata{Name: "IBGRH", Decoder: gopacket.DecodeFunc(decodeGRH)})
	// LayerTypeBTH is the Base Transport Header.
	LayerTypeBTH = gopacket.RegisterLayerType(1902, gopacket.LayerTypeMetadata{Name: "IBBTH", Decoder: gopacket.DecodeFunc(decodeBTH)})
	// LayerTypeDETH is the Datagram Extended Transport Header.
	LayerTypeDETH = gopacket.RegisterLayerType(1903, gopacket.LayerTypeMetadata{Name: "IBDETH", Decoder: dethDecoder{qp: noQP}})
	// LayerTypeFlowControl is the flow control link packet.
	LayerTypeFlowControl = gopacket.RegisterLayerType(1904, gopacket.LayerTypeMetadata{Name: "IBFlowControl", Decoder: gopacket.DecodeFunc(decodeFlowControl)})
)

// noQP stands for "DestQP unknown": a DETH decoded on its own is followed by
// a plain payload.
const noQP = ^uint32(0)

// LRHLayer is the gopacket layer of a data packet's LRH. It also carries the
// packet's trailing CRCs, since the LRH's PktLen is what locates them: its
// Payload runs from after the LRH to before the ICRC (before the VCRC for
// raw packets), and bytes past the packet's end (Ethernet padding) belong
// to no layer.
type LRHLayer struct {
	layers.BaseLayer
	LRHFields
	ICRC uint32 // as computed by ICRC; zero for packets without one
	VCRC uint16 // as computed by CRC16
}

// LayerType implements gopacket.Layer.
func (l *LRHLayer) LayerType() gopacket.LayerType { return LayerTypeLRH }

// CanDecode implements gopacket.DecodingLayer.
func (l *LRHLayer) CanDecode() gopacket.LayerClass { return LayerTypeLRH }

// NextLayerType implements gopacket.DecodingLayer: the GRH, BTH, IPv6 header
// or raw payload the LNH names.
func (l *LRHLayer) NextLayerType() gopacket.LayerType {
	switch l.LNH {
	case LNHLocal:
		return LayerTypeBTH
	case LNHGlobal:
		return LayerTypeGRH
	case LNHIPv6:
		return layers.LayerTypeIPv6
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes implements gopacket.DecodingLayer. It checks lengths but
// not CRCs; Verify checks those.
func (l *LRHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	n, err := PacketLen(data)
	if err != nil {
		if len(data) < LRHSize || int(LRH(data).PktLen())*4+VCRCSize > len(data) {
			df.SetTruncated()
		}
		return err
	}
	v := LRH(data)
	l.LRHFields = v.Fields()
	end := n - VCRCSize
	l.VCRC = binary.LittleEndian.Uint16(data[end:])
	l.ICRC = 0
	if l.LNH.HasICRC() {
		end -= ICRCSize
		l.ICRC = binary.LittleEndian.Uint32(data[end:])
	}
	l.Contents, l.Payload = data[:LRHSize], data[LRHSize:end]
	return nil
}

// SerializeTo implements gopacket.SerializableLayer. The LRH is outermost:
// it prepends itself and appends the ICRC (IBA packets) and VCRC.
// FixLengths sets PktLen; ComputeChecksums computes both CRCs, else the
// layer's ICRC and VCRC are written as they are.
func (l *LRHLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	payload := len(b.Bytes())
	h, err := b.PrependBytes(LRHSize)
	if err != nil {
		return err
	}
	if opts.FixLengths {
		n := LRHSize + payload
		if l.LNH.HasICRC() {
			n += ICRCSize
		}
		if n%4 != 0 || n/4 > MaxPktLen {
			return fmt.Errorf("%w: %d bytes before the VCRC is not a whole number of words up to %d", ErrPktLen, n, MaxPktLen)
		}
		l.PktLen = uint16(n / 4)
	}
	LRH(h).Encode(&l.LRHFields)
	if l.LNH.HasICRC() {
		if opts.ComputeChecksums {
			l.ICRC = ICRC(b.Bytes())
		}
		t, err := b.AppendBytes(ICRCSize)
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(t, l.ICRC)
	}
	if opts.ComputeChecksums {
		l.VCRC = CRC16(b.Bytes())
	}
	t, err := b.AppendBytes(VCRCSize)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint16(t, l.VCRC)
	return nil
}

func decodeLRH(data []byte, p gopacket.PacketBuilder) error {
	l := &LRHLayer{}
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	p.SetLinkLayer(l)
	return p.NextDecoder(l.NextLayerType())
}

// LinkFlow implements gopacket.LinkLayer: the flow from SLID to DLID.
func (l *LRHLayer) LinkFlow() gopacket.Flow {
	var s, d [2]byte
	binary.BigEndian.PutUint16(s[:], l.SLID)
	binary.BigEndian.PutUint16(d[:], l.DLID)
	return gopacket.NewFlow(EndpointLID, s[:], d[:])
}

// EndpointLID is the gopacket endpoint type of a LID (2 bytes, big-endian).
var EndpointLID = gopacket.RegisterEndpointType(1900, gopacket.EndpointTypeMetadata{Name: "LID",
	Formatter: func(b []byte) string { return fmt.Sprintf("LID %#06x", binary.BigEndian.Uint16(b)) }})

// GRHLayer is the gopacket layer of a Global Route Header.
type GRHLayer struct {
	layers.BaseLayer
	GRHFields
}

// LayerType implements gopacket.Layer.
func (l *GRHLayer) LayerType() gopacket.LayerType { return LayerTypeGRH }

// CanDecode implements gopacket.DecodingLayer.
func (l *GRHLayer) CanDecode() gopacket.LayerClass { return LayerTypeGRH }

// NextLayerType implements gopacket.DecodingLayer: a BTH when NxtHdr says
// so, else a plain payload.
func (l *GRHLayer) NextLayerType() gopacket.LayerType {
	if l.NxtHdr == NxtHdrBTH {
		return LayerTypeBTH
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes implements gopacket.DecodingLayer.
func (l *GRHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	v := GRH(data)
	if !v.IsValid() {
		df.SetTruncated()
		return fmt.Errorf("%w: GRH needs %d bytes, have %d", ErrShort, GRHSize, len(data))
	}
	l.GRHFields = v.Fields()
	l.Contents, l.Payload = data[:GRHSize], data[GRHSize:]
	return nil
}

// SerializeTo implements gopacket.SerializableLayer. FixLengths sets PayLen
// to the bytes that follow plus the ICRC the LRH will append.
func (l *GRHLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	payload := len(b.Bytes())
	h, err := b.PrependBytes(GRHSize)
	if err != nil {
		return err
	}
	if opts.FixLengths {
		l.PayLen = uint16(payload + ICRCSize)
	}
	GRH(h).Encode(&l.GRHFields)
	return nil
}

func decodeGRH(data []byte, p gopacket.PacketBuilder) error {
	l := &GRHLayer{}
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	return p.NextDecoder(l.NextLayerType())
}

// BTHLayer is the gopacket layer of a Base Transport Header. Its Payload
// excludes the PadCnt pad bytes at the end of the packet.
type BTHLayer struct {
	layers.BaseLayer
	BTHFields
}

// LayerType implements gopacket.Layer.
func (l *BTHLayer) LayerType() gopacket.LayerType { return LayerTypeBTH }

// CanDecode implements gopacket.DecodingLayer.
func (l *BTHLayer) CanDecode() gopacket.LayerClass { return LayerTypeBTH }

// NextLayerType implements gopacket.DecodingLayer: a DETH for UD opcodes,
// else a plain payload.
func (l *BTHLayer) NextLayerType() gopacket.LayerType {
	if l.OpCode.IsUD() {
		return LayerTypeDETH
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes implements gopacket.DecodingLayer.
func (l *BTHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	v := BTH(data)
	if !v.IsValid() {
		df.SetTruncated()
		return fmt.Errorf("%w: BTH needs %d bytes, have %d", ErrShort, BTHSize, len(data))
	}
	l.BTHFields = v.Fields()
	end := len(data) - int(l.PadCnt)
	if end < BTHSize {
		return fmt.Errorf("%w: %d pad bytes but %d bytes after the BTH", ErrPadCnt, l.PadCnt, len(data)-BTHSize)
	}
	l.Contents, l.Payload = data[:BTHSize], data[BTHSize:end]
	return nil
}

// SerializeTo implements gopacket.SerializableLayer. It appends PadCnt zero
// pad bytes after the payload; FixLengths first sets PadCnt to the count
// that aligns the payload to 4 bytes.
func (l *BTHLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if opts.FixLengths {
		l.PadCnt = uint8(padLen(len(b.Bytes())))
	}
	if l.PadCnt > 0 {
		pad, err := b.AppendBytes(int(l.PadCnt & bthPadMask))
		if err != nil {
			return err
		}
		clear(pad)
	}
	h, err := b.PrependBytes(BTHSize)
	if err != nil {
		return err
	}
	BTH(h).Encode(&l.BTHFields)
	return nil
}

func decodeBTH(data []byte, p gopacket.PacketBuilder) error {
	l := &BTHLayer{}
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	if l.NextLayerType() == LayerTypeDETH {
		return p.NextDecoder(dethDecoder{qp: l.DestQP})
	}
	return p.NextDecoder(l.NextLayerType())
}

// DETHLayer is the gopacket layer of a Datagram Extended Transport Header.
// What follows a DETH depends on the preceding BTH's DestQP (QP0 and QP1
// carry MADs): gopacket.NewPacket passes it along by itself; a
// DecodingLayerParser user points BTH at the parser's BTHLayer.
type DETHLayer struct {
	layers.BaseLayer
	DETHFields
	// DestQP is the DestQP of the BTH before this DETH. DecodeFromBytes
	// copies it from BTH when BTH is set.
	DestQP uint32
	// BTH, when set, is the layer the DestQP is taken from.
	BTH *BTHLayer
}

// LayerType implements gopacket.Layer.
func (l *DETHLayer) LayerType() gopacket.LayerType { return LayerTypeDETH }

// CanDecode implements gopacket.DecodingLayer.
func (l *DETHLayer) CanDecode() gopacket.LayerClass { return LayerTypeDETH }

// NextLayerType implements gopacket.DecodingLayer: a MAD on QP0 and QP1,
// else a plain payload.
func (l *DETHLayer) NextLayerType() gopacket.LayerType {
	if l.DestQP == QP0 || l.DestQP == QP1 {
		return mad.LayerTypeMAD
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes implements gopacket.DecodingLayer.
func (l *DETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	v := DETH(data)
	if !v.IsValid() {
		df.SetTruncated()
		return fmt.Errorf("%w: DETH needs %d bytes, have %d", ErrShort, DETHSize, len(data))
	}
	l.DETHFields = v.Fields()
	if l.BTH != nil {
		l.DestQP = l.BTH.DestQP
	}
	l.Contents, l.Payload = data[:DETHSize], data[DETHSize:]
	return nil
}

// SerializeTo implements gopacket.SerializableLayer.
func (l *DETHLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(DETHSize)
	if err != nil {
		return err
	}
	DETH(h).Encode(&l.DETHFields)
	return nil
}

// dethDecoder decodes a DETH knowing the DestQP of the BTH before it.
type dethDecoder struct{ qp uint32 }

// Decode implements gopacket.Decoder.
func (d dethDecoder) Decode(data []byte, p gopacket.PacketBuilder) error {
	l := &DETHLayer{DestQP: d.qp}
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	return p.NextDecoder(l.NextLayerType())
}

// FlowControlLayer is the gopacket layer of a flow control link packet.
// Bytes past its six (Ethernet padding) belong to no layer.
type FlowControlLayer struct {
	layers.BaseLayer
	FlowControlFields
}

// LayerType implements gopacket.Layer.
func (l *FlowControlLayer) LayerType() gopacket.LayerType { return LayerTypeFlowControl }

// CanDecode implements gopacket.DecodingLayer.
func (l *FlowControlLayer) CanDecode() gopacket.LayerClass { return LayerTypeFlowControl }

// NextLayerType implements gopacket.DecodingLayer: nothing follows a link
// packet.
func (l *FlowControlLayer) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

// DecodeFromBytes implements gopacket.DecodingLayer. It checks the length
// but not the LPCRC; VerifyFlowControl does.
func (l *FlowControlLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	v := FlowControl(data)
	if !v.IsValid() {
		df.SetTruncated()
		return fmt.Errorf("%w: link packet needs %d bytes, have %d", ErrShort, FlowControlSize, len(data))
	}
	l.FlowControlFields = v.Fields()
	l.Contents, l.Payload = data[:FlowControlSize], nil
	return nil
}

// SerializeTo implements gopacket.SerializableLayer. ComputeChecksums
// computes the LPCRC, else the layer's is written as it is.
func (l *FlowControlLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(FlowControlSize)
	if err != nil {
		return err
	}
	v := FlowControl(h)
	v.Encode(&l.FlowControlFields)
	if opts.ComputeChecksums {
		l.LPCRC = v.ComputeLPCRC()
		v.SetLPCRC(l.LPCRC)
	}
	return nil
}

func decodeFlowControl(data []byte, p gopacket.PacketBuilder) error {
	l := &FlowControlLayer{}
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	return nil
}
