package hca_test

import (
	"errors"
	"testing"
	"time"

	"ibfab/hca"
	"ibfab/port"
	"ibfab/wire/mad"
)

// setPKeys writes block 0 of the P_Key table of the port at path.
func setPKeys(t *testing.T, p *pair, path []uint8, keys ...mad.PKey) {
	t.Helper()
	var f mad.PKeyTableFields
	copy(f.PKeys[:], keys)
	sm(t, p, p.a, p.ia, drRequest(t, mad.DRRequest{Method: mad.MethodSet, TransactionID: 30, AttrID: mad.AttrPKeyTable,
		Path: path, Data: mad.AppendPKeyTable(nil, &f)}))
}

// TestTrafficPKey checks that a generator sends in the partition it is
// given, by index or by value, and that a choice the table does not hold
// fails at start. b is a full member of 0x0001 only: what a sends there
// arrives; what it sends in 0x0002 is b's P_Key violation.
func TestTrafficPKey(t *testing.T) {
	p := newPair(t)
	p.settle()
	activate(t, p, []uint8{0, 1}, 2)
	activate(t, p, nil, 1)
	setPKeys(t, p, nil, 0xffff, 0x8001, 0x0002)
	setPKeys(t, p, []uint8{0, 1}, 0xffff, 0x8001)

	for _, tc := range []struct {
		name      string
		tc        hca.TrafficConfig
		wantErr   bool
		delivered bool
	}{
		{name: "default index 0", delivered: true},
		{name: "index 1", tc: hca.TrafficConfig{PKeyIndex: 1}, delivered: true},
		{name: "value 0x8001", tc: hca.TrafficConfig{PKey: 0x8001}, delivered: true},
		{name: "index 2, b not a member", tc: hca.TrafficConfig{PKeyIndex: 2}},
		{name: "value 0x8002 finds the limited entry", tc: hca.TrafficConfig{PKey: 0x8002}},
		{name: "value not in the table", tc: hca.TrafficConfig{PKey: 0x8003}, wantErr: true},
		{name: "index of an empty entry", tc: hca.TrafficConfig{PKeyIndex: 5}, wantErr: true},
		{name: "index past the table", tc: hca.TrafficConfig{PKeyIndex: 1000}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rx, drops := p.b.Stats().Ports[0].RxPackets, p.b.Port(1).Drops()[port.DropPKey]
			c := tc.tc
			c.GeneratorConfig = hca.GeneratorConfig{Load: 10, Payload: 256, Dests: []uint16{2}, Seed: 1}
			_, err := p.a.StartTraffic(1, c)
			if tc.wantErr {
				if !errors.Is(err, hca.ErrPKey) {
					t.Fatalf("StartTraffic: %v, want ErrPKey", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("StartTraffic: %v", err)
			}
			p.runFor(t, 50*time.Microsecond)
			gs, _ := p.a.StopTraffic(1)
			p.runFor(t, 10*time.Microsecond)
			if gs.Sent == 0 || gs.Failed != 0 {
				t.Fatalf("generator sent %d, failed %d", gs.Sent, gs.Failed)
			}
			gotRx := p.b.Stats().Ports[0].RxPackets - rx
			gotDrops := p.b.Port(1).Drops()[port.DropPKey] - drops
			if tc.delivered && (gotRx != gs.Sent || gotDrops != 0) {
				t.Errorf("b received %d, dropped %d for P_Key, of %d sent: want all received", gotRx, gotDrops, gs.Sent)
			}
			if !tc.delivered && (gotRx != 0 || gotDrops != gs.Sent) {
				t.Errorf("b received %d, dropped %d for P_Key, of %d sent: want all dropped", gotRx, gotDrops, gs.Sent)
			}
		})
	}
}
