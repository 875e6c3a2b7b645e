package webview

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// star is sw1 with ca1 on port 1 and ca2 on port 2: a one-leaf fat tree.
func star(t *testing.T) *topologies.Topology {
	t.Helper()
	topo := topologies.New()
	sw, err := topo.AddNode(topologies.Node{Type: topologies.Switch, Name: "sw1", NumPorts: 2, GUID: 0x1000})
	require.NoError(t, err)
	for i, name := range []string{"ca1", "ca2"} {
		ca, err := topo.AddNode(topologies.Node{Type: topologies.CA, Name: name, NumPorts: 1, GUID: uint64(0x2000 + 0x100*i)})
		require.NoError(t, err)
		require.NoError(t, topo.Connect(topologies.PortRef{Node: sw, Port: i + 1}, topologies.PortRef{Node: ca, Port: 1}, 0, 0))
	}
	return topo
}

// port is a port's status with state, a rate and PortXmitData words.
func port(n int, state string, rate, words uint64) nodeproc.PortStatus {
	p := nodeproc.PortStatus{Port: n, Phys: "LinkUp", State: state, Rate: rate}
	p.Counters.PortXmitData = words
	return p
}

// status is a status of star: every port Active at 8 Gb/s, sw1's ports
// having sent sw[i] words, ca1 and ca2 ca[i].
func status(sw, ca [2]uint64) *harness.FabricStatus {
	const rate = 8e9
	node := func(name, typ string, ports ...nodeproc.PortStatus) harness.NodeStatus {
		return harness.NodeStatus{Status: nodeproc.Status{Name: name, Type: typ, Ports: ports}, Alive: true}
	}
	return &harness.FabricStatus{Fabric: "f", TimeScale: 1, Nodes: []harness.NodeStatus{
		node("sw1", "switch", port(1, "Active", rate, sw[0]), port(2, "Active", rate, sw[1])),
		node("ca1", "hca", port(1, "Active", rate, ca[0])),
		node("ca2", "hca", port(1, "Active", rate, ca[1])),
	}}
}

func TestUtilization(t *testing.T) {
	const rate = 8e9 // 8 Gb/s: 250e6 words/s
	tests := []struct {
		name        string
		base, now   uint64
		dt          time.Duration
		rate        uint64
		scale, want float64
	}{
		{"idle", 100, 100, time.Second, rate, 1, 0},
		{"half", 0, 125e6, time.Second, rate, 1, 0.5},
		{"half in half a second", 0, 62.5e6, time.Second / 2, rate, 1, 0.5},
		{"full", 0, 250e6, time.Second, rate, 1, 1},
		{"over is capped", 0, 500e6, time.Second, rate, 1, 1},
		{"time scale 10: a tenth of the rate is full", 0, 25e6, time.Second, rate, 10, 1},
		{"counter reset", 1000, 10, time.Second, rate, 1, 0},
		{"no rate (never trained)", 0, 100, time.Second, 0, 1, 0},
		{"no window", 0, 100, 0, rate, 1, 0},
		{"scale 0 is 1", 0, 125e6, time.Second, rate, 0, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := utilization(port(1, "Active", tt.rate, tt.base), port(1, "Active", tt.rate, tt.now), tt.dt, tt.scale)
			assert.InDelta(t, tt.want, got, 1e-9)
		})
	}
}

func TestBuildFabric(t *testing.T) {
	topo := star(t)
	layout, err := topologies.LayoutFatTree(topo)
	require.NoError(t, err)
	t0 := time.Unix(1000, 0)
	base := sample{at: t0, st: status([2]uint64{0, 0}, [2]uint64{0, 0})}
	cur := status([2]uint64{125e6, 0}, [2]uint64{0, 25e6})
	cur.Nodes[2].Ports[0].State = "Init"
	cur.Nodes[2].Ports[0].Drops = map[string]uint64{"no_credit": 3}
	cur.Nodes[1].Ports[0].Counters.SymbolErrorCounter = 2
	now := sample{at: t0.Add(time.Second), st: cur}

	f := buildFabric(topo, fatTreePositions(topo, layout), base, now)
	assert.Equal(t, LayoutFatTree, f.Layout)
	assert.Equal(t, time.Second, f.Window)
	require.Len(t, f.Nodes, 3)
	require.Len(t, f.Links, 2)
	byID := map[string]Link{}
	for _, l := range f.Links {
		byID[l.ID] = l
	}
	l1, l2 := byID["sw1[1]-ca1[1]"], byID["sw1[2]-ca2[1]"]
	assert.Equal(t, "Active", l1.State)
	assert.InDelta(t, 0.5, l1.Utilization, 1e-9, "the busier direction: sw1 to ca1")
	assert.Equal(t, uint64(2), l1.B.Errors)
	assert.Equal(t, "Init", l2.State, "the lower end's state")
	assert.InDelta(t, 0.1, l2.Utilization, 1e-9)
	assert.Equal(t, uint64(3), l2.B.Drops)
	nodes := map[string]Node{}
	for _, n := range f.Nodes {
		nodes[n.Name] = n
	}
	assert.Less(t, nodes["sw1"].Y, nodes["ca1"].Y, "the switch above its hosts")
	assert.Less(t, nodes["ca1"].X, nodes["ca2"].X, "hosts in host order")
	assert.Equal(t, uint64(3), nodes["ca2"].Drops)
	assert.Equal(t, uint64(3), nodes["ca2"].NewDrops, "all three since base")
	assert.Equal(t, uint64(2), l1.B.NewErrors)

	// No base yet: no window, nothing busy. No layout: the page places.
	f = buildFabric(topo, nil, sample{}, now)
	assert.Equal(t, LayoutForce, f.Layout)
	assert.Zero(t, f.Window)
	for _, l := range f.Links {
		assert.Zero(t, l.Utilization, l.ID)
	}
	b, err := json.Marshal(f)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"layout":"force"`)
}

// TestDropMarks: a port is marked by what its drops and errors rose by
// over the window, not by its totals, which the view keeps beside.
func TestDropMarks(t *testing.T) {
	topo := star(t)
	t0 := time.Unix(1000, 0)
	// with is star's status where ca2's port has dropped drops and
	// counted errs symbol errors since it started.
	with := func(drops uint64, errs uint16) *harness.FabricStatus {
		st := status([2]uint64{}, [2]uint64{})
		st.Nodes[2].Ports[0].Drops = map[string]uint64{"no_credit": drops}
		st.Nodes[2].Ports[0].Counters.SymbolErrorCounter = errs
		return st
	}
	tests := []struct {
		name                string
		base                *harness.FabricStatus // nil: no window yet
		now                 *harness.FabricStatus
		newDrops, newErrors uint64
	}{
		{"old drops are no mark", with(3, 2), with(3, 2), 0, 0},
		{"drops rose", with(3, 2), with(5, 2), 2, 0},
		{"errors rose", with(3, 2), with(3, 7), 0, 5},
		{"both rose", with(0, 0), with(1, 1), 1, 1},
		{"no window yet", nil, with(5, 5), 0, 0},
		{"counters reset", with(9, 9), with(1, 1), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := sample{}
			if tt.base != nil {
				base = sample{at: t0, st: tt.base}
			}
			f := buildFabric(topo, nil, base, sample{at: t0.Add(time.Second), st: tt.now})
			var end LinkEnd
			for _, l := range f.Links {
				if l.B.Node == "ca2" {
					end = l.B
				}
			}
			want := tt.now.Nodes[2].Ports[0]
			assert.Equal(t, portDrops(want), end.Drops, "the total kept")
			assert.Equal(t, portErrors(want.Counters), end.Errors, "the total kept")
			assert.Equal(t, tt.newDrops, end.NewDrops)
			assert.Equal(t, tt.newErrors, end.NewErrors)
			n := f.Nodes[2]
			require.Equal(t, "ca2", n.Name)
			assert.Equal(t, [2]uint64{tt.newDrops, tt.newErrors}, [2]uint64{n.NewDrops, n.NewErrors}, "the node's sum")
		})
	}
}

func TestDiff(t *testing.T) {
	at := time.Unix(2000, 0)
	prev := status([2]uint64{}, [2]uint64{})
	tests := []struct {
		name   string
		change func(*harness.FabricStatus)
		want   []Event
	}{
		{"nothing", func(*harness.FabricStatus) {}, nil},
		{"port down", func(s *harness.FabricStatus) { s.Nodes[0].Ports[1].State = "Down" },
			[]Event{{Time: at, Kind: EventPortState, Node: "sw1", Port: 2, From: "Active", To: "Down"}}},
		{"drops", func(s *harness.FabricStatus) { s.Nodes[1].Ports[0].Drops = map[string]uint64{"x": 4} },
			[]Event{{Time: at, Kind: EventDrops, Node: "ca1", Port: 1, Delta: 4}}},
		{"errors count as drops", func(s *harness.FabricStatus) { s.Nodes[1].Ports[0].Counters.PortRcvErrors = 1 },
			[]Event{{Time: at, Kind: EventDrops, Node: "ca1", Port: 1, Delta: 1}}},
		{"node died: its death, not its ports", func(s *harness.FabricStatus) {
			s.Nodes[2].Alive, s.Nodes[2].Error = false, "process not running"
			s.Nodes[2].Ports[0].State = "Unknown"
		}, []Event{{Time: at, Kind: EventNodeDied, Node: "ca2", Error: "process not running"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := status([2]uint64{}, [2]uint64{})
			tt.change(cur)
			assert.Equal(t, tt.want, diff(prev, cur, at))
		})
	}
	dead := status([2]uint64{}, [2]uint64{})
	dead.Nodes[2].Alive = false
	dead.Nodes[2].Ports[0].State = "Unknown"
	back := status([2]uint64{}, [2]uint64{})
	back.Nodes[2].Ports[0].State = "Init"
	assert.Equal(t, []Event{{Time: at, Kind: EventNodeAlive, Node: "ca2"}}, diff(dead, back, at), "a restart: no port change from Unknown")
}

// fakeFabric is a fabric whose status the test sets.
type fakeFabric struct {
	mu  sync.Mutex
	st  *harness.FabricStatus
	err error
}

func (f *fakeFabric) set(st *harness.FabricStatus, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st, f.err = st, err
}

func (f *fakeFabric) status(context.Context, string) (*harness.FabricStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st, f.err
}

func TestServer(t *testing.T) {
	topo := star(t)
	fake := &fakeFabric{st: status([2]uint64{}, [2]uint64{})}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("m 1\n")) })
	s, err := New(Config{Name: "f", Interval: 10 * time.Millisecond, Metrics: metrics, Status: fake.status,
		Topology: func(string) (*topologies.Topology, error) { return topo, nil }})
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Close() // before ts.Close: it ends the event stream

	get := func(path string) (int, string) {
		r, err := http.Get(ts.URL + path)
		require.NoError(t, err)
		defer r.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(r.Body).WriteTo(&b)
		return r.StatusCode, b.String()
	}
	code, body := get("/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "vendor/cytoscape.min.js")
	code, body = get("/vendor/cytoscape.min.js")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "Cytoscape Consortium")
	code, body = get("/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "m 1\n", body)
	code, body = get("/api/fabric")
	assert.Equal(t, http.StatusOK, code)
	var f Fabric
	require.NoError(t, json.Unmarshal([]byte(body), &f))
	assert.Len(t, f.Links, 2)
	code, body = get("/api/node/ca1")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"PortXmitData"`)
	code, body = get("/api/node/nosuch")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, "has no node nosuch")

	// The event stream: its greeting, then a port going down, then the
	// fabric going away.
	r, err := http.Get(ts.URL + "/api/events")
	require.NoError(t, err)
	defer r.Body.Close()
	events := make(chan Event, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var e Event
				if json.Unmarshal([]byte(data), &e) == nil {
					events <- e
				}
			}
		}
	}()
	next := func() Event {
		select {
		case e := <-events:
			return e
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
		return Event{}
	}
	assert.Equal(t, EventFabricUp, next().Kind)
	down := status([2]uint64{}, [2]uint64{})
	down.Nodes[1].Ports[0].State = "Down"
	fake.set(down, nil)
	e := next()
	assert.Equal(t, EventPortState, e.Kind)
	assert.Equal(t, "ca1", e.Node)
	assert.Equal(t, "Down", e.To)
	fake.set(nil, errors.New(`fabric "f" is not up`))
	e = next()
	assert.Equal(t, EventFabricDown, e.Kind)
	assert.Contains(t, e.Error, "is not up")
	code, body = get("/api/fabric")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, `"fabric":"f"`)
	code, _ = get("/api/node/ca1")
	assert.Equal(t, http.StatusServiceUnavailable, code)

	// Close ends the stream and the poller (goleak checks the rest).
	require.NoError(t, s.Close())
	for range events {
	}
}

func TestNewFails(t *testing.T) {
	notUp := errors.New(`fabric "x" is not up`)
	_, err := New(Config{Name: "x", Topology: func(string) (*topologies.Topology, error) { return nil, notUp }})
	assert.ErrorIs(t, err, notUp)
	_, err = New(Config{Name: "x", Topology: func(string) (*topologies.Topology, error) { return star(t), nil },
		Status: func(context.Context, string) (*harness.FabricStatus, error) { return nil, notUp }})
	assert.ErrorIs(t, err, notUp)
}

func TestEnumText(t *testing.T) {
	for k := EventPortState; k <= EventFabricUp; k++ {
		b, err := k.MarshalText()
		require.NoError(t, err)
		assert.NotContains(t, string(b), "EventKind")
		var back EventKind
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, k, back)
	}
	_, err := EventKind(99).MarshalText()
	assert.Error(t, err)
	_, err = Layout(9).MarshalText()
	assert.Error(t, err)
	var l Layout
	require.NoError(t, l.UnmarshalText([]byte("fattree")))
	assert.Equal(t, LayoutFatTree, l)
	assert.Error(t, l.UnmarshalText([]byte("circle")))
}

// TestFatTreePositions: every node placed, none within a node's size of
// another, the drawing about as high as wide, each stage on a row above
// the one below, and each host in its leaf's block under it, nearer its
// own leaf than any other.
func TestFatTreePositions(t *testing.T) {
	rlft, err := topologies.RLFT(2, 3)
	require.NoError(t, err)
	ft144, err := topologies.FatTree(12, 6, 12)
	require.NoError(t, err)
	wide, err := topologies.FatTree(2, 2, 16)
	require.NoError(t, err)
	tests := []struct {
		name string
		topo *topologies.Topology
	}{{"star", star(t)}, {"rlft 2 3", rlft}, {"fat tree 144 hosts", ft144}, {"2 leaves of 16", wide}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := topologies.LayoutFatTree(tt.topo)
			require.NoError(t, err)
			pos := fatTreePositions(tt.topo, l)
			require.Len(t, pos, tt.topo.NumNodes())
			checkSpacing(t, tt.topo, pos)
			checkRows(t, tt.topo, l, pos)
			checkHostsUnderLeaves(t, tt.topo, l, pos)
		})
	}
}

// checkSpacing fails when two nodes are nearer than a node and its label
// need, or the drawing is far from square.
func checkSpacing(t *testing.T, topo *topologies.Topology, pos map[int][2]float64) {
	t.Helper()
	lo, hi := [2]float64{math.Inf(1), math.Inf(1)}, [2]float64{math.Inf(-1), math.Inf(-1)}
	for i, p := range pos {
		for d := range 2 {
			lo[d], hi[d] = min(lo[d], p[d]), max(hi[d], p[d])
		}
		for j, q := range pos {
			if i < j && math.Hypot(p[0]-q[0], p[1]-q[1]) < 40 {
				t.Errorf("%s at %v and %s at %v overlap", topo.Node(i).Name, p, topo.Node(j).Name, q)
			}
		}
	}
	w, h := hi[0]-lo[0], hi[1]-lo[1]
	t.Logf("%d nodes in %.0f x %.0f", topo.NumNodes(), w, h)
	if topo.NumNodes() > 10 {
		assert.InDelta(t, 1, w/h, 0.5, "width %.0f, height %.0f", w, h)
	}
}

// checkRows fails unless each switch stage is one row, above the stage
// below and the hosts.
func checkRows(t *testing.T, topo *topologies.Topology, l *topologies.FatTreeLayout, pos map[int][2]float64) {
	t.Helper()
	rowY := map[int]float64{}
	hostTop := math.Inf(1)
	for _, h := range l.Hosts {
		hostTop = min(hostTop, pos[h][1])
	}
	for i, p := range pos {
		s := l.Stage(i)
		if s == 0 {
			continue
		}
		if y, ok := rowY[s]; ok {
			assert.Equal(t, y, p[1], "%s: stage %d's row", topo.Node(i).Name, s)
		}
		rowY[s] = p[1]
		assert.Less(t, p[1], hostTop, "%s above the hosts", topo.Node(i).Name)
	}
	for s := 2; s <= l.Stages; s++ {
		assert.Less(t, rowY[s], rowY[s-1], "stage %d above stage %d", s, s-1)
	}
}

// checkHostsUnderLeaves fails unless every host is below its leaf and
// nearer it, across, than any other leaf, and hosts of a leaf keep host
// order in reading order.
func checkHostsUnderLeaves(t *testing.T, topo *topologies.Topology, l *topologies.FatTreeLayout, pos map[int][2]float64) {
	t.Helper()
	for h, n := range l.Hosts {
		li, ok := l.Leaf(h)
		require.True(t, ok)
		p, own := pos[n], pos[l.Leaves[li]]
		assert.Greater(t, p[1], own[1], "%s below its leaf", topo.Node(n).Name)
		for lj, other := range l.Leaves {
			if lj != li {
				assert.Less(t, math.Abs(p[0]-own[0]), math.Abs(p[0]-pos[other][0]), "%s nearer its leaf than %s", topo.Node(n).Name, topo.Node(other).Name)
			}
		}
		if lp, _ := l.Leaf(h - 1); h > 0 && lp == li {
			q := pos[l.Hosts[h-1]]
			assert.True(t, q[1] < p[1] || q[1] == p[1] && q[0] < p[0], "host %d before host %d", h-1, h)
		}
	}
}

// TestServerTopologyChange: nodes added to the fabric appear on the map,
// and a fabric brought up again after a teardown starts afresh.
func TestServerTopologyChange(t *testing.T) {
	var mu sync.Mutex
	topo := star(t)
	fake := &fakeFabric{st: status([2]uint64{}, [2]uint64{})}
	s, err := New(Config{Name: "f", Interval: 5 * time.Millisecond, Status: fake.status,
		Topology: func(string) (*topologies.Topology, error) {
			mu.Lock()
			defer mu.Unlock()
			return topo.Clone(), nil
		}})
	require.NoError(t, err)
	defer s.Close()
	nodes := func() int {
		v := s.view()
		if v.err != nil {
			return -1
		}
		var f Fabric
		require.NoError(t, json.Unmarshal(v.fabric, &f))
		return len(f.Nodes)
	}
	assert.Equal(t, 3, nodes())

	// ibfab add: a fourth node in the topology and in the status.
	mu.Lock()
	_, err = topo.AddNode(topologies.Node{Type: topologies.CA, Name: "ca3", NumPorts: 1, GUID: 0x9000})
	mu.Unlock()
	require.NoError(t, err)
	added := status([2]uint64{}, [2]uint64{})
	added.Nodes = append(added.Nodes, harness.NodeStatus{Status: nodeproc.Status{Name: "ca3", Type: "hca",
		Ports: []nodeproc.PortStatus{port(1, "Down", 0, 0)}}, Alive: true})
	fake.set(added, nil)
	assert.Eventually(t, func() bool { return nodes() == 4 }, 5*time.Second, 5*time.Millisecond)

	// Down, then up again with fresh counters: no utilization from the
	// old fabric's counters, no state changes from it either.
	fake.set(nil, errors.New("not up"))
	assert.Eventually(t, func() bool { return nodes() == -1 }, 5*time.Second, 5*time.Millisecond)
	again := *added
	fake.set(&again, nil)
	assert.Eventually(t, func() bool { return nodes() == 4 }, 5*time.Second, 5*time.Millisecond)
	v := s.view()
	assert.Same(t, &again, v.now.st)
	if v.base.st != nil {
		assert.Same(t, &again, v.base.st, "the samples start at the new fabric")
	}
}

// slowFabric answers New's status at once and blocks its second poll
// until released, counting the polls in flight.
type slowFabric struct {
	first, later *harness.FabricStatus
	release      chan struct{}
	calls        atomic.Int32
	inFlight     atomic.Int32
	maxInFlight  atomic.Int32
	blockedAt    atomic.Int64 // unix ns the blocked poll started
	cancelled    atomic.Bool
}

func (f *slowFabric) status(ctx context.Context, _ string) (*harness.FabricStatus, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for m := f.maxInFlight.Load(); n > m && !f.maxInFlight.CompareAndSwap(m, n); m = f.maxInFlight.Load() {
	}
	switch f.calls.Add(1) {
	case 1:
		return f.first, nil
	case 2:
		f.blockedAt.Store(time.Now().UnixNano())
		select {
		case <-f.release:
		case <-ctx.Done():
			f.cancelled.Store(true)
			return nil, ctx.Err()
		}
	}
	return f.later, nil
}

// TestServerSlowPoll: while a poll waits on a status that takes many
// intervals (a loaded fabric's), the API answers at once from the last
// completed poll, the poll is not cut off, and no second poll starts
// beside it.
func TestServerSlowPoll(t *testing.T) {
	const interval = 10 * time.Millisecond
	down := status([2]uint64{}, [2]uint64{})
	down.Nodes[1].Ports[0].State = "Down"
	fake := &slowFabric{first: status([2]uint64{}, [2]uint64{}), later: down, release: make(chan struct{})}
	s, err := New(Config{Name: "f", Interval: interval, Status: fake.status,
		Topology: func(string) (*topologies.Topology, error) { return star(t), nil }})
	require.NoError(t, err)
	defer s.Close()
	linkState := func() (int, string) {
		done := make(chan *httptest.ResponseRecorder)
		go func() {
			w := httptest.NewRecorder()
			s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/fabric", nil))
			done <- w
		}()
		select {
		case w := <-done:
			var f Fabric
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &f) != nil {
				return w.Code, ""
			}
			return w.Code, f.Links[0].State
		case <-time.After(time.Second):
			t.Fatal("/api/fabric waited for the poll")
		}
		return 0, ""
	}
	require.Eventually(t, func() bool { return fake.inFlight.Load() == 1 && fake.calls.Load() == 2 },
		5*time.Second, time.Millisecond, "the second poll blocks")
	// Past what the old deadline (five intervals) allowed a poll.
	for time.Since(time.Unix(0, fake.blockedAt.Load())) < 20*interval {
		code, state := linkState()
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "Active", state, "the first poll's view")
	}
	assert.False(t, fake.cancelled.Load(), "a slow poll is not cut off")
	close(fake.release)
	require.Eventually(t, func() bool { _, state := linkState(); return state == "Down" }, 5*time.Second, time.Millisecond)
	assert.EqualValues(t, 1, fake.maxInFlight.Load(), "the poller never overlaps itself")
}
