package mad_test

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/gopacket/gopacket"

	"ibfab/wire/mad"
)

// fuzzSeeds are whole MADs of each class the layers decode, plus a Notice
// and short inputs; the files under testdata/fuzz/FuzzMAD hold the same
// kinds of input.
func fuzzSeeds() [][]byte {
	ni := mad.SMPFields{Method: mad.MethodGetResp, TransactionID: 1, AttrID: mad.AttrNodeInfo}
	mad.NodeInfo(ni.Data[:]).Encode(&mad.NodeInfoFields{BaseVersion: 1, ClassVersion: 1,
		NodeType: mad.NodeTypeSwitch, NumPorts: 8, NodeGUID: 0x0002c90300000001, VendorID: 0x2c9})
	trap := mad.SMPFields{Method: mad.MethodTrap, AttrID: mad.AttrNotice}
	mad.Notice(trap.Data[:]).Encode(noticePtr(mad.Trap128(5)))
	trap144 := mad.SMPFields{Method: mad.MethodTrap, AttrID: mad.AttrNotice}
	mad.Notice(trap144.Data[:]).Encode(noticePtr(mad.Trap144(mad.NodeTypeCA, 3, 0x0251086a, mad.Trap144SMPriority)))
	dr, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrSwitchInfo,
		Path: []uint8{0, 1, 2}})
	pma := mad.AppendPMA(nil, &mad.PMAFields{Method: mad.MethodGet, AttrID: mad.AttrPortCounters})
	return [][]byte{
		mad.AppendSMP(nil, &ni),
		mad.AppendSMP(nil, &trap),
		mad.AppendSMP(nil, &trap144),
		dr,
		pma,
		nil,
		make([]byte, mad.MADHeaderSize),
	}
}

// fuzzFeedback counts SetTruncated calls.
type fuzzFeedback struct{ n int }

func (f *fuzzFeedback) SetTruncated() { f.n++ }

// FuzzMAD runs every decoder of the package on arbitrary bytes: the
// gopacket layers through DecodeFromBytes (so no panic is recovered), the
// MAD, SMP and PMA views, and the attributes, at the offsets the data
// areas sit at. Whatever decodes must encode back to the same bytes, bar
// reserved bits.
func FuzzMAD(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzLayers(t, data)
		fuzzViews(t, data)
		// The attribute decoders see the data as it sits in a MAD (at the
		// SMP data offset) and from its start, so short inputs hit them too.
		fuzzAttributes(t, data)
		if len(data) > 64 {
			fuzzAttributes(t, data[64:])
		}
	})
}

func fuzzLayers(t *testing.T, data []byte) {
	var df fuzzFeedback
	var m mad.MADLayer
	if err := m.DecodeFromBytes(data, &df); err != nil {
		if df.n == 0 {
			t.Errorf("MADLayer.DecodeFromBytes(%x) = %v without SetTruncated", data, err)
		}
	} else {
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, &m, gopacket.Payload(m.Payload)); err != nil {
			t.Fatalf("SerializeLayers(MAD) = %v", err)
		}
		want := bytes.Clone(data[:mad.MADSize])
		want[18], want[19] = 0, 0 // reserved
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("MAD layer round trip of %x = %x", want, buf.Bytes())
		}
	}
	body := data
	if len(data) >= mad.MADHeaderSize {
		body = data[mad.MADHeaderSize:]
	}
	for _, l := range []gopacket.DecodingLayer{&mad.SMPLayer{}, &mad.DRSMPLayer{}, &mad.PMALayer{}} {
		df.n = 0
		err := l.DecodeFromBytes(body, &df)
		if err != nil && df.n == 0 {
			t.Errorf("%T.DecodeFromBytes(%x) = %v without SetTruncated", l, body, err)
		}
		if err == nil {
			if _, ok := l.(gopacket.SerializableLayer); !ok {
				t.Fatalf("%T is not serializable", l)
			}
			buf := gopacket.NewSerializeBuffer()
			if err := l.(gopacket.SerializableLayer).SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
				t.Fatalf("%T.SerializeTo = %v", l, err)
			}
			if len(buf.Bytes()) != mad.MADDataSize {
				t.Errorf("%T serialized to %d bytes, want %d", l, len(buf.Bytes()), mad.MADDataSize)
			}
		}
	}
}

func fuzzViews(t *testing.T, data []byte) {
	if h, err := mad.DecodeMAD(data); err == nil {
		got := mad.AppendMAD(nil, &h, data[mad.MADHeaderSize:mad.MADSize])
		want := bytes.Clone(data[:mad.MADSize])
		want[18], want[19] = 0, 0
		if !bytes.Equal(got, want) {
			t.Errorf("AppendMAD(DecodeMAD(%x)) = %x", want, got)
		}
	}
	if s, err := mad.DecodeSMP(data); err == nil {
		got := mad.SMP(mad.AppendSMP(nil, &s))
		if got.Fields() != s || got.MKey() != mad.SMP(data).MKey() {
			t.Errorf("SMP round trip of %x lost fields", data)
		}
	}
	if d, err := mad.DecodeDRSMP(data); err == nil {
		if mad.DRSMP(mad.AppendDRSMP(nil, &d)).Fields() != d {
			t.Errorf("DRSMP round trip of %x lost fields", data)
		}
		if int(d.HopCount) > mad.MaxHopCount || int(d.HopPointer) > int(d.HopCount)+1 {
			t.Errorf("DecodeDRSMP accepted hop pointer %d, count %d", d.HopPointer, d.HopCount)
		}
	}
	if mad.DRSMP(data).IsValid() {
		if p := mad.DRSMP(data).Path(); len(p) == 0 || len(p) > mad.MaxHopCount+1 {
			t.Errorf("DRSMP(%x).Path() has %d bytes", data, len(p))
		}
	}
	if p, err := mad.DecodePMA(data); err == nil {
		if mad.PMA(mad.AppendPMA(nil, &p)).Fields() != p {
			t.Errorf("PMA round trip of %x lost fields", data)
		}
	}
}

// fuzzAttributes decodes b as each attribute and checks that encoding the
// fields gives back b's bytes (reserved bits masked).
func fuzzAttributes(t *testing.T, b []byte) {
	if f, err := mad.DecodeNodeInfo(b); err == nil {
		fuzzSame(t, "NodeInfo", b[:mad.NodeInfoSize], mad.AppendNodeInfo(nil, &f), nil)
	}
	if f, err := mad.DecodeNodeDescription(b); err == nil {
		if len(f.Text) > mad.NodeDescriptionSize || bytes.IndexByte([]byte(f.Text), 0) >= 0 {
			t.Errorf("DecodeNodeDescription(%x) = %q", b, f.Text)
		}
		if utf8.ValidString(f.Text) {
			got := mad.AppendNodeDescription(nil, &f)
			if !bytes.Equal(got[:len(f.Text)], b[:len(f.Text)]) {
				t.Errorf("NodeDescription round trip of %q = %q", f.Text, got)
			}
		}
	}
	if f, err := mad.DecodeSwitchInfo(b); err == nil {
		mask := make([]byte, mad.SwitchInfoSize)
		mask[16], mask[17] = 0x07, 0xff // reserved
		fuzzSame(t, "SwitchInfo", b[:mad.SwitchInfoSize], mad.AppendSwitchInfo(nil, &f), mask)
	}
	if f, err := mad.DecodeGUIDInfo(b); err == nil {
		fuzzSame(t, "GUIDInfo", b[:mad.GUIDInfoSize], mad.AppendGUIDInfo(nil, &f), nil)
	}
	if f, err := mad.DecodePKeyTable(b); err == nil {
		fuzzSame(t, "PKeyTable", b[:mad.PKeyTableSize], mad.AppendPKeyTable(nil, &f), nil)
	}
	if f, err := mad.DecodeSMInfo(b); err == nil {
		fuzzSame(t, "SMInfo", b[:mad.SMInfoSize], mad.AppendSMInfo(nil, &f), nil)
	}
	if f, err := mad.DecodeNotice(b); err == nil {
		fuzzSame(t, "Notice", b[:mad.NoticeSize], mad.AppendNotice(nil, &f), nil)
		n := mad.Notice(b)
		_, _, _ = n.Trap128LID(), n.PortTrapLID(), n.PortTrapPort()
		_, _, _ = n.Trap144LID(), n.Trap144OtherLocalChanges(), n.Trap144CapabilityMask()
		_, _ = n.Trap144ChangeFlags(), n.Trap144CapabilityMask2()
	}
}

// fuzzSame fails unless got equals want outside the bits set in mask.
func fuzzSame(t *testing.T, what string, want, got, mask []byte) {
	t.Helper()
	for i := range want {
		m := byte(0xff)
		if mask != nil {
			m = ^mask[i]
		}
		if want[i]&m != got[i]&m {
			t.Errorf("%s round trip of %x = %x (byte %d)", what, want, got, i)
			return
		}
	}
}
