package sm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/testsupport"
	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Two SMs on two CAs of one memfabric, each run by Run on its own
// goroutine, sharing the fabric's emulated time (memport.Group): the
// election both ways, a handover to a higher standby, a standby that polls
// and takes over when the master dies.

// timedEvent is an SM event with the emulated time it happened at.
type timedEvent struct {
	at time.Time
	sm.SMEvent
}

// liveSM is one SM of an smGroup.
type liveSM struct {
	name    string
	port    *memport.Port
	s       *sm.SM
	events  recorder[timedEvent]
	results recorder[*sm.Result]
	cancel  context.CancelFunc
	done    chan error
	died    time.Time // when kill ended it
}

// smGroup is a memfabric with an SM port on each of the named CAs.
type smGroup struct {
	f     *memfabric.Fabric
	start time.Time
	sms   map[string]*liveSM
}

// newSMGroup builds topo and a port on port 1 of each named CA, the ports
// in one group.
func newSMGroup(t *testing.T, topo *topologies.Topology, names ...string) *smGroup {
	t.Helper()
	f, err := memfabric.NewFabric(topo)
	require.NoError(t, err)
	g := &smGroup{f: f, start: f.Clock().Now(), sms: map[string]*liveSM{}}
	var ports []*memport.Port
	for _, n := range names {
		i, ok := topo.Lookup(n)
		require.True(t, ok, n)
		p, err := memport.New(f, i, 1)
		require.NoError(t, err)
		g.sms[n] = &liveSM{name: n, port: p}
		ports = append(ports, p)
	}
	_, err = memport.NewGroup(ports...)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, l := range g.sms {
			g.stop(l)
		}
		f.Close()
	})
	return g
}

// run starts an SM with cfg on the named CA.
func (g *smGroup) run(t *testing.T, name string, cfg sm.Config) *liveSM {
	t.Helper()
	l := g.sms[name]
	cfg.OnSMEvent = func(e sm.SMEvent) { l.events.add(timedEvent{g.f.Clock().Now(), e}) }
	s, err := sm.New(l.port, cfg)
	require.NoError(t, err)
	l.s = s
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan error, 1)
	go func() { l.done <- s.Run(ctx, l.results.add) }()
	return l
}

// stop ends l's Run and closes its port, as the death of its process
// would: its CA keeps the IsSM capability, and nobody answers there. It
// returns the emulated time of the death (time stands still between the
// end of Run and the port's Close).
func (g *smGroup) stop(l *liveSM) time.Time {
	if l.cancel != nil {
		l.cancel()
		<-l.done
		l.cancel = nil
	}
	at := g.f.Clock().Now()
	l.port.Close()
	return at
}

// kill is stop for an SM whose death the test is about: from then on it
// is no master.
func (g *smGroup) kill(l *liveSM) time.Time {
	l.died = g.stop(l)
	return l.died
}

// since returns t's emulated time from the start.
func (g *smGroup) since(at time.Time) time.Duration { return at.Sub(g.start) }

// hangGuard bounds the real time a test waits for an SM; emulated time
// is what the assertions measure.
const hangGuard = 2 * time.Minute

// waitEvent waits for an event of l that want accepts and returns it.
func (l *liveSM) waitEvent(t *testing.T, what string, want func(timedEvent) bool) timedEvent {
	t.Helper()
	var got timedEvent
	if !testsupport.Poll(hangGuard, func() bool {
		for _, e := range l.events.list() {
			if want(e) {
				got = e
				return true
			}
		}
		return false
	}) {
		t.Fatalf("%s: no %s; events %+v", l.name, what, l.events.list())
	}
	return got
}

// waitResult waits for a sweep or assimilation of l that want accepts,
// after the first skip results.
func (l *liveSM) waitResult(t *testing.T, what string, skip int, want func(*sm.Result) bool) *sm.Result {
	t.Helper()
	var got *sm.Result
	if !testsupport.Poll(hangGuard, func() bool {
		rs := l.results.list()
		for _, r := range rs[min(skip, len(rs)):] {
			if want(r) {
				got = r
				return true
			}
		}
		return false
	}) {
		t.Fatalf("%s: no %s; results %d", l.name, what, len(l.results.list()))
	}
	return got
}

// waitUntil waits until the fabric's emulated time has passed at.
func (g *smGroup) waitUntil(t *testing.T, at time.Time) {
	t.Helper()
	if !testsupport.Poll(hangGuard, func() bool { return !g.f.Clock().Now().Before(at) }) {
		t.Fatalf("emulated time stands at %v, waiting for %v", g.since(g.f.Clock().Now()), g.since(at))
	}
}

func isAction(action sm.SMAction, state string) func(timedEvent) bool {
	return func(e timedEvent) bool { return e.Action == action && (state == "" || e.State == state) }
}

func subnetUp(r *sm.Result) bool { return r.SubnetUp }

// mastersOverTime checks that from the first Master on, every instant of
// emulated time ends with exactly one SM Master, but between the death of
// the master (kill) and the next one, when there is none; it returns how
// many instants changed a state.
func mastersOverTime(t *testing.T, sms ...*liveSM) int {
	t.Helper()
	type change struct {
		at    time.Time
		sm    int
		state string
	}
	var all []change
	for i, l := range sms {
		for _, e := range l.events.list() {
			all = append(all, change{e.at, i, e.State})
		}
		if !l.died.IsZero() {
			all = append(all, change{l.died, i, "dead"})
		}
	}
	slices.SortStableFunc(all, func(a, b change) int { return a.at.Compare(b.at) })
	state := make([]string, len(sms))
	instants, seen := 0, false
	for k := 0; k < len(all); {
		at := all[k].at
		for ; k < len(all) && all[k].at.Equal(at); k++ {
			state[all[k].sm] = all[k].state
		}
		masters, dead := 0, false
		for _, s := range state {
			switch s {
			case "Master":
				masters++
			case "dead":
				dead = true
			}
		}
		seen = seen || masters > 0
		if seen {
			instants++
			want := 1
			if dead && masters == 0 {
				want = 0 // the master died: none until a standby takes over
			}
			assert.Equal(t, want, masters, "masters at %v: %v", at, state)
		}
	}
	require.True(t, seen, "never a master")
	return instants
}

// lftSnapshot returns every switch's output port for every LID up to top.
func lftSnapshot(f *memfabric.Fabric, top uint16) map[string][]uint8 {
	m := map[string][]uint8{}
	for _, n := range f.Nodes() {
		if n.Agent.Type() != mad.NodeTypeSwitch {
			continue
		}
		ports := make([]uint8, top+1)
		for lid := uint16(1); lid <= top; lid++ {
			p, ok := n.Agent.OutPort(lid)
			if !ok {
				p = mad.LFTNoPort
			}
			ports[lid] = p
		}
		m[n.Name] = ports
	}
	return m
}

func actions(l *liveSM) []string {
	var out []string
	for _, e := range l.events.list() {
		out = append(out, e.Action.String()+":"+e.State)
	}
	return out
}

const setLFT = "Set LinearForwardingTable"

// TestTwoSMsElection starts an SM on CA 4, lets it bring the subnet up,
// then starts one on CA 15. When the later one has the higher priority it
// ends up master: it goes Standby first (a master runs the subnet), tells
// the master with Trap 144 at its poll, which hands over; it acknowledges
// and keeps LIDs and forwarding tables. When it has the lower, it stays
// standby and sends nothing but its polls.
func TestTwoSMsElection(t *testing.T) {
	for _, tt := range []struct {
		name         string
		first, later uint8
	}{
		{"later higher", 1, 5},
		{"later lower", 5, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newSMGroup(t, topologies.Thesis8(), "ca4", "ca15")
			a := g.run(t, "ca4", sm.Config{ElectionConfig: sm.ElectionConfig{Priority: tt.first}})
			up := a.waitResult(t, "subnet up", 0, subnetUp)
			lids, lfts := agentLIDs(g.f), lftSnapshot(g.f, up.MaxLID)
			b := g.run(t, "ca15", sm.Config{ElectionConfig: sm.ElectionConfig{Priority: tt.later}})
			sb := b.waitEvent(t, "election", isAction(sm.SMActionElection, ""))
			assert.Equal(t, "Standby", sb.State, "a master runs the subnet")
			require.NotNil(t, sb.Peer)
			assert.Equal(t, "Master", sb.Peer.State)

			if tt.later > tt.first {
				b.waitEvent(t, "handover", isAction(sm.SMActionHandover, "Master"))
				res := b.waitResult(t, "subnet up", 1, subnetUp)
				a.waitEvent(t, "acknowledge", isAction(sm.SMActionAcknowledge, "Standby"))
				assert.True(t, res.RoutesKept, "the tables the old master left do")
				assert.Equal(t, sm.KeptRoutes, res.Routing)
				assert.Zero(t, res.SMPsByAttr[setLFT])
				assert.Equal(t, lids["ca15"], res.SMLID)
			} else {
				g.waitUntil(t, sb.at.Add(10*sm.DefaultPollInterval))
			}
			g.stop(a)
			g.stop(b)
			assert.Equal(t, lids, agentLIDs(g.f), "LIDs")
			assert.Equal(t, lfts, lftSnapshot(g.f, up.MaxLID), "forwarding tables")
			mastersOverTime(t, a, b)
			checkUp(t, g.f)

			st := b.s.Stats()
			if tt.later > tt.first {
				assert.Equal(t, []string{"election:Master"}, actions(a)[:1])
				assert.Subset(t, actions(a), []string{"trap144:Master", "handover-sent:Standby", "acknowledge:Standby"})
				assert.Less(t, slices.Index(actions(a), "trap144:Master"), slices.Index(actions(a), "handover-sent:Standby"))
				assert.Equal(t, []string{"election:Standby", "handover:Master", "acknowledge-sent:Master"}, actions(b))
				assert.Positive(t, st.Traps144)
				assert.Positive(t, a.s.Stats().Represses)
				return
			}
			assert.Equal(t, []string{"election:Master"}, actions(a))
			assert.Equal(t, []string{"election:Standby"}, actions(b))
			assert.Len(t, b.results.list(), 1, "one sweep, then polls only")
			assert.Zero(t, st.Traps144)
			polls := int(g.since(g.f.Clock().Now())-g.since(sb.at)) / int(sm.DefaultPollInterval)
			assert.InDelta(t, polls, st.Polls, 1, "a poll each interval")
			assert.Equal(t, st.Polls+st.SMInfo, st.Phases[sm.PhaseWatch].SMPs,
				"after its sweep a standby sends polls and answers to the master's SMInfo Gets, nothing else")
		})
	}
}

// TestFailover kills the master under a standby. The standby gives it up
// within its polling bound, no sooner than its retries allow, and takes
// the subnet over: every port keeps its LID and learns the new SM's,
// every switch keeps its tables (not one LFT block written).
func TestFailover(t *testing.T) {
	const interval, retries = 2 * time.Second, 2
	g := newSMGroup(t, topologies.Thesis8(), "ca4", "ca15")
	a := g.run(t, "ca4", sm.Config{ElectionConfig: sm.ElectionConfig{Priority: 5}})
	up := a.waitResult(t, "subnet up", 0, subnetUp)
	lids, lfts := agentLIDs(g.f), lftSnapshot(g.f, up.MaxLID)
	b := g.run(t, "ca15", sm.Config{
		ElectionConfig: sm.ElectionConfig{Priority: 1, PollInterval: interval, PollRetries: retries},
	})
	sb := b.waitEvent(t, "election", isAction(sm.SMActionElection, "Standby"))
	g.waitUntil(t, sb.at.Add(3*interval))

	died := g.kill(a)
	gone := b.waitEvent(t, "polling timeout", isAction(sm.SMActionPollingTimeout, "Discovering"))
	took := gone.at.Sub(died)
	assert.LessOrEqual(t, took, sm.PollingBound(interval, retries), "within the polling bound")
	// ibsm's own: it gives up as the last poll allowed times out.
	assert.LessOrEqual(t, took, time.Duration(retries+1)*interval+sm.DefaultTimeout, "as the last poll times out")
	assert.Greater(t, took, time.Duration(retries)*interval, "not before its retries ran out")
	res := b.waitResult(t, "subnet up", 1, subnetUp)
	b.waitEvent(t, "master", isAction(sm.SMActionElection, "Master"))
	g.stop(b)

	assert.True(t, res.RoutesKept, res.Warnings)
	assert.Zero(t, res.SMPsByAttr[setLFT])
	assert.Equal(t, lids, agentLIDs(g.f))
	assert.Equal(t, lfts, lftSnapshot(g.f, up.MaxLID))
	for _, n := range g.f.Nodes() {
		p := uint8(0)
		if n.Agent.Type() != mad.NodeTypeSwitch {
			p = 1
		}
		assert.Equal(t, lids["ca15"], n.Agent.PortConfig(p).MasterSMLID, n.Name)
	}
	assert.Equal(t, []string{"election:Standby", "polling-timeout:Discovering", "election:Master"}, actions(b))
	mastersOverTime(t, a, b)
	checkUp(t, g.f)
}

// TestFailoverLIDCache: two CAs leave while the master runs, a standby
// starts (it never sees them), the master dies, the standby takes over,
// and one of the CAs comes back. With the master's LID file, which the
// standby reloads as it takes over, the CA gets its own LID back; without
// it, the lowest free LID, which was the other CA's.
func TestFailoverLIDCache(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared file %v", shared), func(t *testing.T) {
			topo := topologies.Thesis8()
			g := newSMGroup(t, topo, "ca4", "ca15")
			file := filepath.Join(t.TempDir(), "guid2lid")
			a := g.run(t, "ca4", sm.Config{
				ElectionConfig: sm.ElectionConfig{Priority: 5},
				LIDConfig:      sm.LIDConfig{LIDFile: file},
			})
			full := a.waitResult(t, "subnet up", 0, subnetUp)
			lids := agentLIDs(g.f)
			// y and x: two CAs but the SMs', y's LID below x's.
			var cas []string
			for _, n := range topo.Nodes() {
				if n.Type == topologies.CA && n.Name != "ca4" && n.Name != "ca15" {
					cas = append(cas, n.Name)
				}
			}
			slices.SortFunc(cas, func(p, q string) int { return int(lids[p]) - int(lids[q]) })
			y, x := cas[0], cas[len(cas)-1]
			require.NoError(t, g.sms["ca4"].port.PowerOff(y, x))
			n := len(a.results.list())
			a.waitResult(t, "the CAs gone", n, func(r *sm.Result) bool { return r.SubnetUp && r.HCAs == full.HCAs-2 })

			cfg := sm.Config{ElectionConfig: sm.ElectionConfig{Priority: 1, PollInterval: time.Second, PollRetries: 1}}
			if shared {
				cfg.LIDFile = file
			}
			b := g.run(t, "ca15", cfg)
			b.waitEvent(t, "standby", isAction(sm.SMActionElection, "Standby"))
			g.kill(a)
			b.waitEvent(t, "master", isAction(sm.SMActionElection, "Master"))
			b.waitResult(t, "subnet up", 1, subnetUp)
			n = len(b.results.list())
			require.NoError(t, g.sms["ca15"].port.PowerOn(x))
			b.waitResult(t, "x back", n, func(r *sm.Result) bool { return r.SubnetUp && r.HCAs == full.HCAs-1 })
			g.stop(b)
			want := lids[y]
			if shared {
				want = lids[x]
			}
			assert.Equal(t, want, agentLIDs(g.f)[x], "%s had %d, %s %d", x, lids[x], y, lids[y])
		})
	}
}

// TestRunUndecided: a sweep whose discovery fails leaves the SM
// Discovering; Run sweeps again only after SweepInterval, not at once.
func TestRunUndecided(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	b.port.SetFilter(func(madport.MAD) bool { return false }) // nothing gets out
	s := b.newSM(t, sm.Config{TxnConfig: sm.TxnConfig{Retries: -1}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var at []time.Time
	err := s.Run(ctx, func(res *sm.Result) {
		assert.False(t, res.SubnetUp)
		assert.Equal(t, "Discovering", res.SMState)
		at = append(at, b.f.Clock().Now())
		if len(at) == 3 {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	for i := 1; i < len(at); i++ {
		assert.GreaterOrEqual(t, at[i].Sub(at[i-1]), sm.DefaultSweepInterval)
	}
}

// TestFailoverMKey: two SMs of one M_Key configuration (protection 2)
// and one cache: the standby, started once the ports are keyed, polls the
// master with the key of the master's port, takes the subnet over when it
// dies, and runs it with the keys the ports hold; no SMP fails a check.
// (With a key per port a standby started after the ports were keyed
// cannot discover them: an SMP along a route it never met carries the
// base key, as OpenSM's does.)
func TestFailoverMKey(t *testing.T) {
	topo := topologies.Thesis8()
	g := newSMGroup(t, topo, "ca4", "ca15")
	file := filepath.Join(t.TempDir(), "guid2lid")
	mk := sm.Config{
		MKeyConfig: sm.MKeyConfig{MKey: 0x5ec, MKeyProtect: 2, MKeyLease: 30},
		LIDConfig:  sm.LIDConfig{LIDFile: file},
	}
	cfg := mk
	cfg.Priority = 5
	a := g.run(t, "ca4", cfg)
	a.waitResult(t, "subnet up", 0, subnetUp)
	cfg = mk
	cfg.Priority, cfg.PollInterval, cfg.PollRetries = 1, time.Second, 1
	b := g.run(t, "ca15", cfg)
	b.waitEvent(t, "standby", isAction(sm.SMActionElection, "Standby"))
	g.kill(a)
	b.waitEvent(t, "master", isAction(sm.SMActionElection, "Master"))
	r := b.waitResult(t, "subnet up", 1, subnetUp)
	assert.Equal(t, 7, r.HCAs)
	g.stop(b)
	assert.Zero(t, violations(g.f), "every SMP carried its port's key")
	for _, n := range g.f.Nodes() {
		assert.EqualValues(t, 0x5ec, heldPortInfo(t, n).MKey, n.Name)
	}
}
