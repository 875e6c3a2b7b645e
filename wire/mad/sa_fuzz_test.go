package mad_test

import (
	"bytes"
	"testing"

	"ibfab/wire/mad"
)

// saRecordCodec is one record's decoder and encoder, for FuzzSARecord.
type saRecordCodec struct {
	name      string
	roundTrip func(t *testing.T, data []byte)
}

func saCodec[F any](name string, size int, decode func([]byte) (F, error), appendF func([]byte, *F) []byte) saRecordCodec {
	return saRecordCodec{name, func(t *testing.T, data []byte) {
		f, err := decode(data)
		if (err != nil) != (len(data) < size) {
			t.Fatalf("Decode%s(%d bytes) error = %v, want error only below %d bytes", name, len(data), err, size)
		}
		if err != nil {
			return
		}
		enc := appendF(nil, &f)
		f2, err := decode(enc)
		if err != nil {
			t.Fatalf("Decode%s(Append%s) = %v", name, name, err)
		}
		if enc2 := appendF(nil, &f2); !bytes.Equal(enc, enc2) {
			t.Fatalf("Append%s not stable: %x then %x", name, enc, enc2)
		}
	}}
}

var saCodecs = []saRecordCodec{
	saCodec("NodeRecord", 112, mad.DecodeNodeRecord, mad.AppendNodeRecord),
	saCodec("PortInfoRecord", 72, mad.DecodePortInfoRecord, mad.AppendPortInfoRecord),
	saCodec("SwitchInfoRecord", 24, mad.DecodeSwitchInfoRecord, mad.AppendSwitchInfoRecord),
	saCodec("LFTRecord", 72, mad.DecodeLFTRecord, mad.AppendLFTRecord),
	saCodec("MFTRecord", 72, mad.DecodeMFTRecord, mad.AppendMFTRecord),
	saCodec("LinkRecord", 8, mad.DecodeLinkRecord, mad.AppendLinkRecord),
	saCodec("SMInfoRecord", 32, mad.DecodeSMInfoRecord, mad.AppendSMInfoRecord),
	saCodec("GUIDInfoRecord", 72, mad.DecodeGUIDInfoRecord, mad.AppendGUIDInfoRecord),
	saCodec("PKeyTableRecord", 72, mad.DecodePKeyTableRecord, mad.AppendPKeyTableRecord),
	saCodec("SLtoVLRecord", 16, mad.DecodeSLtoVLRecord, mad.AppendSLtoVLRecord),
	saCodec("VLArbRecord", 72, mad.DecodeVLArbRecord, mad.AppendVLArbRecord),
	saCodec("PathRecord", 64, mad.DecodePathRecord, mad.AppendPathRecord),
	saCodec("ServiceRecord", 176, mad.DecodeServiceRecord, mad.AppendServiceRecord),
	saCodec("MCMemberRecord", 56, mad.DecodeMCMemberRecord, mad.AppendMCMemberRecord),
	saCodec("InformInfo", mad.InformInfoSize, mad.DecodeInformInfo, mad.AppendInformInfo),
	saCodec("InformInfoRecord", 64, mad.DecodeInformInfoRecord, mad.AppendInformInfoRecord),
	saCodec("SAMAD", mad.MADSize, func(b []byte) (mad.SAMADFields, error) {
		if len(b) >= mad.MADSize {
			b = append([]byte(nil), b...)
			b[1] = byte(mad.ClassSubnAdm)
		}
		return mad.DecodeSAMAD(b)
	}, mad.AppendSAMAD),
}

// FuzzSARecord feeds every SA record decoder (the first byte picks it):
// none panics, each fails exactly on short input, and what decodes
// re-encodes stably. MultiPathRecord (variable length) and component
// matching with any mask are fuzzed on the same input.
func FuzzSARecord(f *testing.F) {
	pr, mc, ii, sr := samplePathRecord(), sampleMCMemberRecord(), sampleInformInfoRecord(), sampleServiceRecord()
	f.Add(append([]byte{11}, mad.AppendPathRecord(nil, &pr)...))
	f.Add(append([]byte{13}, mad.AppendMCMemberRecord(nil, &mc)...))
	f.Add(append([]byte{15}, mad.AppendInformInfoRecord(nil, &ii)...))
	f.Add(append([]byte{12}, mad.AppendServiceRecord(nil, &sr)...))
	f.Add([]byte{0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		data := in[1:]
		saCodecs[int(in[0])%len(saCodecs)].roundTrip(t, data)
		if mp, err := mad.DecodeMultiPathRecord(data); err == nil {
			enc := mad.AppendMultiPathRecord(nil, &mp)
			if mp2, err := mad.DecodeMultiPathRecord(enc); err != nil || len(mp2.GIDs) != len(mp.GIDs) {
				t.Fatalf("MultiPathRecord round trip: %v", err)
			}
		}
		layouts := mad.SALayouts()
		l := layouts[int(in[0])%len(layouts)]
		if len(data) >= 2*l.Size+8 {
			var mask uint64
			for _, b := range data[2*l.Size : 2*l.Size+8] {
				mask = mask<<8 | uint64(b)
			}
			rec := data[:l.Size]
			if !l.Match(rec, rec, mask) {
				t.Fatalf("%s: a record does not match itself under mask %#x", l.Name, mask)
			}
			l.Match(rec, data[l.Size:2*l.Size], mask)
		}
	})
}
