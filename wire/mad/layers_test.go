package mad_test

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

// layersGoldens are MADs built with the views, one per class layer.
func layersGoldens(t *testing.T) []struct {
	name   string
	data   []byte
	layers []gopacket.LayerType
} {
	t.Helper()
	smp := mad.SMPFields{Method: mad.MethodGetResp, TransactionID: 0x1122, AttrID: mad.AttrNodeInfo,
		MKey: 0x0102030405060708}
	copy(smp.Data[:], smpPattern(1, 64))
	dr, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 0x33,
		AttrID: mad.AttrPortInfo, AttrModifier: 2, MKey: 9, Path: []uint8{0, 1, 5}, DrSLID: 4})
	require.NoError(t, err)
	mad.DRSMP(dr).SetDirection(true)
	mad.DRSMP(dr).SetHopPointer(2)
	mad.DRSMP(dr).SetStatus(mad.StatusInvalidField)
	copy(mad.DRSMP(dr).ReturnPath(), []byte{0, 3, 4})
	pma := mad.PMAFields{Method: mad.MethodGet, TransactionID: 0x44, AttrID: mad.AttrPortCounters}
	pma.Data[1] = 0xff
	sa := mad.AppendMAD(nil, &mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: 2,
		Method: mad.MethodGetTable}, smpPattern(7, mad.MADDataSize))
	return []struct {
		name   string
		data   []byte
		layers []gopacket.LayerType
	}{
		{"LID-routed SMP", mad.AppendSMP(nil, &smp), []gopacket.LayerType{mad.LayerTypeMAD, mad.LayerTypeSMP}},
		{"directed-route SMP", dr, []gopacket.LayerType{mad.LayerTypeMAD, mad.LayerTypeDRSMP}},
		{"PMA", mad.AppendPMA(nil, &pma), []gopacket.LayerType{mad.LayerTypeMAD, mad.LayerTypePMA}},
		{"SA as payload", sa, []gopacket.LayerType{mad.LayerTypeMAD, gopacket.LayerTypePayload}},
	}
}

func layerTypes(p gopacket.Packet) []gopacket.LayerType {
	var out []gopacket.LayerType
	for _, l := range p.Layers() {
		out = append(out, l.LayerType())
	}
	return out
}

func TestLayersDecode(t *testing.T) {
	for _, tt := range layersGoldens(t) {
		t.Run(tt.name, func(t *testing.T) {
			p := gopacket.NewPacket(tt.data, mad.LayerTypeMAD, gopacket.DecodeOptions{SkipDecodeRecovery: true})
			require.Nil(t, p.ErrorLayer(), "decode error")
			assert.Equal(t, tt.layers, layerTypes(p))
			m := p.Layer(mad.LayerTypeMAD).(*mad.MADLayer)
			assert.Equal(t, mad.MAD(tt.data).Fields(), m.MADFields)
			switch l := p.Layers()[1].(type) {
			case *mad.SMPLayer:
				f := mad.SMP(tt.data).Fields()
				assert.Equal(t, f.MKey, l.MKey)
				assert.Equal(t, f.Data[:], l.Data)
			case *mad.DRSMPLayer:
				f := mad.DRSMP(tt.data).Fields()
				assert.Equal(t, f.Direction, m.Direction())
				assert.Equal(t, f.Status, m.DRStatus())
				assert.Equal(t, f.HopPointer, m.HopPointer())
				assert.Equal(t, f.HopCount, m.HopCount())
				assert.Equal(t, f.MKey, l.MKey)
				assert.Equal(t, f.DrSLID, l.DrSLID)
				assert.Equal(t, f.DrDLID, l.DrDLID)
				assert.Equal(t, f.Data[:], l.Data)
				assert.Equal(t, f.InitialPath[:], l.InitialPath)
				assert.Equal(t, f.ReturnPath[:], l.ReturnPath)
			case *mad.PMALayer:
				assert.Equal(t, mad.PMA(tt.data).Data(), l.Data)
			case *gopacket.Payload:
				assert.Equal(t, tt.data[24:], []byte(*l))
			default:
				t.Fatalf("second layer %T", l)
			}
		})
	}
}

// TestLayersSerialize re-serializes every decoded layer under the four
// FixLengths/ComputeChecksums combinations and wants the input back.
func TestLayersSerialize(t *testing.T) {
	for _, tt := range layersGoldens(t) {
		for _, opts := range []gopacket.SerializeOptions{{}, {FixLengths: true}, {ComputeChecksums: true},
			{FixLengths: true, ComputeChecksums: true}} {
			t.Run(tt.name, func(t *testing.T) {
				p := gopacket.NewPacket(tt.data, mad.LayerTypeMAD, gopacket.DecodeOptions{SkipDecodeRecovery: true})
				var ls []gopacket.SerializableLayer
				for _, l := range p.Layers() {
					ls = append(ls, l.(gopacket.SerializableLayer))
				}
				buf := gopacket.NewSerializeBuffer()
				require.NoError(t, gopacket.SerializeLayers(buf, opts, ls...))
				if !bytes.Equal(buf.Bytes(), tt.data) {
					t.Errorf("SerializeLayers(%+v) =\n%s\nwant\n%s", opts, hex.Dump(buf.Bytes()), hex.Dump(tt.data))
				}
			})
		}
	}
}

// TestMADLayerFixLengths: a header with a short payload is padded to a
// whole MAD only when asked to fix lengths.
func TestMADLayerFixLengths(t *testing.T) {
	m := &mad.MADLayer{MADFields: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassCM}}
	payload := gopacket.Payload([]byte{1, 2, 3})
	tests := []struct {
		name string
		opts gopacket.SerializeOptions
		want int
	}{
		{"as is", gopacket.SerializeOptions{}, mad.MADHeaderSize + 3},
		{"fixed", gopacket.SerializeOptions{FixLengths: true}, mad.MADSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := gopacket.NewSerializeBufferExpectedSize(0, 512)
			// Dirty the buffer's spare room: padding must still be zeros.
			dirty, _ := buf.AppendBytes(400)
			for i := range dirty {
				dirty[i] = 0xcc
			}
			require.NoError(t, buf.Clear())
			require.NoError(t, gopacket.SerializeLayers(buf, tt.opts, m, payload))
			b := buf.Bytes()
			require.Len(t, b, tt.want)
			assert.Equal(t, []byte{1, 2, 3}, b[24:27])
			assert.Equal(t, make([]byte, tt.want-27), b[27:])
		})
	}
}

type feedback struct{ truncated bool }

func (f *feedback) SetTruncated() { f.truncated = true }

func TestLayersTruncated(t *testing.T) {
	tests := []struct {
		name  string
		layer gopacket.DecodingLayer
		n     int // bytes given; one short of what the layer needs
	}{
		{"MAD", &mad.MADLayer{}, mad.MADSize - 1},
		{"MAD header only", &mad.MADLayer{}, mad.MADHeaderSize},
		{"SMP", &mad.SMPLayer{}, mad.MADDataSize - 1},
		{"DRSMP", &mad.DRSMPLayer{}, mad.MADDataSize - 1},
		{"PMA", &mad.PMALayer{}, mad.MADDataSize - 1},
		{"PMA empty", &mad.PMALayer{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var df feedback
			err := tt.layer.DecodeFromBytes(make([]byte, tt.n), &df)
			assert.ErrorIs(t, err, mad.ErrTruncated)
			assert.True(t, df.truncated, "SetTruncated called")
		})
	}
	p := gopacket.NewPacket(make([]byte, 100), mad.LayerTypeMAD, gopacket.DecodeOptions{SkipDecodeRecovery: true})
	assert.NotNil(t, p.ErrorLayer())
	assert.True(t, p.Metadata().Truncated)
}

func TestDecodingLayerParser(t *testing.T) {
	var (
		m   mad.MADLayer
		s   mad.SMPLayer
		d   mad.DRSMPLayer
		pm  mad.PMALayer
		pay gopacket.Payload
	)
	parser := gopacket.NewDecodingLayerParser(mad.LayerTypeMAD, &m, &s, &d, &pm, &pay)
	for _, tt := range layersGoldens(t) {
		t.Run(tt.name, func(t *testing.T) {
			var got []gopacket.LayerType
			require.NoError(t, parser.DecodeLayers(tt.data, &got))
			assert.Equal(t, tt.layers, got)
		})
	}
}

func TestMADLayerSetDR(t *testing.T) {
	var m mad.MADLayer
	m.SetDR(true, 0xffff, 4, 5)
	assert.True(t, m.Direction())
	assert.Equal(t, mad.Status(0x7fff), m.DRStatus())
	assert.Equal(t, uint8(4), m.HopPointer())
	assert.Equal(t, uint8(5), m.HopCount())
	m.SetDR(false, mad.StatusBusy, 0, 0)
	assert.Equal(t, mad.Status(1), m.Status)
	assert.Equal(t, uint16(0), m.ClassSpecific)
}
