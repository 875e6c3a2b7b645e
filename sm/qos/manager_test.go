package qos_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/arbtable"
	"ibfab/sm/qos"
	"ibfab/wire/mad"
)

const sdr4x = 8_000_000_000 // 4x SDR data rate, bits/s

// path returns n output ports of 4x SDR links with MTU 2048 and 8 data
// VLs, named p0.. and keyed by their index.
func path(n int) []qos.Link {
	out := make([]qos.Link, n)
	for i := range out {
		out[i] = qos.Link{Key: qos.PortKey{GUID: uint64(i + 1), Port: 1}, Name: fmt.Sprintf("p%d", i),
			Rate: sdr4x, MTU: 2048, DataVLs: 8}
	}
	return out
}

func newManager(t *testing.T) *qos.Manager {
	t.Helper()
	m, err := qos.NewManager(qos.Params{})
	require.NoError(t, err)
	return m
}

// TestAdmitMapping: bandwidth becomes weight in whole packets, latency a
// distance whose bound meets the per-hop share, and the SL/VL follows the
// first hop's level.
func TestAdmitMapping(t *testing.T) {
	for _, tc := range []struct {
		name      string
		req       qos.Request
		hops      int
		wantLevel int
	}{
		// Loose latency: the largest distance (one entry) carries 100 Mb/s.
		{"loose", qos.Request{ID: "a", Src: "x", Dst: "y", Mbps: 100, LatencyUs: 10000}, 3, 6},
		// 100 µs over 2 hops is 50 µs per hop: a smaller distance.
		{"tight e2e", qos.Request{ID: "b", Src: "x", Dst: "y", Mbps: 200, LatencyUs: 100}, 2, -1},
		// Per hop, the same figure is looser.
		{"per hop", qos.Request{ID: "c", Src: "x", Dst: "y", Mbps: 200, LatencyUs: 100, Scope: qos.PerHop}, 2, -1},
		// 3 Gb/s needs more entries than one of 255 units.
		{"wide", qos.Request{ID: "d", Src: "x", Dst: "y", Mbps: 3000, LatencyUs: 10000}, 1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t)
			p := m.Params()
			f, err := m.Admit(tc.req, path(tc.hops))
			require.NoError(t, err)
			require.Len(t, f.Hops, tc.hops)
			if tc.wantLevel >= 0 {
				assert.Equal(t, tc.wantLevel, f.Hops[0].Level)
			}
			perHop := tc.req.LatencyUs
			if tc.req.Scope == qos.EndToEnd {
				perHop /= float64(tc.hops)
			}
			blocks := (tc.req.PacketBytes() + 63) / 64
			for _, h := range f.Hops {
				assert.Equal(t, p.Size>>h.Level, h.Entries)
				assert.LessOrEqual(t, h.Weight, p.MaxEntryWeight)
				assert.Zero(t, h.Weight%blocks, "whole packets per entry")
				// The reservation carries the rate: weight/Budget of Share of the link.
				got := float64(h.Weight*h.Entries) / float64(p.Budget) * p.Share * sdr4x / 1e6
				assert.GreaterOrEqual(t, got, tc.req.Mbps)
				assert.LessOrEqual(t, h.BoundUs, perHop)
				if h.Level < 6 && h.Weight*h.Entries/2 <= 255*(h.Entries/2) {
					// A larger distance would have broken the latency bound,
					// unless the weight needed the entries.
					bigger, err := m.Admit(qos.Request{ID: "probe", Src: "x", Dst: "y", Mbps: tc.req.Mbps,
						LatencyUs: h.BoundUs * 0.999, Scope: qos.PerHop}, path(1))
					if err == nil {
						assert.LessOrEqual(t, bigger.Hops[0].Level, h.Level)
						_, err = m.Release("probe")
						require.NoError(t, err)
					}
				}
			}
			want := uint8(f.Hops[0].Level)
			if want == 0 {
				want = 7
			}
			assert.Equal(t, want, f.SL)
			for _, h := range f.Hops {
				assert.Equal(t, f.SL, h.VL, "8 data VLs: SL n on VL n")
			}
		})
	}
}

// TestHighTable: the table the SM writes holds each flow's VL and weight
// in exactly the slots the model gave it.
func TestHighTable(t *testing.T) {
	m := newManager(t)
	var flows []*qos.Flow
	for i, mbps := range []float64{100, 400, 1200, 50} {
		f, err := m.Admit(qos.Request{ID: fmt.Sprintf("f%d", i), Src: "x", Dst: "y", Mbps: mbps, LatencyUs: 500}, path(2))
		require.NoError(t, err)
		flows = append(flows, f)
	}
	key := path(2)[1].Key
	tab := m.HighTable(key)
	used := 0
	for _, e := range tab {
		if e.Weight > 0 {
			used++
		}
	}
	want := 0
	weight := 0
	for _, f := range flows {
		want += f.Hops[1].Entries
		weight += f.Hops[1].Entries * f.Hops[1].Weight
	}
	assert.Equal(t, want, used)
	w, budget, free := m.Reserved(key)
	assert.Equal(t, weight, w)
	assert.Equal(t, 64-want, free)
	assert.Equal(t, m.Params().Budget, budget)

	_, err := m.Release("f2")
	require.NoError(t, err)
	w, _, _ = m.Reserved(key)
	assert.Equal(t, weight-flows[2].Hops[1].Entries*flows[2].Hops[1].Weight, w)
	left := map[mad.VLArbEntry]int{}
	for _, i := range []int{0, 1, 3} {
		h := flows[i].Hops[1]
		left[mad.VLArbEntry{VL: h.VL, Weight: uint8(h.Weight)}] += h.Entries
	}
	got := map[mad.VLArbEntry]int{}
	for _, e := range m.HighTable(key) {
		if e.Weight > 0 {
			got[e]++
		}
	}
	assert.Equal(t, left, got, "the remaining flows' entries, and only theirs")
	_, err = m.Release("f2")
	assert.ErrorIs(t, err, qos.ErrUnknown)
}

// TestReject: a flow that does not fit names the port that refused it
// and leaves every table as it was.
func TestReject(t *testing.T) {
	m := newManager(t)
	p := path(3)
	// Fill the middle port with a flow that takes most of its budget.
	_, err := m.Admit(qos.Request{ID: "big", Src: "x", Dst: "y", Mbps: 4500, LatencyUs: 10000}, p[1:2])
	require.NoError(t, err)
	before := [3][64]mad.VLArbEntry{m.HighTable(p[0].Key), m.HighTable(p[1].Key), m.HighTable(p[2].Key)}

	_, err = m.Admit(qos.Request{ID: "more", Src: "x", Dst: "y", Mbps: 2000, LatencyUs: 10000}, p)
	var rej *qos.RejectError
	require.True(t, errors.As(err, &rej), "%v", err)
	assert.Equal(t, "p1", rej.Port)
	assert.Contains(t, rej.Reason, "weight")
	after := [3][64]mad.VLArbEntry{m.HighTable(p[0].Key), m.HighTable(p[1].Key), m.HighTable(p[2].Key)}
	assert.Equal(t, before, after, "all or nothing")
	_, ok := m.Flow("more")
	assert.False(t, ok)

	// A latency no distance meets.
	_, err = m.Admit(qos.Request{ID: "fast", Src: "x", Dst: "y", Mbps: 10, LatencyUs: 1}, p)
	require.True(t, errors.As(err, &rej))
	assert.Equal(t, "p0", rej.Port)
	assert.Contains(t, rej.Reason, "latency")

	// One VL: nothing apart from best effort.
	few := path(1)
	few[0].DataVLs = 1
	_, err = m.Admit(qos.Request{ID: "vl", Src: "x", Dst: "y", Mbps: 10, LatencyUs: 100000}, few)
	require.True(t, errors.As(err, &rej))
	assert.Contains(t, rej.Reason, "one data VL")

	_, err = m.Admit(qos.Request{ID: "big", Src: "x", Dst: "y", Mbps: 1, LatencyUs: 100000}, p)
	assert.ErrorIs(t, err, qos.ErrDuplicate)
}

// TestEntriesRunOut: requests of one level fill the table's entries; the
// next is refused for entries, not weight, and a release makes room.
func TestEntriesRunOut(t *testing.T) {
	m, err := qos.NewManager(qos.Params{Budget: 64 * 128, Model: arbtable.Model1})
	require.NoError(t, err)
	p := path(1)
	n := 0
	for ; n < 100; n++ {
		// 8 entries each (level 3): distance 8 promises 74 µs here, 16 156 µs.
		f, err := m.Admit(qos.Request{ID: fmt.Sprintf("f%d", n), Src: "x", Dst: "y", Mbps: 10, LatencyUs: 100, Payload: 256}, p)
		if err != nil {
			var rej *qos.RejectError
			require.True(t, errors.As(err, &rej), "%v", err)
			assert.Contains(t, rej.Reason, "entries")
			break
		}
		require.Equal(t, 3, f.Hops[0].Level, "bound %v", f.Hops[0].BoundUs)
	}
	assert.Equal(t, 8, n, "64 entries hold eight sets of eight")
	_, err = m.Release("f3")
	require.NoError(t, err)
	_, err = m.Admit(qos.Request{ID: "again", Src: "x", Dst: "y", Mbps: 10, LatencyUs: 100, Payload: 256}, p)
	require.NoError(t, err)
}

func TestRequestNormalize(t *testing.T) {
	ok := qos.Request{ID: "f1", Src: "a", Dst: "b", Mbps: 1, LatencyUs: 1}
	for _, tc := range []struct {
		name string
		edit func(*qos.Request)
	}{
		{"no id", func(r *qos.Request) { r.ID = "" }},
		{"bad id", func(r *qos.Request) { r.ID = "a b" }},
		{"no src", func(r *qos.Request) { r.Src = "" }},
		{"zero rate", func(r *qos.Request) { r.Mbps = 0 }},
		{"negative latency", func(r *qos.Request) { r.LatencyUs = -1 }},
		{"huge payload", func(r *qos.Request) { r.Payload = 5000 }},
		{"bad scope", func(r *qos.Request) { r.Scope = 9 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.edit(&r)
			assert.ErrorIs(t, r.Normalize(), qos.ErrRequest)
		})
	}
	r := ok
	require.NoError(t, r.Normalize())
	assert.Equal(t, qos.DefaultPayload, r.Payload)

	var s qos.Scope
	require.NoError(t, s.UnmarshalText([]byte("hop")))
	assert.Equal(t, qos.PerHop, s)
	assert.Error(t, s.UnmarshalText([]byte("x")))
}

// TestHighLimit: the limit keeps the high table at its share: limit×4096
// bytes of high priority per low-priority packet of an MTU.
func TestHighLimit(t *testing.T) {
	m := newManager(t)
	for _, mtu := range []int{256, 1024, 2048, 4096} {
		l := int(m.HighLimit(mtu))
		h := float64(l * 4096)
		assert.GreaterOrEqual(t, h/(h+float64(mtu)), m.Params().Share, "MTU %d limit %d", mtu, l)
		assert.Less(t, l, 255, "255 would starve best effort")
	}
}

func TestParams(t *testing.T) {
	for _, p := range []qos.Params{{Size: 48}, {Budget: -1}, {Share: 1}, {Model: 9}, {MaxEntryWeight: 300}, {MaxEntryWeight: 10}} {
		_, err := qos.NewManager(p)
		assert.ErrorIs(t, err, qos.ErrParams, "%+v", p)
	}
}

// TestSLtoVL: flows fold onto the last VL of a port with few, never onto
// best effort's.
func TestSLtoVL(t *testing.T) {
	assert.Equal(t, [16]uint8{0, 1, 2, 3, 4, 5, 6, 7}, qos.SLtoVL(8))
	assert.Equal(t, [16]uint8{0, 1, 2, 3, 3, 3, 3, 3}, qos.SLtoVL(4))
	assert.Equal(t, [16]uint8{0, 1, 1, 1, 1, 1, 1, 1}, qos.SLtoVL(2))
	assert.Equal(t, [16]uint8{}, qos.SLtoVL(1))

	m := newManager(t)
	p := path(2)
	p[1].DataVLs = 4
	f, err := m.Admit(qos.Request{ID: "f", Src: "x", Dst: "y", Mbps: 100, LatencyUs: 100000}, p)
	require.NoError(t, err)
	require.EqualValues(t, 6, f.SL)
	assert.EqualValues(t, 6, f.Hops[0].VL)
	assert.EqualValues(t, 3, f.Hops[1].VL)
	assert.EqualValues(t, 3, m.HighTable(p[1].Key)[slotOf(t, m, p[1].Key)].VL)
}

func slotOf(t *testing.T, m *qos.Manager, k qos.PortKey) int {
	t.Helper()
	for i, e := range m.HighTable(k) {
		if e.Weight > 0 {
			return i
		}
	}
	t.Fatal("no entry")
	return 0
}

// TestSmallHighCap: a port whose high-priority table has 8 entries (as
// ibsim's and many HCAs' do) gets an 8-entry model and a budget cut to
// match; nothing lands past its cap, and a flow that needs more entries
// than it has is refused there.
func TestSmallHighCap(t *testing.T) {
	m := newManager(t)
	p := path(2)
	p[1].HighCap = 8
	f, err := m.Admit(qos.Request{ID: "f", Src: "x", Dst: "y", Mbps: 200, LatencyUs: 10000}, p)
	require.NoError(t, err)
	assert.LessOrEqual(t, f.Hops[1].Entries, 8)
	assert.Equal(t, 8>>f.Hops[1].Level, f.Hops[1].Entries)
	tab := m.HighTable(p[1].Key)
	for slot := 8; slot < len(tab); slot++ {
		assert.Zero(t, tab[slot].Weight, "slot %d past the cap", slot)
	}
	w, budget, free := m.Reserved(p[1].Key)
	assert.Equal(t, m.Params().Budget*8/64, budget, "the budget in proportion to the entries")
	assert.Equal(t, f.Hops[1].Entries*f.Hops[1].Weight, w)
	assert.Equal(t, 8-f.Hops[1].Entries, free)

	// The same rate at 64 entries has room an 8-entry table lacks.
	_, err = m.Admit(qos.Request{ID: "big", Src: "x", Dst: "y", Mbps: 5000, LatencyUs: 10000}, p[1:])
	var rej *qos.RejectError
	require.True(t, errors.As(err, &rej), "%v", err)
	assert.Equal(t, "p1", rej.Port)

	none := path(1)
	none[0].Key.GUID, none[0].HighCap = 99, 1
	_, err = m.Admit(qos.Request{ID: "x", Src: "x", Dst: "y", Mbps: 1, LatencyUs: 10000}, none)
	require.True(t, errors.As(err, &rej))
	assert.Contains(t, rej.Reason, "holds 1 entries")
}
