package mad_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestNodeInfoRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		f    mad.NodeInfoFields
	}{
		{"zero", mad.NodeInfoFields{}},
		{"switch", mad.NodeInfoFields{BaseVersion: 1, ClassVersion: 1, NodeType: mad.NodeTypeSwitch, NumPorts: 36,
			SystemImageGUID: 0x0002c90300001000, NodeGUID: 0x0002c90300001000, PortGUID: 0x0002c90300001000,
			PartitionCap: 8, DeviceID: 0xc738, Revision: 0xa0, LocalPortNum: 0, VendorID: 0x0002c9}},
		{"all ones", mad.NodeInfoFields{BaseVersion: 0xff, ClassVersion: 0xff, NodeType: 0xff, NumPorts: 0xff,
			SystemImageGUID: ^uint64(0), NodeGUID: ^uint64(0), PortGUID: ^uint64(0), PartitionCap: 0xffff,
			DeviceID: 0xffff, Revision: 0xffffffff, LocalPortNum: 0xff, VendorID: 0xffffff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mad.AppendNodeInfo(nil, &tt.f)
			require.Len(t, b, mad.NodeInfoSize)
			got, err := mad.DecodeNodeInfo(b)
			require.NoError(t, err)
			if got != tt.f {
				t.Errorf("DecodeNodeInfo(%x) = %+v, want %+v", b, got, tt.f)
			}
		})
	}
}

// TestNodeInfoLayout checks the offsets of IBA 14.2.5.3.
func TestNodeInfoLayout(t *testing.T) {
	tests := []struct {
		name string
		set  func(mad.NodeInfo)
		off  int
		want []byte
	}{
		{"BaseVersion", func(n mad.NodeInfo) { n.SetBaseVersion(1) }, 0, []byte{1}},
		{"ClassVersion", func(n mad.NodeInfo) { n.SetClassVersion(2) }, 1, []byte{2}},
		{"NodeType", func(n mad.NodeInfo) { n.SetNodeType(mad.NodeTypeRouter) }, 2, []byte{3}},
		{"NumPorts", func(n mad.NodeInfo) { n.SetNumPorts(36) }, 3, []byte{36}},
		{"SystemImageGUID", func(n mad.NodeInfo) { n.SetSystemImageGUID(0x0102030405060708) }, 4, smpPattern(1, 8)},
		{"NodeGUID", func(n mad.NodeInfo) { n.SetNodeGUID(0x1112131415161718) }, 12, smpPattern(0x11, 8)},
		{"PortGUID", func(n mad.NodeInfo) { n.SetPortGUID(0x2122232425262728) }, 20, smpPattern(0x21, 8)},
		{"PartitionCap", func(n mad.NodeInfo) { n.SetPartitionCap(0x0102) }, 28, []byte{1, 2}},
		{"DeviceID", func(n mad.NodeInfo) { n.SetDeviceID(0x0304) }, 30, []byte{3, 4}},
		{"Revision", func(n mad.NodeInfo) { n.SetRevision(0x05060708) }, 32, []byte{5, 6, 7, 8}},
		{"LocalPortNum", func(n mad.NodeInfo) { n.SetLocalPortNum(9) }, 36, []byte{9}},
		{"VendorID", func(n mad.NodeInfo) { n.SetVendorID(0xff0a0b0c) }, 37, []byte{0x0a, 0x0b, 0x0c}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make(mad.NodeInfo, mad.SMPDataSize)
			tt.set(b)
			want := make([]byte, mad.SMPDataSize)
			copy(want[tt.off:], tt.want)
			if !bytes.Equal(b, want) {
				t.Errorf("after Set%s: %x, want %x at %d and zeros elsewhere", tt.name, []byte(b), tt.want, tt.off)
			}
		})
	}
}

func TestDecodeNodeInfoShort(t *testing.T) {
	_, err := mad.DecodeNodeInfo(make([]byte, mad.NodeInfoSize-1))
	assert.ErrorIs(t, err, mad.ErrTruncated)
}
