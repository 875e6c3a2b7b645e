package mad_test

import (
	"bytes"
	"testing"

	"ibfab/wire/mad"
)

// FuzzARAttr round-trips the adaptive routing attributes and the AR MAD:
// the first byte picks one.
func FuzzARAttr(f *testing.F) {
	info := mad.ARInfoFields{ModesSupported: mad.ARModesAll, AFISupported: true, GroupCap: 64, LIDCap: 0xc000,
		GroupTop: 1, Enable: true, Mode: mad.ARAdaptiveTh, Threshold: 75, AFCVL: 3}
	var groups mad.ARGroupTableFields
	groups.Groups[1] = mad.PortMaskOf(3, 4)
	var lids mad.ARLIDTableFields
	lids.Groups[5], lids.Groups[63] = 1, 0xffff
	m := mad.ARMADFields{Method: mad.MethodGetResp, AttrID: mad.AttrARInfo}
	mad.ARInfo(m.Data[:]).Encode(&info)
	f.Add(append([]byte{0}, mad.AppendARInfo(nil, &info)...))
	f.Add(append([]byte{1}, mad.AppendARGroupTable(nil, &groups)...))
	f.Add(append([]byte{2}, mad.AppendARLIDTable(nil, &lids)...))
	f.Add(append([]byte{3}, mad.AppendARMAD(nil, &m)...))
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		data := in[1:]
		switch in[0] % 4 {
		case 0:
			attrRoundTrip(t, "ARInfo", data, mad.ARInfoSize, mad.DecodeARInfo, mad.AppendARInfo)
			if a, err := mad.DecodeARInfo(data); err == nil {
				_ = a.Mode.String()
				_ = mad.ValidThreshold(a.Threshold)
			}
		case 1:
			attrRoundTrip(t, "ARGroupTable", data, mad.ARGroupTableSize, mad.DecodeARGroupTable, mad.AppendARGroupTable)
			if g, err := mad.DecodeARGroupTable(data); err == nil {
				for i := range g.Groups {
					if back := mad.PortMaskOf(g.Groups[i].Ports()...); back != g.Groups[i] {
						t.Fatalf("PortMaskOf(%v.Ports()) = %v", g.Groups[i], back)
					}
				}
			}
		case 2:
			attrRoundTrip(t, "ARLIDTable", data, mad.ARLIDTableSize, mad.DecodeARLIDTable, mad.AppendARLIDTable)
		case 3:
			fm, err := mad.DecodeARMAD(data)
			if err != nil {
				return
			}
			_ = mad.MAD(data).AttrID().Name(mad.ClassVendorAR)
			enc := mad.AppendARMAD(nil, &fm)
			want := bytes.Clone(data[:mad.MADSize])
			want[0], want[2] = mad.BaseVersion, mad.ARVersion // Encode writes the versions
			want[6], want[7], want[18], want[19] = 0, 0, 0, 0 // class-specific and reserved
			if !bytes.Equal(enc, want) {
				t.Fatalf("AppendARMAD(DecodeARMAD(%x)) = %x", want, enc)
			}
		}
	})
}
