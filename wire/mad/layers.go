package mad

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// MADLayer is the common MAD header as a gopacket layer. Its payload is the
// 232 bytes behind the header, decoded by the class's layer (SMPLayer,
// DRSMPLayer, PMALayer) or left as gopacket payload for other classes.
//
// In a directed-route SMP the header's Status and ClassSpecific fields hold
// the D bit, the 15-bit status, the hop pointer and the hop count; the DR
// methods below read them from there.
type MADLayer struct {
	layers.BaseLayer
	MADFields
}

// LayerType returns LayerTypeMAD.
func (m *MADLayer) LayerType() gopacket.LayerType { return LayerTypeMAD }

// CanDecode returns LayerTypeMAD.
func (m *MADLayer) CanDecode() gopacket.LayerClass { return LayerTypeMAD }

// NextLayerType returns the layer of the management class's data.
func (m *MADLayer) NextLayerType() gopacket.LayerType {
	switch m.MgmtClass {
	case ClassSubnLID:
		return LayerTypeSMP
	case ClassSubnDirected:
		return LayerTypeDRSMP
	case ClassPerfMgt:
		return LayerTypePMA
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes decodes a whole MAD's header; data must hold MADSize
// bytes, and bytes past them are ignored.
func (m *MADLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if !MAD(data).IsValid() {
		df.SetTruncated()
		return truncated("MAD", len(data), MADSize)
	}
	m.MADFields = MAD(data).Fields()
	m.Contents = data[:MADHeaderSize]
	m.Payload = data[MADHeaderSize:MADSize]
	return nil
}

// SerializeTo prepends the header. With opts.FixLengths a payload shorter
// than MADDataSize is zero-padded, since every MAD is MADSize bytes.
func (m *MADLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if n := len(b.Bytes()); opts.FixLengths && n < MADDataSize {
		pad, err := b.AppendBytes(MADDataSize - n)
		if err != nil {
			return err
		}
		clear(pad)
	}
	h, err := b.PrependBytes(MADHeaderSize)
	if err != nil {
		return err
	}
	MAD(h).Encode(&m.MADFields)
	return nil
}

// Direction returns the D bit of a directed-route SMP's header.
func (m *MADLayer) Direction() bool { return m.Status&drDirectionMask != 0 }

// DRStatus returns the 15-bit status of a directed-route SMP's header.
func (m *MADLayer) DRStatus() Status { return m.Status & drStatusMask }

// HopPointer returns the hop pointer of a directed-route SMP's header.
func (m *MADLayer) HopPointer() uint8 { return uint8(m.ClassSpecific >> 8) }

// HopCount returns the hop count of a directed-route SMP's header.
func (m *MADLayer) HopCount() uint8 { return uint8(m.ClassSpecific) }

// SetDR sets the directed-route fields of the header: the D bit, the 15-bit
// status, the hop pointer and the hop count.
func (m *MADLayer) SetDR(d bool, s Status, hopPointer, hopCount uint8) {
	m.Status = s & drStatusMask
	if d {
		m.Status |= drDirectionMask
	}
	m.ClassSpecific = uint16(hopPointer)<<8 | uint16(hopCount)
}

// Offsets of the class layers are those of the views, less the header.
const smpBodySize = MADSize - MADHeaderSize

func body(off int) int { return off - MADHeaderSize }

// SMPLayer is the body of a LID-routed SMP (the MAD payload): M_Key and
// the attribute data. Data references the decoded bytes.
type SMPLayer struct {
	layers.BaseLayer
	MKey uint64
	Data []byte // SMPDataSize bytes; shorter is zero-padded on serializing
}

// LayerType returns LayerTypeSMP.
func (s *SMPLayer) LayerType() gopacket.LayerType { return LayerTypeSMP }

// CanDecode returns LayerTypeSMP.
func (s *SMPLayer) CanDecode() gopacket.LayerClass { return LayerTypeSMP }

// NextLayerType returns LayerTypeZero: the attribute is read from Data.
func (s *SMPLayer) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

// DecodeFromBytes decodes the 232 bytes behind a MAD header.
func (s *SMPLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < smpBodySize {
		df.SetTruncated()
		return truncated("SMP body", len(data), smpBodySize)
	}
	s.MKey = binary.BigEndian.Uint64(data[body(smpMKey):])
	s.Data = data[body(smpData) : body(smpData)+SMPDataSize]
	s.Contents = data[:smpBodySize]
	s.Payload = nil
	return nil
}

// SerializeTo prepends the SMP body.
func (s *SMPLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	buf, err := b.PrependBytes(smpBodySize)
	if err != nil {
		return err
	}
	clear(buf)
	binary.BigEndian.PutUint64(buf[body(smpMKey):], s.MKey)
	copy(buf[body(smpData):body(smpData)+SMPDataSize], s.Data)
	return nil
}

// DRSMPLayer is the body of a directed-route SMP (the MAD payload). The D
// bit, status, hop pointer and hop count are in the MADLayer before it.
// The slices reference the decoded bytes.
type DRSMPLayer struct {
	layers.BaseLayer
	MKey        uint64
	DrSLID      uint16
	DrDLID      uint16
	Data        []byte // SMPDataSize bytes
	InitialPath []byte // DRPathSize bytes; byte i is the port of hop i
	ReturnPath  []byte // DRPathSize bytes
}

// LayerType returns LayerTypeDRSMP.
func (s *DRSMPLayer) LayerType() gopacket.LayerType { return LayerTypeDRSMP }

// CanDecode returns LayerTypeDRSMP.
func (s *DRSMPLayer) CanDecode() gopacket.LayerClass { return LayerTypeDRSMP }

// NextLayerType returns LayerTypeZero: the attribute is read from Data.
func (s *DRSMPLayer) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

// DecodeFromBytes decodes the 232 bytes behind a MAD header.
func (s *DRSMPLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < smpBodySize {
		df.SetTruncated()
		return truncated("directed-route SMP body", len(data), smpBodySize)
	}
	s.MKey = binary.BigEndian.Uint64(data[body(drMKey):])
	s.DrSLID = binary.BigEndian.Uint16(data[body(drSLID):])
	s.DrDLID = binary.BigEndian.Uint16(data[body(drDLID):])
	s.Data = data[body(drData) : body(drData)+SMPDataSize]
	s.InitialPath = data[body(drInitial) : body(drInitial)+DRPathSize]
	s.ReturnPath = data[body(drReturn) : body(drReturn)+DRPathSize]
	s.Contents = data[:smpBodySize]
	s.Payload = nil
	return nil
}

// SerializeTo prepends the directed-route SMP body.
func (s *DRSMPLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	buf, err := b.PrependBytes(smpBodySize)
	if err != nil {
		return err
	}
	clear(buf)
	binary.BigEndian.PutUint64(buf[body(drMKey):], s.MKey)
	binary.BigEndian.PutUint16(buf[body(drSLID):], s.DrSLID)
	binary.BigEndian.PutUint16(buf[body(drDLID):], s.DrDLID)
	copy(buf[body(drData):body(drData)+SMPDataSize], s.Data)
	copy(buf[body(drInitial):body(drInitial)+DRPathSize], s.InitialPath)
	copy(buf[body(drReturn):body(drReturn)+DRPathSize], s.ReturnPath)
	return nil
}

// PMALayer is the body of a performance management MAD (the MAD payload):
// 40 reserved bytes and the attribute data, which Data references.
type PMALayer struct {
	layers.BaseLayer
	Data []byte // PMADataSize bytes
}

// LayerType returns LayerTypePMA.
func (p *PMALayer) LayerType() gopacket.LayerType { return LayerTypePMA }

// CanDecode returns LayerTypePMA.
func (p *PMALayer) CanDecode() gopacket.LayerClass { return LayerTypePMA }

// NextLayerType returns LayerTypeZero: the attribute is read from Data.
func (p *PMALayer) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

// DecodeFromBytes decodes the 232 bytes behind a MAD header.
func (p *PMALayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < smpBodySize {
		df.SetTruncated()
		return truncated("PMA body", len(data), smpBodySize)
	}
	p.Data = data[body(pmaData) : body(pmaData)+PMADataSize]
	p.Contents = data[:smpBodySize]
	p.Payload = nil
	return nil
}

// SerializeTo prepends the PMA body.
func (p *PMALayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	buf, err := b.PrependBytes(smpBodySize)
	if err != nil {
		return err
	}
	clear(buf)
	copy(buf[body(pmaData):], p.Data)
	return nil
}

// decodingLayer is what the decode functions need of a layer.
type decodingLayer interface {
	gopacket.Layer
	gopacket.DecodingLayer
}

// decodeWith decodes data into l, adds it to p and hands its payload on.
func decodeWith(l decodingLayer, data []byte, p gopacket.PacketBuilder) error {
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	next := l.NextLayerType()
	if next == gopacket.LayerTypeZero {
		return nil
	}
	return p.NextDecoder(next)
}

func decodeMAD(data []byte, p gopacket.PacketBuilder) error {
	return decodeWith(&MADLayer{}, data, p)
}

func decodeSMP(data []byte, p gopacket.PacketBuilder) error {
	return decodeWith(&SMPLayer{}, data, p)
}

func decodeDRSMP(data []byte, p gopacket.PacketBuilder) error {
	return decodeWith(&DRSMPLayer{}, data, p)
}

func decodePMA(data []byte, p gopacket.PacketBuilder) error {
	return decodeWith(&PMALayer{}, data, p)
}

var (
	_ gopacket.SerializableLayer = (*MADLayer)(nil)
	_ gopacket.DecodingLayer     = (*MADLayer)(nil)
	_ gopacket.SerializableLayer = (*SMPLayer)(nil)
	_ gopacket.DecodingLayer     = (*SMPLayer)(nil)
	_ gopacket.SerializableLayer = (*DRSMPLayer)(nil)
	_ gopacket.DecodingLayer     = (*DRSMPLayer)(nil)
	_ gopacket.SerializableLayer = (*PMALayer)(nil)
	_ gopacket.DecodingLayer     = (*PMALayer)(nil)
)
