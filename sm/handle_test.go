package sm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ibfab/internal/clock"
	"ibfab/internal/testsupport"
	"ibfab/madport"
	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// FuzzHandle feeds arbitrary MADs to the transaction layer while a
// request is pending, half of them with its TID: no panic, and an answer
// taken reaches the callback as 64 bytes of data or an error.
func FuzzHandle(f *testing.F) {
	seed, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGetResp, AttrID: mad.AttrNodeInfo})
	mad.DRSMP(seed).SetDirection(true)
	f.Add(seed, true)
	f.Add(seed[:100], true)
	lid := mad.AppendSMP(nil, &mad.SMPFields{Method: mad.MethodTrap, AttrID: mad.AttrNotice})
	f.Add(lid, false)
	sminfo, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrSMInfo, Path: []uint8{0, 1, 2}})
	f.Add(sminfo, false)
	t256 := mad.SMPFields{Method: mad.MethodTrap, AttrID: mad.AttrNotice}
	n256 := mad.Trap256(mad.NodeTypeCA, 5, &mad.BadMKey{LID: 9, Method: mad.MethodGet, AttrID: mad.AttrPortInfo, DR: true, HopCount: 2})
	mad.Notice(t256.Data[:]).Encode(&n256)
	f.Add(mad.AppendSMP(nil, &t256), false)
	f.Fuzz(func(t *testing.T, b []byte, matchTID bool) {
		clk := clock.NewManual(time.Unix(0, 0))
		p := &testsupport.SilentPort{Clock: clk}
		s := &SM{
			cfg:        Config{},
			port:       p,
			clk:        clk,
			caches:     caches{shadow: map[shadowKey][]byte{}, mk: newKeyCache(&Config{}), lids: NewLIDMap()},
			watchState: watchState{trapLIDs: map[uint16]bool{}},
			election:   election{smTraps: map[uint16]bool{}},
		}
		require.NoError(t, s.cfg.normalize())
		s.tx = txn.New(p, clk, s.cfg.TxnConfig, s.cfg.MKey)
		s.tx.OnUnsolicited = s.unsolicited
		s.tx.Get(txn.Request{DR: true, Path: []uint8{0}, Attr: mad.AttrNodeInfo}, func(r *txn.Response) {
			if r.Err == nil && len(r.Data) != mad.SMPDataSize {
				t.Fatalf("answer with %d bytes of data", len(r.Data))
			}
		})
		if err := s.tx.Fill(); err != nil {
			t.Fatal(err)
		}
		if matchTID && len(b) >= 16 {
			b = append([]byte(nil), b...)
			for _, tid := range s.tx.PendingTIDs() {
				mad.MAD(b).SetTransactionID(tid)
			}
		}
		s.tx.Handle(madport.MAD{LID: 7, Data: b})
	})
}
