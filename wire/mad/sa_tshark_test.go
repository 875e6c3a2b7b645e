package mad_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/internal/testsupport/tsharktest"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// saFrame wraps one record in a SubnAdm GetResp on QP1.
func saFrame(attr mad.AttrID, mask uint64, rec []byte) []byte {
	f := mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: 2,
		Method: mad.MethodGetResp, TransactionID: 0x00000000cafe0003, AttrID: attr},
		SMKey: 0x0102030405060708, ComponentMask: mask}
	copy(f.Data[:], rec)
	return wire.AppendUD(nil, &wire.UDFields{VL: 0, DLID: 0x0011, SLID: 0x0001, PKey: 0xffff,
		DestQP: wire.QP1, PSN: 3, QKey: wire.QP1QKey, SrcQP: wire.QP1, Payload: mad.AppendSAMAD(nil, &f)})
}

// TestTsharkSARecords has Wireshark's dissector decode SA records and
// checks the fields it shows against what was encoded.
func TestTsharkSARecords(t *testing.T) {
	pr, mc, ii := samplePathRecord(), sampleMCMemberRecord(), sampleInformInfoRecord()
	lr := mad.LinkRecordFields{FromLID: 0x21, FromPort: 3, ToPort: 17, ToLID: 0x4321}
	const p, m, i = "infiniband.pathrecord.", "infiniband.mcmemberrecord.", "infiniband.informinfo."
	tests := []struct {
		name  string
		frame []byte
		wants []tsharkWant
	}{
		{"PathRecord", saFrame(mad.AttrSAPathRecord, 0x30, mad.AppendPathRecord(nil, &pr)), []tsharkWant{
			one("infiniband.sa.smkey", 0x0102030405060708), one("infiniband.sa.componentmask", 0x30),
			one(p+"dlid", uint64(pr.DLID)), one(p+"slid", uint64(pr.SLID)), one(p+"rawtraffic", 1),
			one(p+"flowlabel", uint64(pr.FlowLabel)), one(p+"hoplimit", uint64(pr.HopLimit)),
			one(p+"tclass", uint64(pr.TClass)), one(p+"reversible", 1), one(p+"numbpath", uint64(pr.NumbPath)),
			one(p+"p_key", uint64(pr.PKey)), one(p+"sl", uint64(pr.SL)), one(p+"mtuselector", uint64(pr.MTUSelector)),
			one(p+"mtu", uint64(pr.MTU)), one(p+"rateselector", uint64(pr.RateSelector)), one(p+"rate", uint64(pr.Rate)),
			one(p+"packetlifetimeselector", uint64(pr.PacketLifeTimeSelector)),
			one(p+"packetlifetime", uint64(pr.PacketLifeTime)), one(p+"preference", uint64(pr.Preference)),
		}},
		{"MCMemberRecord", saFrame(mad.AttrSAMCMemberRecord, 0x10003, mad.AppendMCMemberRecord(nil, &mc)), []tsharkWant{
			one(m+"q_key", uint64(mc.QKey)), one(m+"mlid", uint64(mc.MLID)), one(m+"mtuselector", uint64(mc.MTUSelector)),
			one(m+"mtu", uint64(mc.MTU)), one(m+"tclass", uint64(mc.TClass)), one(m+"p_key", uint64(mc.PKey)),
			one(m+"rateselector", uint64(mc.RateSelector)), one(m+"rate", uint64(mc.Rate)),
			one(m+"packetlifetimeselector", uint64(mc.PacketLifeTimeSelector)),
			one(m+"packetlifetime", uint64(mc.PacketLifeTime)), one(m+"sl", uint64(mc.SL)),
			one(m+"flowlabel", uint64(mc.FlowLabel)), one(m+"hoplimit", uint64(mc.HopLimit)),
			one(m+"scope", uint64(mc.Scope)), one(m+"joinstate", uint64(mc.JoinState)), one(m+"proxyjoin", 1),
		}},
		{"LinkRecord", saFrame(mad.AttrSALinkRecord, 1, mad.AppendLinkRecord(nil, &lr)), []tsharkWant{
			one("infiniband.linkrecord.fromlid", uint64(lr.FromLID)), one("infiniband.linkrecord.fromport", uint64(lr.FromPort)),
			one("infiniband.linkrecord.toport", uint64(lr.ToPort)), one("infiniband.linkrecord.tolid", uint64(lr.ToLID)),
		}},
		{"InformInfoRecord", saFrame(mad.AttrSAInformInfoRecord, 0, mad.AppendInformInfoRecord(nil, &ii)), []tsharkWant{
			one("infiniband.informinforecord.enum", uint64(ii.Enum)),
			one(i+"lidrangebegin", uint64(ii.InformInfo.LIDRangeBegin)), one(i+"lidrangeend", uint64(ii.InformInfo.LIDRangeEnd)),
			one(i+"isgeneric", 1), one(i+"subscribe", 1), one(i+"type", uint64(ii.InformInfo.Type)),
			one(i+"trapnumberdeviceid", uint64(ii.InformInfo.TrapNumber)), one(i+"qpn", uint64(ii.InformInfo.QPN)),
			one(i+"resptimevalue", uint64(ii.InformInfo.RespTimeValue)),
			one(i+"producertypevendorid", uint64(ii.InformInfo.ProducerType)),
		}},
	}
	recs := make([]capture.Record, len(tests))
	for k, tt := range tests {
		recs[k] = capture.Record{Type: capture.TypeInfiniBand, Data: tt.frame}
	}
	pkts := tsharktest.Decode(t, recs)
	require.Len(t, pkts, len(tests))
	for k, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pk := pkts[k]
			assert.Empty(t, pk.Problems(), "tshark problems")
			for _, w := range tt.wants {
				got := pk.All(w.field)
				if len(got) != len(w.values) {
					t.Errorf("tshark shows %d values of %s, want %d: %v", len(got), w.field, len(w.values), got)
					continue
				}
				for j, s := range got {
					v, err := strconv.ParseUint(s, 0, 64)
					if err != nil || v != w.values[j] {
						t.Errorf("tshark %s[%d] = %q, want %#x", w.field, j, s, w.values[j])
					}
				}
			}
		})
	}
}
