package webview

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"ibfab/harness"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

//go:embed assets
var assets embed.FS

// DefaultInterval is how often a server polls the fabric's status: often
// enough that a cut link shows within a second, rarely enough that a
// fabric of a hundred nodes, each polled over its control socket, is not
// slowed by its own view.
const DefaultInterval = 500 * time.Millisecond

// window is the span utilizations and new drops are measured over.
const window = time.Second

// pollTimeout bounds one poll. harness.Status bounds each node's answer
// itself (5 s); under traffic a 144-host fat tree answers in 2 to 5 s as
// a whole, so a deadline of a few intervals cut off the nodes still
// answering and showed them dead. A slow poll holds no request up:
// every request answers from the last completed poll.
const pollTimeout = 30 * time.Second

// Config is what a Server shows and how.
type Config struct {
	// Name is the fabric's name.
	Name string
	// Interval is how often the status is polled; 0 is DefaultInterval.
	Interval time.Duration
	// Metrics, when set, is mounted at /metrics (a Prometheus handler).
	Metrics http.Handler
	// Status and Topology read the fabric; nil is harness.Status and
	// harness.Topology. Tests give fakes.
	Status   func(ctx context.Context, name string) (*harness.FabricStatus, error)
	Topology func(name string) (*topologies.Topology, error)
}

// Server is the web view of one fabric: an http.Handler, and the one
// goroutine that polls the fabric for every client.
type Server struct {
	cfg Config
	mux *http.ServeMux

	cancel context.CancelFunc
	done   chan struct{} // closed when the poller has stopped
	closed chan struct{} // closed by Close: event streams end

	// The poller's own state, written by New and then by the poll
	// goroutine alone: requests never read it, so no lock.
	topo    *topologies.Topology
	pos     map[int][2]float64 // the fat-tree layout's places; nil: the page lays out
	samples []sample           // the last window's polls, oldest first
	err     error              // the last poll's error; nil when it read the status

	mu   sync.Mutex
	last *snapshot // the last completed poll's view, what every request answers from
	subs map[chan Event]struct{}
}

// snapshot is one completed poll as the API serves it. It is not changed
// once published: a request takes it under the lock and reads it after.
type snapshot struct {
	err       error  // the poll's error; nil when it read the status
	base, now sample // the window's ends; base.st is nil before a window
	fabric    []byte // /api/fabric's body, encoded once per poll
}

// New reads the fabric's topology and status once, failing as ibfab
// status does for a fabric that is not up, and starts polling it. Close
// stops the polling.
func New(cfg Config) (*Server, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Status == nil {
		cfg.Status = harness.Status
	}
	if cfg.Topology == nil {
		cfg.Topology = harness.Topology
	}
	t, err := cfg.Topology(cfg.Name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, err := cfg.Status(ctx, cfg.Name)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &Server{cfg: cfg, cancel: cancel, done: make(chan struct{}), closed: make(chan struct{}),
		subs: map[chan Event]struct{}{}}
	s.setTopology(t)
	s.samples = []sample{{at: time.Now(), st: st}}
	s.last = s.snapshot()
	s.routes()
	go s.poll(ctx)
	return s, nil
}

// Close stops the poller and ends every event stream; it returns when
// the poller has stopped. Call it before shutting the http.Server down,
// which otherwise waits for the streams.
func (s *Server) Close() error {
	s.mu.Lock()
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	s.mu.Unlock()
	s.cancel()
	<-s.done
	return nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	static, _ := fs.Sub(assets, "assets") // a constant path: cannot fail
	s.mux.Handle("/", http.FileServerFS(static))
	s.mux.HandleFunc("GET /api/fabric", s.handleFabric)
	s.mux.HandleFunc("GET /api/node/{name}", s.handleNode)
	s.mux.HandleFunc("GET /api/events", s.handleEvents)
	if s.cfg.Metrics != nil {
		s.mux.Handle("/metrics", s.cfg.Metrics)
	}
}

// setTopology makes t the map's topology and lays it out, once per
// topology rather than per view.
func (s *Server) setTopology(t *topologies.Topology) {
	s.topo, s.pos = t, nil
	// Not a fat tree is no error: the page lays the fabric out itself.
	if l, err := topologies.LayoutFatTree(t); err == nil && len(l.Hosts) > 0 {
		s.pos = fatTreePositions(t, l)
	}
}

// needTopology reports whether the topology must be read again before
// st is shown: nodes were added (ibfab add), or the fabric was down and
// may have been brought up again as another.
func (s *Server) needTopology(st *harness.FabricStatus) bool {
	return s.err != nil || len(st.Nodes) != s.topo.NumNodes()
}

// poll reads the status every interval until ctx ends, keeps the last
// window's samples and sends the changes to the event streams. It never
// overlaps itself: one goroutine polls in turn, and a tick that falls
// due while a poll runs starts the next as soon as it ends (time.Ticker
// drops the ticks missed meanwhile).
func (s *Server) poll(ctx context.Context) {
	defer close(s.done)
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, pollTimeout)
		st, err := s.cfg.Status(pctx, s.cfg.Name)
		cancel()
		var t *topologies.Topology
		if err == nil && s.needTopology(st) {
			t, err = s.cfg.Topology(s.cfg.Name)
		}
		if ctx.Err() != nil {
			return
		}
		s.record(time.Now(), st, t, err)
	}
}

// record adds one poll's result, publishes its view and sends what
// changed. t, when not nil, is the topology read again for st. The view
// is built before the lock is taken, so that requests meanwhile answer
// from the previous one at once.
func (s *Server) record(at time.Time, st *harness.FabricStatus, t *topologies.Topology, err error) {
	var ev []Event
	switch {
	case err != nil && s.err == nil:
		ev = append(ev, Event{Time: at, Kind: EventFabricDown, Error: err.Error()})
	case err == nil && s.err != nil:
		ev = append(ev, Event{Time: at, Kind: EventFabricUp})
		// A fabric brought up again starts afresh: its counters are
		// new, and its states are no changes from the old fabric's.
		s.samples = nil
	}
	s.err = err
	if t != nil && err == nil {
		s.setTopology(t)
	}
	if err == nil {
		if n := len(s.samples); n > 0 {
			ev = append(ev, diff(s.samples[n-1].st, st, at)...)
		}
		s.samples = append(s.samples, sample{at: at, st: st})
		// Keep the newest sample at least a window old as the base.
		k := 0
		for k+1 < len(s.samples) && at.Sub(s.samples[k+1].at) >= window {
			k++
		}
		s.samples = append(s.samples[:0], s.samples[k:]...)
	}
	snap := s.snapshot()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = snap
	for _, e := range ev {
		for c := range s.subs {
			select {
			case c <- e:
			default: // a stalled client loses events, never the poller's time
			}
		}
	}
}

// snapshot is the view of the poller's state now: the map built and
// encoded, or the last poll's error.
func (s *Server) snapshot() *snapshot {
	if s.err != nil {
		return &snapshot{err: s.err}
	}
	snap := &snapshot{now: s.samples[len(s.samples)-1]}
	if len(s.samples) > 1 {
		snap.base = s.samples[0]
	}
	b, err := json.Marshal(buildFabric(s.topo, s.pos, snap.base, snap.now))
	if err != nil { // plain structs and strings: cannot fail
		return &snapshot{err: err}
	}
	snap.fabric = b
	return snap
}

// view returns the last completed poll's view.
func (s *Server) view() *snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// apiError is the body of every API error: the page shows Error, and
// Running tells it the fabric is gone rather than a request bad.
type apiError struct {
	Error   string `json:"error"`
	Fabric  string `json:"fabric"`
	Running bool   `json:"running"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client went away: nothing to do
}

func (s *Server) notRunning(w http.ResponseWriter, err error) {
	writeJSON(w, http.StatusServiceUnavailable, apiError{Error: err.Error(), Fabric: s.cfg.Name})
}

func (s *Server) handleFabric(w http.ResponseWriter, _ *http.Request) {
	v := s.view()
	if v.err != nil {
		s.notRunning(w, v.err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(v.fabric) // the client went away: nothing to do
}

// NodeDetail is /api/node/{name}: the node's status as ibfab status
// --json has it (ports with PortInfo's state, LID, rate, counters, drops
// and per-VL credits), with the utilization of its ports.
type NodeDetail struct {
	harness.NodeStatus
	// Utilization is each port's share of its rate sent over the window,
	// by port number.
	Utilization map[int]float64 `json:"utilization"`
}

func (s *Server) handleNode(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	d, err := s.node(name)
	switch {
	case errors.Is(err, errNoNode):
		writeJSON(w, http.StatusNotFound, apiError{Error: err.Error(), Fabric: s.cfg.Name, Running: true})
	case err != nil:
		s.notRunning(w, err)
	default:
		writeJSON(w, http.StatusOK, d)
	}
}

var errNoNode = errors.New("no such node")

func (s *Server) node(name string) (*NodeDetail, error) {
	v := s.view()
	if v.err != nil {
		return nil, v.err
	}
	for _, n := range v.now.st.Nodes {
		if n.Name != name {
			continue
		}
		d := &NodeDetail{NodeStatus: n, Utilization: map[int]float64{}}
		if v.base.st == nil {
			return d, nil
		}
		var base nodeproc.Status
		for _, b := range v.base.st.Nodes {
			if b.Name == name {
				base = b.Status
			}
		}
		for _, p := range n.Ports {
			for _, bp := range base.Ports {
				if bp.Port == p.Port {
					d.Utilization[p.Port] = utilization(bp, p, v.now.at.Sub(v.base.at), v.now.st.TimeScale)
				}
			}
		}
		return d, nil
	}
	return nil, fmt.Errorf("%w: fabric %s has no node %s", errNoNode, s.cfg.Name, name)
}

// handleEvents streams the poller's events as server-sent events, one
// JSON Event per "data:" line, until the client goes or Close.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	c := make(chan Event, 64)
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		http.Error(w, "server closing", http.StatusServiceUnavailable)
		return
	default:
	}
	s.subs[c] = struct{}{}
	running := s.last.err == nil
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, c)
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// The first event says whether the fabric runs now, so that a page
	// opened after the teardown shows the banner at once.
	first := Event{Time: time.Now(), Kind: EventFabricUp}
	if !running {
		first.Kind = EventFabricDown
	}
	send := func(e Event) bool {
		b, err := json.Marshal(e)
		if err != nil {
			return false
		}
		if _, err := w.Write(append(append([]byte("data: "), b...), '\n', '\n')); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	if !send(first) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closed:
			return
		case e := <-c:
			if !send(e) {
				return
			}
		}
	}
}
