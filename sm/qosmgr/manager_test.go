package qosmgr_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/qos"
	"ibfab/sm/qosmgr"
	"ibfab/sm/routing"
)

const sdr4x = 8_000_000_000 // 4x SDR data rate, bits/s

// link is output port port of node guid, a 4x SDR link of MTU 2048 and
// 8 data VLs.
func link(guid uint64, port int) qos.Link {
	return qos.Link{Key: qos.PortKey{GUID: guid, Port: port}, Name: fmt.Sprintf("n%d[%d]", guid, port),
		Rate: sdr4x, MTU: 2048, DataVLs: 8}
}

// fakePaths is a subnet's routes: the path of "src>dst", or why there
// is none.
type fakePaths struct {
	paths map[string][]qos.Link
	err   map[string]error
}

func (f *fakePaths) Path(src, dst string) ([]qos.Link, error) {
	k := src + ">" + dst
	if err := f.err[k]; err != nil {
		return nil, err
	}
	p, ok := f.paths[k]
	if !ok {
		return nil, fmt.Errorf("no CA %q", dst)
	}
	return p, nil
}

// fakeTables counts the writes and answers each with written.
type fakeTables struct {
	writes  int
	written qosmgr.Written
	err     error
}

func (f *fakeTables) Write(context.Context) (qosmgr.Written, error) {
	f.writes++
	return f.written, f.err
}

// recorder collects the manager's events.
type recorder struct{ events []qosmgr.Event }

func (r *recorder) add(e qosmgr.Event) { r.events = append(r.events, e) }

func (r *recorder) actions() []qosmgr.Action {
	var out []qosmgr.Action
	for _, e := range r.events {
		out = append(out, e.Action)
	}
	return out
}

func newManager(t *testing.T, rec *recorder, flows ...qos.Request) *qosmgr.Manager {
	t.Helper()
	m, err := qosmgr.New(&qosmgr.Config{Flows: flows, OnEvent: rec.add})
	require.NoError(t, err)
	return m
}

func req(id, src, dst string, mbps float64) qos.Request {
	return qos.Request{ID: id, Src: src, Dst: dst, Mbps: mbps, LatencyUs: 2000}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  qosmgr.Config
		want string
	}{
		{"a flow twice", qosmgr.Config{Flows: []qos.Request{req("f", "a", "b", 1), req("f", "a", "c", 1)}}, "given twice"},
		{"no bandwidth", qosmgr.Config{Flows: []qos.Request{req("f", "a", "b", 0)}}, "f"},
		{"a share over 1", qosmgr.Config{Params: qos.Params{Share: 2}}, "share"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := qosmgr.New(&tc.cfg)
			require.Error(t, err)
			assert.ErrorIs(t, err, routing.ErrConfig, "sm.ErrConfig")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestSweepAdmits: the waiting flows are tried on the subnet up, each
// admitted or refused with the port, the tables written once, and the
// last decision carries what the write took.
func TestSweepAdmits(t *testing.T) {
	var rec recorder
	m := newManager(t, &rec, req("ok", "a", "b", 400), req("huge", "a", "b", 60000), req("nohost", "a", "z", 1))
	p := &fakePaths{paths: map[string][]qos.Link{"a>b": {link(1, 1), link(2, 3)}}}
	w := &fakeTables{written: qosmgr.Written{Blocks: 4, SMPs: 5, Problems: []string{"n2[3]: timeout"}}}
	problems, err := m.Sweep(context.Background(), p, w)
	require.NoError(t, err)
	assert.Equal(t, []string{"n2[3]: timeout"}, problems)
	assert.Equal(t, 1, w.writes)
	require.Equal(t, []qosmgr.Action{qosmgr.ActionAdmit, qosmgr.ActionReject, qosmgr.ActionReject}, rec.actions())
	for _, e := range rec.events {
		assert.Equal(t, "qos", e.Event)
	}
	assert.Len(t, rec.events[0].Flow.Hops, 2)
	assert.NotEmpty(t, rec.events[1].Port, "the port that refused")
	assert.Contains(t, rec.events[2].Reason, "z")
	last := rec.events[2]
	assert.Equal(t, 4, last.Blocks)
	assert.EqualValues(t, 5, last.SMPs)
	assert.Zero(t, rec.events[0].Blocks, "only the last decision carries the cost")
	assert.NotZero(t, m.HighTable(qos.PortKey{GUID: 2, Port: 3}), "the reservation")
	assert.Zero(t, m.HighTable(qos.PortKey{GUID: 9, Port: 1}), "a port without flows")
	assert.NotZero(t, m.HighLimit(2048))

	// A failed write sends no decision out.
	rec.events = nil
	w.err = errors.New("port gone")
	_, err = m.Sweep(context.Background(), p, w)
	assert.Error(t, err)
	assert.Empty(t, rec.events)
}

// TestSweepResyncs: a flow whose path is unchanged is left alone; one
// whose route moved is rerouted, or lost when the new path refuses it or
// there is none.
func TestSweepResyncs(t *testing.T) {
	first := []qos.Link{link(1, 1), link(2, 3)}
	moved := []qos.Link{link(1, 1), link(2, 4)}
	for _, tc := range []struct {
		name  string
		paths map[string][]qos.Link
		err   error
		want  []qosmgr.Action
	}{
		{"unchanged", map[string][]qos.Link{"a>b": first}, nil, nil},
		{"moved", map[string][]qos.Link{"a>b": moved}, nil, []qosmgr.Action{qosmgr.ActionReroute}},
		{"moved onto a full port", map[string][]qos.Link{"a>b": {link(1, 1), {Key: qos.PortKey{GUID: 2, Port: 4},
			Name: "slow", Rate: 1_000_000, MTU: 2048, DataVLs: 8}}}, nil, []qosmgr.Action{qosmgr.ActionLost}},
		{"broken", nil, errors.New("sw1 does not route LID 7"), []qosmgr.Action{qosmgr.ActionLost}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			m := newManager(t, &rec, req("f", "a", "b", 400))
			w := &fakeTables{}
			_, err := m.Sweep(context.Background(), &fakePaths{paths: map[string][]qos.Link{"a>b": first}}, w)
			require.NoError(t, err)
			rec.events = nil
			p := &fakePaths{paths: tc.paths, err: map[string]error{"a>b": tc.err}}
			_, err = m.Sweep(context.Background(), p, w)
			require.NoError(t, err)
			require.Equal(t, tc.want, rec.actions())
			list, _ := m.Serve(context.Background(), qosmgr.OpList, qos.Request{}, nil, w)
			if tc.want != nil && tc.want[0] == qosmgr.ActionLost {
				assert.Empty(t, list.Flows, "a lost flow holds nothing")
				assert.Zero(t, m.HighTable(qos.PortKey{GUID: 2, Port: 3}))
				return
			}
			require.Len(t, list.Flows, 1)
			assert.Equal(t, tc.paths["a>b"][1].Key, list.Flows[0].Keys()[1])
		})
	}
}

// TestServe: the control calls, each against a manager that admitted
// flow "f" and holds "w" waiting.
func TestServe(t *testing.T) {
	path := []qos.Link{link(1, 1), link(2, 3)}
	for _, tc := range []struct {
		name   string
		op     qosmgr.Op
		req    qos.Request
		down   bool // the subnet is not up
		action qosmgr.Action
		writes int
		flows  int // admitted after
		wait   int // waiting after
	}{
		{"add", qosmgr.OpAdd, req("g", "a", "b", 100), false, qosmgr.ActionAdmit, 1, 2, 1},
		{"add while down", qosmgr.OpAdd, req("g", "a", "b", 100), true, qosmgr.ActionPending, 0, 1, 2},
		{"add an admitted id", qosmgr.OpAdd, req("f", "a", "b", 100), false, qosmgr.ActionReject, 0, 1, 1},
		{"add a waiting id", qosmgr.OpAdd, req("w", "a", "b", 100), false, qosmgr.ActionReject, 0, 1, 1},
		{"add a bad request", qosmgr.OpAdd, req("g", "a", "b", -1), false, qosmgr.ActionReject, 0, 1, 1},
		{"add without a path", qosmgr.OpAdd, req("g", "a", "z", 100), false, qosmgr.ActionReject, 1, 1, 1},
		{"del", qosmgr.OpDel, qos.Request{ID: "f"}, false, qosmgr.ActionRelease, 1, 0, 1},
		{"del a waiting one", qosmgr.OpDel, qos.Request{ID: "w"}, true, qosmgr.ActionRelease, 0, 1, 0},
		{"del an unknown id", qosmgr.OpDel, qos.Request{ID: "x"}, false, qosmgr.ActionReject, 0, 1, 1},
		{"an unknown op", qosmgr.Op(9), qos.Request{ID: "x"}, false, qosmgr.ActionReject, 0, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			m := newManager(t, &rec, req("f", "a", "b", 400))
			p := &fakePaths{paths: map[string][]qos.Link{"a>b": path}}
			_, err := m.Sweep(context.Background(), p, &fakeTables{})
			require.NoError(t, err)
			_, err = m.Serve(context.Background(), qosmgr.OpAdd, req("w", "a", "b", 1), nil, &fakeTables{})
			require.NoError(t, err)
			rec.events = nil

			w := &fakeTables{written: qosmgr.Written{Blocks: 2, SMPs: 2}}
			var serve qosmgr.Paths = p
			if tc.down {
				serve = nil
			}
			r, err := m.Serve(context.Background(), tc.op, tc.req, serve, w)
			require.NoError(t, err)
			require.NotNil(t, r.Event)
			assert.Equal(t, tc.action, r.Event.Action, r.Event.Reason)
			assert.Equal(t, []qosmgr.Event{*r.Event}, rec.events, "the reply's event is the one sent out")
			assert.Equal(t, tc.writes, w.writes)
			if tc.writes > 0 {
				assert.Equal(t, 2, r.Event.Blocks)
			}
			list, err := m.Serve(context.Background(), qosmgr.OpList, qos.Request{}, nil, w)
			require.NoError(t, err)
			assert.Len(t, list.Flows, tc.flows)
			assert.Len(t, list.Waiting, tc.wait)
		})
	}
}

// TestServeList: a list reports every port a flow crosses with what it
// reserved there.
func TestServeList(t *testing.T) {
	var rec recorder
	m := newManager(t, &rec, req("f", "a", "b", 400))
	_, err := m.Sweep(context.Background(), &fakePaths{paths: map[string][]qos.Link{"a>b": {link(1, 1), link(2, 3)}}}, &fakeTables{})
	require.NoError(t, err)
	r, err := m.Serve(context.Background(), qosmgr.OpList, qos.Request{}, nil, &fakeTables{})
	require.NoError(t, err)
	require.Len(t, r.Ports, 2)
	for _, p := range r.Ports {
		assert.Positive(t, p.Weight, "%s[%d]", p.GUID, p.Port)
		assert.Less(t, p.Weight, p.Budget)
	}
	assert.Equal(t, "0x0000000000000001", r.Ports[0].GUID)
}

// TestServeWriteProblems: a decision whose write failed on a port says
// so, and the write's error reaches the caller.
func TestServeWriteProblems(t *testing.T) {
	var rec recorder
	m := newManager(t, &rec)
	w := &fakeTables{written: qosmgr.Written{Problems: []string{"n2[3]: timeout"}}, err: errors.New("cancelled")}
	p := &fakePaths{paths: map[string][]qos.Link{"a>b": {link(1, 1), link(2, 3)}}}
	r, err := m.Serve(context.Background(), qosmgr.OpAdd, req("g", "a", "b", 100), p, w)
	assert.Error(t, err)
	require.NotNil(t, r.Event)
	assert.Equal(t, qosmgr.ActionAdmit, r.Event.Action)
	assert.Equal(t, "writing tables: n2[3]: timeout", r.Event.Reason)
}

func TestActionText(t *testing.T) {
	for _, a := range []qosmgr.Action{qosmgr.ActionAdmit, qosmgr.ActionReject, qosmgr.ActionPending,
		qosmgr.ActionRelease, qosmgr.ActionReroute, qosmgr.ActionLost} {
		b, err := a.MarshalText()
		require.NoError(t, err)
		var back qosmgr.Action
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, a, back)
	}
	var a qosmgr.Action
	assert.ErrorIs(t, a.UnmarshalText([]byte("admitted")), routing.ErrConfig)
}
