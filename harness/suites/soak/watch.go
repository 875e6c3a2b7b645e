package soak

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/proccpu"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// traffic is the flows among the traffic hosts, one per ordered pair.
type traffic struct {
	fabric  string
	lids    map[string]uint16
	running bool
}

type pair struct {
	src uint16
	id  uint32
}

// startTraffic starts a flow from every traffic host to every other.
func (r *soakRun) startTraffic(ctx context.Context) (*traffic, error) {
	t := &traffic{fabric: r.o.Fabric, lids: map[string]uint16{}}
	for _, h := range trafficHosts {
		t.lids[h] = r.lids[h]
		if _, err := harness.Flows(ctx, r.o.Fabric, h, nodeproc.FlowsArgs{Reset: true}); err != nil {
			return nil, fmt.Errorf("flows at %s: %w", h, err)
		}
	}
	n := 0
	for _, h := range trafficHosts {
		var fs []nodeproc.FlowArgs
		for j, d := range trafficHosts {
			if d != h {
				fs = append(fs, nodeproc.FlowArgs{ID: uint32(j + 1), DLID: t.lids[d], Payload: flowPayload,
					RateBPS: flowPPS * 8 * (flowPayload + 64), MaxBacklog: flowBacklog})
			}
		}
		if _, err := harness.StartFlows(ctx, r.o.Fabric, h, fs); err != nil {
			t.stopIfRunning(ctx)
			return nil, fmt.Errorf("flows-start at %s: %w", h, err)
		}
		t.running = true
		n += len(fs)
	}
	r.rep.Counters.Flows = n
	r.event("%d flows among %v, %d packets/s each", n, trafficHosts, flowPPS)
	return t, nil
}

// pairs are the flows, by source LID and ID.
func (t *traffic) pairs() []pair {
	var out []pair
	for _, h := range trafficHosts {
		for j, d := range trafficHosts {
			if d != h {
				out = append(out, pair{t.lids[h], uint32(j + 1)})
			}
		}
	}
	return out
}

// received reads every flow's packets received so far.
func (t *traffic) received(ctx context.Context) (map[pair]uint64, error) {
	got := map[pair]uint64{}
	for _, h := range trafficHosts {
		fr, err := harness.Flows(ctx, t.fabric, h, nodeproc.FlowsArgs{})
		if err != nil {
			return nil, fmt.Errorf("flows at %s: %w", h, err)
		}
		for _, x := range fr.Received {
			got[pair{x.SLID, x.ID}] += x.Packets
		}
	}
	return got, nil
}

// notGrown names the flows of want whose count in now is not above
// first's.
func notGrown(first, now map[pair]uint64, want []pair) []string {
	var out []string
	for _, p := range want {
		if now[p] <= first[p] {
			out = append(out, fmt.Sprintf("LID %d flow %d", p.src, p.id))
		}
	}
	return out
}

func (t *traffic) stopIfRunning(ctx context.Context) {
	if !t.running {
		return
	}
	for _, h := range trafficHosts {
		harness.StopAllFlows(ctx, t.fabric, h)
	}
	t.running = false
}

// stop stops the flows, lets the last packets arrive and counts.
func (t *traffic) stop(ctx context.Context, c *Counters) error {
	t.running = false
	for _, h := range trafficHosts {
		st, err := harness.StopAllFlows(ctx, t.fabric, h)
		if err != nil {
			return fmt.Errorf("flows-stop at %s: %w", h, err)
		}
		for _, f := range st {
			c.Sent += f.Sent
			c.RefusedPort += f.Failed
			c.RefusedBacklog += f.Dropped
			c.MaxBacklog = max(c.MaxBacklog, f.MaxBacklog)
		}
	}
	if err := pause(ctx, 500*time.Millisecond); err != nil {
		return err
	}
	got, err := t.received(ctx)
	if err != nil {
		return err
	}
	for _, p := range t.pairs() {
		c.Received += got[p]
	}
	c.Lost = int64(c.Sent) - int64(c.Received)
	return nil
}

// dropReader reads every node's drop records made since its last read
// (the "drops" op, by each node's own clock). Besides the reads the soak
// asks for (at each disturbance's start and end), it reads every
// dropPollEvery in the background and keeps what it got for the next
// read: a node's ring holds port.DefaultDropLogSize records, and a
// disturbance that takes tens of seconds to settle drops more than that
// at one switch (the 10-minute soak lost 7,621 records that way, a flap
// under SMP loss filling sw10's ring with exactly 4,096).
type dropReader struct {
	fabric string
	nodes  []string

	mu      sync.Mutex
	since   map[string]int64
	written map[string]uint64
	lost    uint64
	got     []DropRec // read in the background, not handed out yet
	halt    chan struct{}
	done    chan struct{}
}

// dropPollEvery is how often the background reads every node's drops: at
// the soak's rate (20 flows of 100 packets a second) a switch that drops
// all of its traffic fills its ring in a few seconds, not one.
const dropPollEvery = time.Second

func newDropReader(fabric string, topo *topologies.Topology) *dropReader {
	d := &dropReader{fabric: fabric, since: map[string]int64{}, written: map[string]uint64{}}
	for _, n := range topo.Nodes() {
		d.nodes = append(d.nodes, n.Name)
	}
	return d
}

// start reads in the background every every until stop.
func (d *dropReader) start(ctx context.Context, every time.Duration) {
	d.halt, d.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(d.done)
		for {
			select {
			case <-d.halt:
				return
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			d.mu.Lock()
			d.got = append(d.got, d.collect(ctx)...)
			d.mu.Unlock()
		}
	}()
}

// stop ends the background reads.
func (d *dropReader) stop() {
	if d.halt != nil {
		close(d.halt)
		<-d.done
		d.halt = nil
	}
}

// lostRecords is how many records were overwritten before a read.
func (d *dropReader) lostRecords() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lost
}

// read returns the records since the last read, those the background
// read meanwhile first.
func (d *dropReader) read(ctx context.Context) []DropRec {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := append(d.got, d.collect(ctx)...)
	d.got = nil
	return out
}

// collect reads every node's records since the last collect. A node
// that does not answer (killed) is skipped: its records went with it.
func (d *dropReader) collect(ctx context.Context) []DropRec {
	var out []DropRec
	for _, n := range d.nodes {
		var rep nodeproc.DropsReply
		if err := call(ctx, d.fabric, n, "drops", nodeproc.DropsArgs{SinceNs: d.since[n]}, &rep); err != nil {
			continue
		}
		if rep.NowNs < d.since[n] || rep.Written < d.written[n] { // restarted
			d.written[n] = 0
		}
		if grew := rep.Written - d.written[n]; grew > uint64(len(rep.Records)) && d.since[n] > 0 {
			d.lost += grew - uint64(len(rep.Records))
		}
		d.since[n], d.written[n] = rep.NowNs, rep.Written
		for _, x := range rep.Records {
			out = append(out, DropRec{Node: n, DropRecord: x})
		}
	}
	return out
}

// fabricProcs are the processes in each of the fabric's namespaces, by
// node.
func fabricProcs(fabric string, topo *topologies.Topology) map[string][]int {
	out := map[string][]int{}
	for _, n := range topo.Nodes() {
		pids, _ := fabricnet.Processes([]string{fabricnet.Namespace(fabric, n.Name)})
		out[n.Name] = pids
	}
	return out
}

// comm is a process's command name, "" when it is gone.
func comm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// identity is a process's command and start time (clock ticks since
// boot, /proc/PID/stat field 22): a PID the kernel gave again to another
// process, of another fabric on the machine, is not the one seen. "" when
// it is gone.
func identity(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return comm(pid) + " started " + f[19]
}

// snapshot counts the processes and descriptors in the fabric.
func snapshot(fabric string, topo *topologies.Topology) ProcSnap {
	s := ProcSnap{Procs: map[string]int{}, FDs: map[string]int{}}
	for node, pids := range fabricProcs(fabric, topo) {
		for _, pid := range pids {
			c := comm(pid)
			if c == "" {
				continue
			}
			k := node + "/" + c
			s.Procs[k]++
			if n, err := proccpu.FDs(pid); err == nil {
				s.FDs[k] += n
			}
		}
	}
	return s
}

// memSampler reads every fabric process's Pss every period.
type memSampler struct {
	fabric string
	topo   *topologies.Topology
	t0     time.Time
	mu     sync.Mutex
	series map[int]*MemSeries
	seen   map[int]string // every PID seen: its command and start time
	halt   chan struct{}
	done   chan struct{}
}

func startMemSampler(fabric string, topo *topologies.Topology, t0 time.Time, every time.Duration) *memSampler {
	m := &memSampler{fabric: fabric, topo: topo, t0: t0, series: map[int]*MemSeries{}, seen: map[int]string{},
		halt: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			m.sample()
			select {
			case <-m.halt:
				return
			case <-time.After(every):
			}
		}
	}()
	return m
}

func (m *memSampler) sample() {
	t := time.Since(m.t0).Seconds()
	for node, pids := range fabricProcs(m.fabric, m.topo) {
		for _, pid := range pids {
			c := comm(pid)
			pss, err := proccpu.Pss(pid)
			if c == "" || err != nil {
				continue
			}
			m.mu.Lock()
			s, ok := m.series[pid]
			if !ok {
				s = &MemSeries{Proc: node + "/" + c, PID: pid}
				m.series[pid] = s
				m.seen[pid] = identity(pid)
			}
			s.Samples = append(s.Samples, MemSample{T: t, PssKiB: pss / 1024})
			m.mu.Unlock()
		}
	}
}

// stop ends the sampling and returns the series, by process name.
func (m *memSampler) stop() []MemSeries {
	close(m.halt)
	<-m.done
	m.sample()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []MemSeries
	for _, s := range m.series {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Proc != out[j].Proc {
			return out[i].Proc < out[j].Proc
		}
		return out[i].PID < out[j].PID
	})
	return out
}

// afterDown checks what the fabric left: namespaces, processes, the
// harness's goroutines (given a few seconds to end).
func (r *soakRun) afterDown() {
	l := &r.rep.Leaks
	l.NamespacesUp = r.topo.NumNodes()
	left, _ := fabricnet.Namespaces(r.o.Fabric)
	l.NamespacesLeft = append([]string{}, left...)
	if r.mem != nil {
		r.mem.mu.Lock()
		l.PIDsSeen = len(r.mem.seen)
		for pid, id := range r.mem.seen {
			if identity(pid) == id {
				l.PIDsAlive = append(l.PIDsAlive, fmt.Sprintf("%d %s", pid, id))
			}
		}
		r.mem.mu.Unlock()
		sort.Strings(l.PIDsAlive)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > l.GoroutinesBefore && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	l.GoroutinesAfter = runtime.NumGoroutine()
	l.ProcLeaks, l.FDLeaks = procLeaks(l.Start, l.End)
}
