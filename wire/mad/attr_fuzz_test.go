package mad_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"ibfab/wire/mad"
)

// Attribute kinds FuzzAttr picks with its first input byte.
const (
	fuzzPortInfo = iota
	fuzzSLtoVL
	fuzzVLArb
	fuzzLFT
	fuzzMFT
	fuzzPortCounters
	fuzzPortCountersExt
	fuzzModifiers
	fuzzKinds
)

// attrRoundTrip checks one decoder on data: it fails exactly when data is
// shorter than size, and what it returns survives encode → decode → encode
// unchanged.
func attrRoundTrip[F comparable](t *testing.T, name string, data []byte, size int,
	decode func([]byte) (F, error), appendF func([]byte, *F) []byte) {
	t.Helper()
	f, err := decode(data)
	if (err != nil) != (len(data) < size) {
		t.Fatalf("Decode%s(%d bytes) error = %v, want error only below %d bytes", name, len(data), err, size)
	}
	if err != nil {
		return
	}
	enc := appendF(nil, &f)
	if len(enc) != size {
		t.Fatalf("Append%s(%+v) gave %d bytes, want %d", name, f, len(enc), size)
	}
	f2, err := decode(enc)
	if err != nil || f2 != f {
		t.Fatalf("Decode%s(%x) = %+v, %v; want %+v", name, enc, f2, err, f)
	}
	if enc2 := appendF(nil, &f2); !bytes.Equal(enc2, enc) {
		t.Fatalf("Append%s not stable: %x then %x", name, enc, enc2)
	}
}

// attrFuzzSeeds are golden inputs: the first byte picks the attribute.
func attrFuzzSeeds() [][]byte {
	pi := tsharkPortInfo()
	var sl mad.SLtoVLMappingTableFields
	for i := range sl.VL {
		sl.VL[i] = uint8(15 - i)
	}
	var va mad.VLArbitrationTableFields
	for i := range va.Entries {
		va.Entries[i] = mad.VLArbEntry{VL: uint8(i % 8), Weight: uint8(i + 1)}
	}
	var lft mad.LinearForwardingTableFields
	for i := range lft.Ports {
		lft.Ports[i] = uint8(i%36 + 1)
	}
	var mft mad.MulticastForwardingTableFields
	for i := range mft.PortMasks {
		mft.PortMasks[i] = uint16(0x0101 << (i % 8))
	}
	pc := tsharkPortCounters()
	pce := tsharkPortCountersExtended()
	return [][]byte{
		append([]byte{fuzzPortInfo}, mad.AppendPortInfo(nil, &pi)...),
		append([]byte{fuzzSLtoVL}, mad.AppendSLtoVLMappingTable(nil, &sl)...),
		append([]byte{fuzzVLArb}, mad.AppendVLArbitrationTable(nil, &va)...),
		append([]byte{fuzzLFT}, mad.AppendLinearForwardingTable(nil, &lft)...),
		append([]byte{fuzzMFT}, mad.AppendMulticastForwardingTable(nil, &mft)...),
		append([]byte{fuzzPortCounters}, mad.AppendPortCounters(nil, &pc)...),
		append([]byte{fuzzPortCountersExt}, mad.AppendPortCountersExtended(nil, &pce)...),
		{fuzzModifiers, 0x00, 0x03, 0x00, 0x24, 0x20, 0x00, 0x01, 0xff},
		{fuzzPortInfo, 0x01, 0x02},
	}
}

func FuzzAttr(f *testing.F) {
	for _, s := range attrFuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		data := in[1:]
		switch in[0] % fuzzKinds {
		case fuzzPortInfo:
			attrRoundTrip(t, "PortInfo", data, mad.PortInfoSize, mad.DecodePortInfo, mad.AppendPortInfo)
			if p := mad.PortInfo(data); p.IsValid() {
				_ = p.PortState().String() + p.PortPhysicalState().String() + p.NeighborMTU().String() +
					p.LinkWidthActive().String() + p.LinkSpeedActive().String()
				_, _ = mad.DataRate(p.LinkWidthActive(), p.LinkSpeedActive())
			}
		case fuzzSLtoVL:
			attrRoundTrip(t, "SLtoVLMappingTable", data, mad.SLtoVLMappingTableSize,
				mad.DecodeSLtoVLMappingTable, mad.AppendSLtoVLMappingTable)
		case fuzzVLArb:
			attrRoundTrip(t, "VLArbitrationTable", data, mad.VLArbitrationTableSize,
				mad.DecodeVLArbitrationTable, mad.AppendVLArbitrationTable)
		case fuzzLFT:
			attrRoundTrip(t, "LinearForwardingTable", data, mad.LinearForwardingTableSize,
				mad.DecodeLinearForwardingTable, mad.AppendLinearForwardingTable)
		case fuzzMFT:
			attrRoundTrip(t, "MulticastForwardingTable", data, mad.MulticastForwardingTableSize,
				mad.DecodeMulticastForwardingTable, mad.AppendMulticastForwardingTable)
		case fuzzPortCounters:
			attrRoundTrip(t, "PortCounters", data, mad.PortCountersSize,
				mad.DecodePortCounters, mad.AppendPortCounters)
		case fuzzPortCountersExt:
			attrRoundTrip(t, "PortCountersExtended", data, mad.PortCountersExtendedSize,
				mad.DecodePortCountersExtended, mad.AppendPortCountersExtended)
		case fuzzModifiers:
			for len(data) >= 4 {
				fuzzModifier(t, binary.BigEndian.Uint32(data))
				data = data[1:]
			}
		}
	})
}

// fuzzModifier checks that every modifier a parser accepts is rebuilt
// exactly by the matching composer.
func fuzzModifier(t *testing.T, mod uint32) {
	if m, err := mad.ParseSLtoVLModifier(mod); err == nil && m.Modifier() != mod {
		t.Fatalf("ParseSLtoVLModifier(%#x) = %+v, which composes to %#x", mod, m, m.Modifier())
	}
	if b, p, err := mad.ParseVLArbModifier(mod); err == nil {
		if got := mad.VLArbModifier(b, p); got != mod || !b.IsValid() {
			t.Fatalf("ParseVLArbModifier(%#x) = %v, %d, which composes to %#x", mod, b, p, got)
		}
		_ = b.String()
	}
	if b, p, err := mad.ParseMFTModifier(mod); err == nil {
		if got := mad.MFTModifier(b, p); got != mod {
			t.Fatalf("ParseMFTModifier(%#x) = %d, %d, which composes to %#x", mod, b, p, got)
		}
	}
	if b, err := mad.ParseLFTModifier(mod); err == nil && uint32(b) != mod {
		t.Fatalf("ParseLFTModifier(%#x) = %d", mod, b)
	}
	lid := uint16(mod)
	if b, i, err := mad.MFTBlock(lid); err == nil {
		if uint32(b)*mad.MFTEntriesPerBlock+uint32(i)+mad.MulticastLIDBase != uint32(lid) {
			t.Fatalf("MFTBlock(%#x) = %d, %d", lid, b, i)
		}
	}
	if b, i := mad.LFTBlock(lid); int(b)*mad.LFTEntriesPerBlock+i != int(lid) {
		t.Fatalf("LFTBlock(%#x) = %d, %d", lid, b, i)
	}
}
