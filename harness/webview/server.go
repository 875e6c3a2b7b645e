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

// window is the span utilizations are measured over.
const window = time.Second

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
	cfg    Config
	mux    *http.ServeMux
	topo   *topologies.Topology
	layout *topologies.FatTreeLayout // nil: not a fat tree

	cancel context.CancelFunc
	done   chan struct{} // closed when the poller has stopped
	closed chan struct{} // closed by Close: event streams end

	mu      sync.Mutex
	samples []sample // the last window's polls, oldest first
	err     error    // the last poll's error; nil when it read the status
	subs    map[chan Event]struct{}
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

// setTopology makes t the map's topology and lays it out.
func (s *Server) setTopology(t *topologies.Topology) {
	s.topo, s.layout = t, nil
	// Not a fat tree is no error: the page lays the fabric out itself.
	if l, err := topologies.LayoutFatTree(t); err == nil && len(l.Hosts) > 0 {
		s.layout = l
	}
}

// needTopology reports whether the topology must be read again before
// st is shown: nodes were added (ibfab add), or the fabric was down and
// may have been brought up again as another.
func (s *Server) needTopology(st *harness.FabricStatus) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil || len(st.Nodes) != s.topo.NumNodes()
}

// poll reads the status every interval until ctx ends, keeps the last
// window's samples and sends the changes to the event streams.
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
		pctx, cancel := context.WithTimeout(ctx, 5*s.cfg.Interval)
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

// record adds one poll's result and publishes what changed. t, when not
// nil, is the topology read again for st.
func (s *Server) record(at time.Time, st *harness.FabricStatus, t *topologies.Topology, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	for _, e := range ev {
		for c := range s.subs {
			select {
			case c <- e:
			default: // a stalled client loses events, never the poller's time
			}
		}
	}
}

// view returns the current map, or the last poll's error.
func (s *Server) view() (*Fabric, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	now := s.samples[len(s.samples)-1]
	var base sample
	if len(s.samples) > 1 {
		base = s.samples[0]
	}
	return buildFabric(s.topo, s.layout, base, now), nil
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
	f, err := s.view()
	if err != nil {
		s.notRunning(w, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	now := s.samples[len(s.samples)-1]
	for _, n := range now.st.Nodes {
		if n.Name != name {
			continue
		}
		d := &NodeDetail{NodeStatus: n, Utilization: map[int]float64{}}
		var base nodeproc.Status
		if len(s.samples) > 1 {
			for _, b := range s.samples[0].st.Nodes {
				if b.Name == name {
					base = b.Status
				}
			}
		}
		for _, p := range n.Ports {
			for _, bp := range base.Ports {
				if bp.Port == p.Port {
					d.Utilization[p.Port] = utilization(bp, p, now.at.Sub(s.samples[0].at), now.st.TimeScale)
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
	running := s.err == nil
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
