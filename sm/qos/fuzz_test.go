package qos_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"ibfab/sm/qos"
)

// FuzzAdmit: any request, as a control client sends it (JSON), on a path
// of any rates, MTUs and VLs, is admitted, refused or called malformed;
// never a panic, and an admitted flow's entries are in the tables until
// it is released.
func FuzzAdmit(f *testing.F) {
	f.Add([]byte(`{"id":"f1","src":"a","dst":"b","mbps":2000,"latency_us":1000}`), uint8(3), uint8(4), uint8(8))
	f.Add([]byte(`{"id":"f2","src":"a","dst":"b","mbps":1e9,"latency_us":1,"scope":"hop","payload":4096}`), uint8(1), uint8(1), uint8(2))
	f.Add([]byte(`{"id":"x y","mbps":-1}`), uint8(0), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, hops, mtu, vls uint8) {
		var req qos.Request
		if json.Unmarshal(data, &req) != nil {
			return
		}
		m, err := qos.NewManager(qos.Params{})
		if err != nil {
			t.Fatal(err)
		}
		var path []qos.Link
		for i := range int(hops % 6) {
			path = append(path, qos.Link{Key: qos.PortKey{GUID: uint64(i + 1), Port: 1}, Name: fmt.Sprintf("p%d", i),
				Rate: uint64(mtu%4+1) * 2_000_000_000, MTU: 256 << (mtu % 5), DataVLs: int(vls % 16)})
		}
		fl, err := m.Admit(req, path)
		if err != nil {
			return
		}
		for i, h := range fl.Hops {
			if h.Weight < 1 || h.Weight > m.Params().MaxEntryWeight || h.Entries != m.Params().Size>>h.Level {
				t.Fatalf("hop %d: %+v", i, h)
			}
			tab := m.HighTable(path[i].Key)
			n := 0
			for _, e := range tab {
				if e.Weight > 0 {
					n++
				}
			}
			if n != h.Entries {
				t.Fatalf("hop %d: %d entries in the table, want %d", i, n, h.Entries)
			}
		}
		if _, err := m.Release(req.ID); err != nil {
			t.Fatal(err)
		}
		for _, l := range path {
			if w, _, free := m.Reserved(l.Key); w != 0 || free != m.Params().Size {
				t.Fatalf("%s: %d units, %d free after the release", l.Name, w, free)
			}
		}
	})
}
