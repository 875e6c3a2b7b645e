package madfuzz

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"ibfab/link"
	"ibfab/madport"
	"ibfab/topologies"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// Config is a fuzz run.
type Config struct {
	// Port is where the MADs go from: port 1 of topology node From.
	Port madport.Port
	Topo *topologies.Topology
	From int
	// Targets are the nodes the MADs go to (all when empty).
	Targets []int
	// LIDs are the nodes' base LIDs when an SM assigned them (by node
	// index; nil or 0: not known): LID-routed SMPs and GMPs need them.
	LIDs []uint16
	// SMLID is the master SM's LID (0: no SM): SubnAdm MADs go there,
	// and every liveness check asks its SA for ClassPortInfo too, so an
	// SM the fuzz MADs broke is found as a node that died would be.
	SMLID uint16
	MADs  int
	Seed  uint64
	// Corpus are real MADs that mutations start from, besides those sent
	// (ReadCorpus takes them from a capture).
	Corpus [][]byte
	// CheckEvery is how many MADs go between liveness checks (10,000).
	CheckEvery int
	// Timeout bounds a liveness Get (1 s); a node gets three.
	Timeout time.Duration
	// Window is how many fuzz MADs may wait for an answer (256), each
	// for at most Age (50 ms; many get none, as the spec wants): the run
	// does not wait for each one, but does not flood the port either.
	Window int
	Age    time.Duration
	// Frames, when set, carries the fuzz MADs instead of Port: each in a
	// raw data frame from SLID (the fuzzer's LID) broken one way
	// (FrameShape), written on the link; Port still carries the checks.
	Frames FrameWriter
	SLID   uint16
	// Progress, when set, is called after every liveness check.
	Progress func(sent int, r *Report)
}

// Report is what a run did.
type Report struct {
	Seed     uint64         `json:"seed"`
	MADs     int            `json:"mads"`
	Sent     int            `json:"sent"`
	SendErrs int            `json:"send_errors"`
	Answered int            `json:"answered"` // responses to fuzz MADs
	ByShape  map[string]int `json:"by_shape"`
	// ByFrame counts the frames by FrameShape, when frames carried them.
	ByFrame map[string]int `json:"by_frame,omitempty"`
	// ByStatus counts the answers by MAD status (hex), the transport's
	// hand-backs (no answer within the attach point's timeout) as
	// "timeout".
	ByStatus map[string]int `json:"by_status"`
	Checks   int            `json:"checks"`
	Failures []Failure      `json:"failures,omitempty"`
	// Judged counts the successful answers of attributes shorter than
	// their data field, Dirty those with a non-zero byte past the
	// attribute (dirtyTail), DirtyFirst the first of them.
	Judged     int          `json:"judged_answers"`
	Dirty      int          `json:"dirty_answers"`
	DirtyFirst []DirtyReply `json:"dirty_first,omitempty"`
	Seconds    float64      `json:"seconds"`
	MADsPerS   float64      `json:"mads_per_second"`
	OtherRecv  int          `json:"other_received"` // traps, requests, late answers
}

// DirtyReply is an answer with a reserved byte not zero.
type DirtyReply struct {
	Offset int    `json:"offset"` // of the first such byte in the MAD
	MAD    string `json:"mad"`    // the answer, hex
}

const dirtyKept = 8

// Failure is a liveness check a node failed.
type Failure struct {
	AfterMAD int    `json:"after_mad"`
	Node     string `json:"node"`
	Err      string `json:"error"`
	// Last are the fuzz MADs sent just before (hex, up to 256), newest
	// last.
	Last []string `json:"last"`
}

const (
	defaultCheckEvery = 10000
	defaultTimeout    = time.Second
	defaultWindow     = 256
	defaultAge        = 50 * time.Millisecond
	probeTIDBase      = uint64(0x7fab) << 48
	fuzzTIDBase       = uint64(0x6fab) << 48
	lastKept          = 256
)

// Run sends c.MADs fuzz MADs and checks liveness as it goes. It returns
// an error only when it cannot run (bad config, the port closed); what
// the fabric did is in the report.
func Run(ctx context.Context, c Config) (*Report, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	paths := Paths(c.Topo, c.From)
	targets, err := c.targets(paths)
	if err != nil {
		return nil, err
	}
	r := &Report{Seed: c.Seed, MADs: c.MADs, ByShape: map[string]int{}, ByStatus: map[string]int{}}
	rn := &runner{c: c, r: r, paths: paths, probes: map[uint64]chan madport.MAD{}, waiting: map[uint64]time.Time{}}
	if c.Frames != nil {
		r.ByFrame = map[string]int{}
		rn.frames = newFrameGen(c.Seed, c.SLID)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); rn.receive(ctx) }()
	defer wg.Wait()
	defer cancel()

	g := newGenerator(c.Seed, c.Topo, targets, c.SMLID)
	g.corpus = c.Corpus
	start := time.Now()
	for i := range c.MADs {
		if err := rn.send(ctx, g, uint64(i)); err != nil {
			return r, err
		}
		if (i+1)%c.CheckEvery == 0 || i+1 == c.MADs {
			ok := rn.check(ctx, i+1)
			if c.Progress != nil {
				c.Progress(i+1, r)
			}
			if !ok {
				break // the fabric is broken: what follows would only blur it
			}
		}
	}
	r.Seconds = time.Since(start).Seconds()
	if r.Seconds > 0 {
		r.MADsPerS = float64(r.Sent) / r.Seconds
	}
	return r, nil
}

func (c *Config) defaults() error {
	if c.Port == nil || c.Topo == nil {
		return errors.New("madfuzz: Config needs a Port and a Topo")
	}
	if c.From < 0 || c.From >= c.Topo.NumNodes() {
		return fmt.Errorf("madfuzz: no node %d", c.From)
	}
	if c.MADs <= 0 {
		return fmt.Errorf("madfuzz: %d MADs", c.MADs)
	}
	if c.CheckEvery <= 0 {
		c.CheckEvery = defaultCheckEvery
	}
	if c.Timeout <= 0 {
		c.Timeout = defaultTimeout
	}
	if c.Window <= 0 {
		c.Window = defaultWindow
	}
	if c.Age <= 0 {
		c.Age = defaultAge
	}
	return nil
}

func (c *Config) targets(paths [][]uint8) ([]target, error) {
	nodes := c.Targets
	if len(nodes) == 0 {
		for i := range c.Topo.NumNodes() {
			nodes = append(nodes, i)
		}
	}
	var out []target
	for _, n := range nodes {
		if n < 0 || n >= len(paths) || paths[n] == nil {
			return nil, fmt.Errorf("madfuzz: node %d is not reachable from %s", n, c.Topo.Node(c.From).Name)
		}
		t := target{node: n, path: paths[n]}
		if n < len(c.LIDs) {
			t.lid = c.LIDs[n]
		}
		out = append(out, t)
	}
	return out, nil
}

// Paths returns the directed route from port 1 of node from to every
// node of t, by breadth-first search (nil for a node it cannot reach).
func Paths(t *topologies.Topology, from int) [][]uint8 {
	paths := make([][]uint8, t.NumNodes())
	paths[from] = []uint8{0}
	queue := []int{from}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		node := t.Node(n)
		if n != from && node.Type != topologies.Switch {
			continue // a CA does not forward
		}
		for p := 1; p <= node.NumPorts; p++ {
			if n == from && p != 1 {
				break
			}
			peer, ok := t.Peer(topologies.PortRef{Node: n, Port: p})
			if !ok || paths[peer.Node] != nil {
				continue
			}
			paths[peer.Node] = append(append([]uint8(nil), paths[n]...), uint8(p))
			queue = append(queue, peer.Node)
		}
	}
	return paths
}

// runner is one run's state.
type runner struct {
	c      Config
	r      *Report
	paths  [][]uint8
	frames *frameGen // nil: the MADs go by Port

	mu      sync.Mutex
	probes  map[uint64]chan madport.MAD
	waiting map[uint64]time.Time // fuzz MADs waiting for an answer, by TID: when sent
	last    [][]byte
}

// room waits until fewer than Window fuzz MADs wait for an answer, those
// older than Age given up.
func (rn *runner) room(ctx context.Context) error {
	for {
		rn.mu.Lock()
		if len(rn.waiting) >= rn.c.Window {
			now := time.Now()
			for tid, at := range rn.waiting {
				if now.Sub(at) > rn.c.Age {
					delete(rn.waiting, tid)
				}
			}
		}
		n := len(rn.waiting)
		rn.mu.Unlock()
		if n < rn.c.Window {
			return nil
		}
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (rn *runner) send(ctx context.Context, g *generator, i uint64) error {
	if err := rn.room(ctx); err != nil {
		return err
	}
	tid := fuzzTIDBase | i
	m, shape, lid := g.make(tid)
	if rn.frames != nil {
		return rn.sendFrame(m, shape, lid)
	}
	qp := uint32(1)
	if c := mad.MAD(m).MgmtClass(); c.IsSubn() {
		qp = 0
	}
	rn.mu.Lock()
	rn.keep(m)
	rn.r.ByShape[shape.String()]++
	rn.waiting[tid] = time.Now()
	rn.mu.Unlock()
	return rn.sent(rn.c.Port.Send(madport.MAD{LID: lid, QP: qp, QKey: wire.QP1QKey, Data: m}))
}

// sendFrame writes MAD m, of shape shape, for lid as a frame the frame generator broke.
// Its answers, if any, go to the HCA's own agents, which sent nothing:
// none is waited for.
func (rn *runner) sendFrame(m []byte, shape Shape, lid uint16) error {
	p, fs := rn.frames.frame(m, lid)
	rn.mu.Lock()
	rn.keep(p)
	rn.r.ByShape[shape.String()]++
	rn.r.ByFrame[fs.String()]++
	rn.mu.Unlock()
	return rn.sent(rn.c.Frames.WritePacket(link.KindData, p))
}

// keep adds what was sent, m, to the last ones kept. rn.mu is held.
func (rn *runner) keep(m []byte) {
	rn.last = append(rn.last, m)
	if len(rn.last) > lastKept {
		rn.last = rn.last[1:]
	}
}

// sent counts a send's outcome; only a closed port ends the run.
func (rn *runner) sent(err error) error {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if errors.Is(err, madport.ErrClosed) {
		return err
	}
	if err != nil {
		rn.r.SendErrs++
		return nil
	}
	rn.r.Sent++
	return nil
}

// receive takes everything the port receives: a liveness probe's answer
// goes to its waiter, a fuzz MAD's answer is counted.
func (rn *runner) receive(ctx context.Context) {
	for {
		m, err := rn.c.Port.Recv(ctx)
		if err != nil {
			return
		}
		if len(m.Data) < mad.MADHeaderSize {
			continue
		}
		h := mad.MAD(m.Data)
		tid := h.TransactionID()
		rn.mu.Lock()
		switch {
		case rn.probes[tid] != nil:
			rn.probes[tid] <- m
			delete(rn.probes, tid)
		case tid>>48 == fuzzTIDBase>>48 && (h.IsResponse() || m.Status != 0):
			rn.r.Answered++
			_, status := answerStatus(m.Data)
			st := fmt.Sprintf("%#04x", uint16(status))
			if m.Status != 0 {
				st = "timeout"
			}
			rn.r.ByStatus[st]++
			delete(rn.waiting, tid)
			rn.judge(m.Data)
		default:
			rn.r.OtherRecv++
		}
		rn.mu.Unlock()
	}
}

// judge counts answer m when a reserved byte of it is not zero. rn.mu is
// held.
func (rn *runner) judge(m []byte) {
	at, judged, dirty := dirtyTail(m)
	if judged {
		rn.r.Judged++
	}
	if !dirty {
		return
	}
	rn.r.Dirty++
	if len(rn.r.DirtyFirst) < dirtyKept {
		rn.r.DirtyFirst = append(rn.r.DirtyFirst, DirtyReply{Offset: at, MAD: hex.EncodeToString(m)})
	}
}

// check sends a NodeInfo Get by directed route to every node, and a
// ClassPortInfo Get to the SA when there is an SM, three tries each,
// records those that do not answer and reports whether all did.
func (rn *runner) check(ctx context.Context, after int) bool {
	rn.mu.Lock()
	rn.r.Checks++
	rn.mu.Unlock()
	for n, path := range rn.paths {
		if path == nil {
			continue
		}
		rn.retry(ctx, after, rn.c.Topo.Node(n).Name, func(tid uint64) (madport.MAD, error) {
			m, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: tid, AttrID: mad.AttrNodeInfo, Path: path})
			return madport.MAD{LID: mad.PermissiveLID, Data: m}, err
		}, uint64(n))
	}
	if lid := rn.c.SMLID; lid != 0 {
		rn.retry(ctx, after, fmt.Sprintf("the SA at LID %d", lid), func(tid uint64) (madport.MAD, error) {
			return madport.MAD{LID: lid, QP: 1, QKey: wire.QP1QKey, Data: saClassPortInfoGet(tid)}, nil
		}, uint64(len(rn.paths)))
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return len(rn.r.Failures) == 0
}

// saClassPortInfoGet is an SA ClassPortInfo Get with transaction ID tid.
func saClassPortInfoGet(tid uint64) []byte {
	m := make([]byte, mad.MADSize)
	mad.MAD(m).Encode(&mad.MADFields{BaseVersion: mad.BaseVersion, MgmtClass: mad.ClassSubnAdm, ClassVersion: 2,
		Method: mad.MethodGet, TransactionID: tid, AttrID: mad.AttrSAClassPortInfo})
	return m
}

// retry sends the probe build makes up to three times until one is
// answered with status 0, and records a failure of who when none is.
func (rn *runner) retry(ctx context.Context, after int, who string, build func(tid uint64) (madport.MAD, error), n uint64) {
	var err error
	for try := range 3 {
		tid := probeTIDBase | (uint64(after)<<16|n<<2|uint64(try))&0xffff_ffff_ffff
		var m madport.MAD
		if m, err = build(tid); err == nil {
			err = rn.probe(ctx, tid, m)
		}
		if err == nil {
			return
		}
	}
	rn.fail(after, who, err)
}

// probe sends probe m, whose TID is tid, and waits for its answer.
func (rn *runner) probe(ctx context.Context, tid uint64, m madport.MAD) error {
	ch := make(chan madport.MAD, 1)
	rn.mu.Lock()
	rn.probes[tid] = ch
	rn.mu.Unlock()
	defer func() {
		rn.mu.Lock()
		delete(rn.probes, tid)
		rn.mu.Unlock()
	}()
	h := mad.MAD(m.Data)
	what := h.AttrID().Name(h.MgmtClass()) + " Get"
	if err := rn.c.Port.Send(m); err != nil {
		return err
	}
	timer := time.NewTimer(rn.c.Timeout)
	defer timer.Stop()
	select {
	case a := <-ch:
		if a.Status != 0 {
			return fmt.Errorf("%s handed back (status %d): no answer", what, a.Status)
		}
		if _, st := answerStatus(a.Data); st != 0 {
			return fmt.Errorf("%s answered with status %#04x", what, uint16(st))
		}
		return nil
	case <-timer.C:
		return fmt.Errorf("no answer to %s in %v", what, rn.c.Timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (rn *runner) fail(after int, node string, err error) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	f := Failure{AfterMAD: after, Node: node, Err: err.Error()}
	for _, m := range rn.last {
		f.Last = append(f.Last, hex.EncodeToString(m))
	}
	rn.r.Failures = append(rn.r.Failures, f)
}
