package smfailover

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"ibfab/harness/suites/runner"
	"ibfab/internal/enum"
	"ibfab/internal/opensmrun"
	"ibfab/sm"
	"ibfab/topologies"
)

// The SM failover suite (`ibfab run sm-failover`, issue 21 part 4): two
// subnet managers on two HCAs of one fabric, ibsm or Debian's OpenSM, in
// every pairing (ibsm with ibsm, ibsm master with OpenSM beside it,
// OpenSM master with ibsm beside it), each in two scenarios:
//
//   - FailoverKill: the master runs with a standby of lower priority
//     polling it; the master is killed (SIGKILL) and the standby must give
//     it up within its polling bound and take the subnet over, every
//     port's LID kept and no packet lost among the hosts that are not SM
//     hosts (traffic runs across the failover);
//   - FailoverHandover: an SM of higher priority starts while the master
//     runs; it must be handed the subnet with exactly one Master at every
//     200 ms reading of both SMs' SMInfo, the subnet up throughout
//     (traffic loses nothing) and the LIDs kept.
//
// In both, `sminfo` from an HCA that runs no SM must name the SM that is
// Master whenever it is asked. Both SMs poll every second and give the
// master up after two polls more go unanswered (OpenSM's
// sminfo_polling_timeout and polling_retry_number), so each case takes
// seconds.

//go:generate go tool stringer -type=FailoverScenario -linecomment

// FailoverScenario is what happens to the master.
type FailoverScenario uint8

// The scenarios of a pairing.
const (
	FailoverKill     FailoverScenario = iota // master-killed
	FailoverHandover                         // handover
)

var failoverScenarios = enum.New("failover scenario", FailoverKill, FailoverHandover)

// MarshalText implements encoding.TextMarshaler.
func (x FailoverScenario) MarshalText() ([]byte, error) {
	return failoverScenarios.Marshal(x)
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (x *FailoverScenario) UnmarshalText(b []byte) error {
	return failoverScenarios.Unmarshal(x, b)
}

// FailoverPairing is which SM runs the subnet first (First) and which
// joins it (Second): the standby that takes over when First is killed,
// or the SM of higher priority First hands over to.
type FailoverPairing struct {
	First  runner.SMKind `json:"first"`
	Second runner.SMKind `json:"second"`
}

func (p FailoverPairing) String() string { return p.First.String() + "/" + p.Second.String() }

// FailoverPairings are the pairings the suite runs, in order.
var FailoverPairings = []FailoverPairing{{runner.SMIbsm, runner.SMIbsm}, {runner.SMIbsm, runner.SMOpenSM}, {runner.SMOpenSM, runner.SMIbsm}}

// failoverCase is one case of the plan.
type failoverCase struct {
	Pairing  FailoverPairing
	Scenario FailoverScenario
}

func (c failoverCase) String() string { return fmt.Sprintf("%s %s", c.Pairing, c.Scenario) }

// id names the case in file and directory names.
func (c failoverCase) id() string {
	return c.Pairing.First.String() + "-" + c.Pairing.Second.String() + "-" + c.Scenario.String()
}

// failoverPlan returns the cases to run: all six, or with quick the two
// that cross the SMs' kinds in both roles (OpenSM killed under an ibsm
// standby; ibsm handing over to OpenSM), which exercise the most of the
// interplay in the least time.
func failoverPlan(quick bool) []failoverCase {
	if quick {
		return []failoverCase{
			{FailoverPairing{runner.SMOpenSM, runner.SMIbsm}, FailoverKill},
			{FailoverPairing{runner.SMIbsm, runner.SMOpenSM}, FailoverHandover},
		}
	}
	var out []failoverCase
	for _, p := range FailoverPairings {
		out = append(out, failoverCase{p, FailoverKill}, failoverCase{p, FailoverHandover})
	}
	return out
}

// The suite's polling: both SMs poll every FailoverPollInterval and give
// the master up once FailoverPollRetries more polls have gone unanswered;
// the master sweeps every FailoverSweepInterval.
const (
	FailoverPollInterval  = time.Second
	FailoverPollRetries   = 2
	FailoverSweepInterval = 2 * time.Second
	// FailoverSampleEvery is the period of the SMInfo readings.
	FailoverSampleEvery = 200 * time.Millisecond
)

// failoverOpenSMConf is OpenSM's configuration for the suite's polling
// (the log flushed line by line comes with StartOpenSM), and what an
// OpenSM beside ibsm needs so that taking over from it costs no packet:
//
//   - qos TRUE: OpenSM then sets every switch's SLtoVL tables. ibsm's
//     default table distribution (cut-deps, pre-blocked) maps every SL to
//     VL15, where data is dropped, on the forbidden turns of its
//     up*/down* graph's cut nodes, and those blocks stay in the switches
//     when ibsm dies; OpenSM without QoS never touches SLtoVL, and its
//     min-hop routes take some of those turns (a 2×3 mesh lost 5 of its
//     12 flows entirely).
//
// No max_op_vls: OpenSM takes every port whose OperationalVLs it must
// change through Init, which refuses the hosts' packets for most of a
// second, so both SMs must program the same VLs; both now program what
// the two ends of a link support (VL0-VL7 here) by default. (When ibsm
// programmed VL0-VL3, this conf held max_op_vls 3.)
func failoverOpenSMConf() string {
	return fmt.Sprintf("sweep_interval %d\nsminfo_polling_timeout %d\npolling_retry_number %d\nqos TRUE\n",
		int(FailoverSweepInterval/time.Second), FailoverPollInterval.Milliseconds(), FailoverPollRetries)
}

// failoverIbsmArgs are ibsm's flags with priority prio. --pre-block=false:
// ibsm's default blocks the forbidden turns of its up*/down* graph's cut
// nodes (every SL to VL15 there) once the subnet is up, and the blocks
// stay when ibsm dies; an OpenSM taking over routes through some of them
// until its QoS setup rewrites the SLtoVL tables, after its new LFTs (on
// the suite's mesh about 200 ms, some 40 packets of each of 5 flows).
// Without pre-blocking a sweep leaves no block; a change still may, until
// a later graph makes its turns legal.
func failoverIbsmArgs(prio int) []string {
	return []string{"--priority", fmt.Sprint(prio), "--pre-block=false", "--sweep-interval", FailoverSweepInterval.String(),
		"--polling-interval", FailoverPollInterval.String(), "--polling-retries", fmt.Sprint(FailoverPollRetries)}
}

// failoverTopology is the suite's fabric: a 2×3 mesh of switches with a
// host on each, six hosts, loops among the switches. The SMs run on the
// first host and the last; the other four carry the traffic, and the
// first of them reads the SMs' states and runs sminfo.
func failoverTopology() (*topologies.Topology, error) { return topologies.Mesh(2, 3) }

// failoverRoles picks the SM hosts, the observer and the traffic hosts of
// topo: the first and last CA run the SMs.
func failoverRoles(topo *topologies.Topology) (smA, smB, observer string, hosts []string, err error) {
	var cas []string
	for _, n := range topo.Nodes() {
		if n.Type == topologies.CA {
			cas = append(cas, n.Name)
		}
	}
	if len(cas) < 4 {
		return "", "", "", nil, fmt.Errorf("the fabric has %d hosts; the suite wants at least 4 (two SMs, two talking)", len(cas))
	}
	hosts = cas[1 : len(cas)-1]
	return cas[0], cas[len(cas)-1], hosts[0], hosts, nil
}

// FailoverOptions tune RunFailover.
type FailoverOptions struct {
	Out    string    // report directory; "" writes none
	Fabric string    // fabric name; default "smfo"
	Log    io.Writer // progress lines
	Quick  bool      // the quick plan (failoverPlan)
	Only   []string  // run only these cases of the plan (failoverCase.id)
}

// selectFailover keeps the cases of plan that only names (all of them
// when only is empty); a name not in the plan is an error.
func selectFailover(plan []failoverCase, only []string) ([]failoverCase, error) {
	if len(only) == 0 {
		return plan, nil
	}
	want := map[string]bool{}
	for _, id := range only {
		want[strings.TrimSpace(id)] = true
	}
	var out []failoverCase
	for _, c := range plan {
		if want[c.id()] {
			out = append(out, c)
			delete(want, c.id())
		}
	}
	if len(want) > 0 {
		var ids []string
		for _, c := range plan {
			ids = append(ids, c.id())
		}
		var bad []string
		for id := range want {
			bad = append(bad, id)
		}
		return nil, fmt.Errorf("no case %s in the plan; cases: %s", strings.Join(sortedStrings(bad), ", "), strings.Join(ids, ", "))
	}
	return out, nil
}

// FailoverSMInfo is one `sminfo` run from the observer and its verdict.
type FailoverSMInfo struct {
	T     float64 `json:"t"` // seconds since the case started, when it was run
	Want  string  `json:"want"`
	Named string  `json:"named,omitempty"` // the SM node whose port GUID it printed
	State string  `json:"state,omitempty"`
	OK    bool    `json:"ok"`
	// Transition marks a run during a handover, from the new master's
	// state change until it has the subnet up (and every port's
	// MasterSMLID names it): one that named the old master as Standby then
	// told the truth of the moment, and is not counted wrong.
	Transition bool   `json:"transition,omitempty"`
	Output     string `json:"output,omitempty"`
	Error      string `json:"error,omitempty"`
}

// FailoverSample is one SMInfo reading of a case.
type FailoverSample struct {
	T      float64        `json:"t"` // seconds since the case started
	States runner.SMState `json:"states"`
}

// FailoverCase is one case's run: what it measured and its checks.
type FailoverCase struct {
	Pairing    FailoverPairing  `json:"pairing"`
	Scenario   FailoverScenario `json:"scenario"`
	FirstNode  string           `json:"first_node"`
	SecondNode string           `json:"second_node"`
	// BoundMs is the second SM's polling bound (sm.PollingBound).
	BoundMs float64 `json:"bound_ms"`
	// From the kill (the master's process gone) or the second SM's start
	// (a handover): until the second SM left Standby (kill: gave the
	// master up), was Master, and reported the subnet up.
	DetectMs *float64 `json:"detect_ms,omitempty"`
	MasterMs *float64 `json:"master_ms,omitempty"`
	UpMs     *float64 `json:"up_ms,omitempty"`
	// MasterFrom says where MasterMs comes from: ibsm's event or the
	// SMInfo readings.
	MasterFrom string `json:"master_from,omitempty"`
	// Every port's LID before and after; the ports whose LID changed.
	PortsRead   int      `json:"ports_read"`
	LIDsChanged []string `json:"lids_changed"`
	// The traffic among the non-SM hosts: packets sent, received, sent
	// minus received, and refused at the source (port not Active, backlog
	// full).
	Flows    int    `json:"flows"`
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	Lost     int64  `json:"lost"`
	Refused  uint64 `json:"refused"`
	// Refused in two: packets the port refused (not Active, …) and
	// arrivals that found the source's backlog full (the sender starved
	// of CPU, or its port stalled).
	RefusedPort    uint64 `json:"refused_port"`
	RefusedBacklog uint64 `json:"refused_backlog"`
	// MaxBacklog is the most packets any flow's source held at once.
	MaxBacklog int `json:"max_backlog"`
	// Short lists the flows that received less than they sent.
	Short []string `json:"short,omitempty"`
	// Drops is what the fabric's ports dropped during the case, by
	// "node[port] cause" (every port, SM hosts' too).
	Drops map[string]uint64 `json:"drops,omitempty"`
	// The SMInfo readings; those that found other than one Master outside
	// the window in which none can be (from the kill until the standby is
	// Master); readings taken again.
	Samples      []FailoverSample `json:"samples"`
	NotOneMaster int              `json:"not_one_master"`
	Rereads      int              `json:"rereads"`
	FinalMaster  string           `json:"final_master"`
	SMInfo       []FailoverSMInfo `json:"sminfo"`
	Events       []runner.Event   `json:"events"`
	Checks       []runner.Check   `json:"checks"`
	Passed       bool             `json:"passed"`
	DurationS    float64          `json:"duration_s"`
	Error        string           `json:"error,omitempty"`
	Files        []string         `json:"files,omitempty"`
}

// FailoverReport is the suite's run.
type FailoverReport struct {
	Suite        string    `json:"suite"`
	Started      time.Time `json:"started"`
	Fabric       string    `json:"fabric"`
	Topology     string    `json:"topology"`
	Quick        bool      `json:"quick"`
	PollInterval float64   `json:"poll_interval_s"`
	PollRetries  int       `json:"poll_retries"`
	BoundMs      float64   `json:"bound_ms"`
	SMNodes      []string  `json:"sm_nodes"`
	// OpenSMConf is OpenSM's configuration, IbsmArgs ibsm's flags (the
	// priority aside).
	OpenSMConf string         `json:"opensm_conf"`
	IbsmArgs   []string       `json:"ibsm_args"`
	Observer   string         `json:"observer"`
	Hosts      []string       `json:"traffic_hosts"`
	Cases      []FailoverCase `json:"cases"`
	Passed     bool           `json:"passed"`
	DurationS  float64        `json:"duration_s"`
	Files      []string       `json:"files,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// notOneMaster counts the readings that found other than one Master,
// leaving out those taken in [from, to), when there can be none (zero
// times: none left out).
func notOneMaster(ss []runner.SMSample, from, to time.Time) int {
	n := 0
	for _, s := range ss {
		if !from.IsZero() && !s.At.Before(from) && (to.IsZero() || s.At.Before(to)) {
			continue
		}
		if len(s.States.Masters()) != 1 {
			n++
		}
	}
	return n
}

// firstState returns the first reading at or after from in which node is
// in state, and whether there is one.
func firstState(ss []runner.SMSample, from time.Time, node, state string) (time.Time, bool) {
	for _, s := range ss {
		if !s.At.Before(from) && s.States[node] == state {
			return s.At, true
		}
	}
	return time.Time{}, false
}

// firstLeft returns the first reading at or after from in which node is
// neither Standby nor unread, and whether there is one.
func firstLeft(ss []runner.SMSample, from time.Time, node string) (time.Time, bool) {
	for _, s := range ss {
		if st, ok := s.States[node]; ok && !s.At.Before(from) && st != "Standby" && st != "" {
			return s.At, true
		}
	}
	return time.Time{}, false
}

// mastersAround returns the SM nodes Master in the last reading before
// from and in the first after to: those an `sminfo` run between them may
// rightly name.
func mastersAround(ss []runner.SMSample, from, to time.Time) map[string]bool {
	out := map[string]bool{}
	before, after := -1, -1
	for i, s := range ss {
		if s.At.Before(from) {
			before = i
		}
		if after < 0 && s.At.After(to) {
			after = i
		}
	}
	for _, i := range []int{before, after} {
		if i >= 0 {
			for _, m := range ss[i].States.Masters() {
				out[m] = true
			}
		}
	}
	return out
}

// judgeSMInfo decides one sminfo run: it must have printed the port GUID
// of an SM node in masters as SMINFO_MASTER. guids maps port GUIDs to SM
// nodes.
func judgeSMInfo(out string, runErr error, guids map[uint64]string, masters map[string]bool) FailoverSMInfo {
	var v FailoverSMInfo
	var want []string
	for m := range masters {
		want = append(want, m)
	}
	v.Want = strings.Join(sortedStrings(want), " or ")
	if runErr != nil {
		v.Error = runErr.Error()
		return v
	}
	a, err := runner.ParseSMInfo(out)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.Named, v.State = guids[a.GUID], a.State
	if v.Named == "" {
		v.Named = fmt.Sprintf("%#x", a.GUID)
	}
	v.OK = a.State == "SMINFO_MASTER" && masters[guids[a.GUID]]
	return v
}

// inTransition decides whether a run from from to to that judgeSMInfo
// found wrong (v) was a handover's truthful answer: it overlaps the
// window [wFrom, wTo], named one of the SM nodes and printed it Master or
// Standby.
func inTransition(v FailoverSMInfo, from, to, wFrom, wTo time.Time, sms map[string]bool) bool {
	if v.OK || v.Error != "" || wFrom.IsZero() || to.Before(wFrom) || from.After(wTo) || !sms[v.Named] {
		return false
	}
	return v.State == "SMINFO_STANDBY" || v.State == "SMINFO_MASTER"
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// lidChanges lists the ports whose LID differs between before and after
// (a port missing from either counts as changed).
func lidChanges(before, after map[string]uint16) []string {
	var out []string
	for p, l := range before {
		if a, ok := after[p]; !ok || a != l {
			out = append(out, fmt.Sprintf("%s %d→%d", p, l, after[p]))
		}
	}
	for p, a := range after {
		if _, ok := before[p]; !ok {
			out = append(out, fmt.Sprintf("%s new %d", p, a))
		}
	}
	return sortedStrings(out)
}

// dropChanges returns the counters of after that grew since before.
func dropChanges(before, after map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range after {
		if v > before[k] {
			out[k] = v - before[k]
		}
	}
	return out
}

// failoverChecks are the verdicts on one case's measurements.
func failoverChecks(c *FailoverCase) []runner.Check {
	var cs []runner.Check
	add := func(name string, ok bool, format string, args ...any) {
		cs = append(cs, runner.Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	ms := func(p *float64) string {
		if p == nil {
			return "never"
		}
		return fmt.Sprintf("%.0f ms", *p)
	}
	switch c.Scenario {
	case FailoverKill:
		add("master given up within bound", c.DetectMs != nil && *c.DetectMs <= c.BoundMs,
			"%s (%s) left Standby %s after %s (%s) died; bound %.0f ms", c.SecondNode, c.Pairing.Second, ms(c.DetectMs), c.FirstNode, c.Pairing.First, c.BoundMs)
		add("standby became Master", c.MasterMs != nil && c.FinalMaster == c.SecondNode,
			"Master %s after the kill (%s), subnet up %s; last reading's master: %s", ms(c.MasterMs), c.MasterFrom, ms(c.UpMs), orNone(c.FinalMaster))
	case FailoverHandover:
		add("handed over", c.MasterMs != nil && c.FinalMaster == c.SecondNode,
			"%s (%s, higher priority) Master %s after it started, subnet up %s; last reading's master: %s", c.SecondNode, c.Pairing.Second, ms(c.MasterMs), ms(c.UpMs), orNone(c.FinalMaster))
	}
	window := ""
	if c.Scenario == FailoverKill {
		window = ", leaving out those from the kill until the standby was Master"
	}
	add("one Master at every reading", len(c.Samples) > 0 && c.NotOneMaster == 0,
		"%d of %d readings every %v found other than one Master%s (%d taken again)", c.NotOneMaster, len(c.Samples), FailoverSampleEvery, window, c.Rereads)
	add("LIDs unchanged", c.PortsRead > 0 && len(c.LIDsChanged) == 0,
		"%d ports read before and after; changed: %s", c.PortsRead, orNone(strings.Join(c.LIDsChanged, ", ")))
	add("no packet lost", c.Flows > 0 && c.Received > 0 && c.Lost == 0 && c.Refused == 0,
		"%d flows among the non-SM hosts: %d sent, %d received, %d lost, %d refused at the source (%d by the port, %d with the backlog full); largest source backlog %d packets",
		c.Flows, c.Sent, c.Received, c.Lost, c.Refused, c.RefusedPort, c.RefusedBacklog, c.MaxBacklog)
	right, transition := 0, 0
	var wrong []string
	for _, s := range c.SMInfo {
		if s.OK {
			right++
			continue
		}
		if s.Transition {
			transition++
			continue
		}
		got := s.Named + " " + s.State
		if s.Error != "" {
			got = s.Error
		}
		wrong = append(wrong, fmt.Sprintf("at %.1f s want %s, got %s", s.T, s.Want, got))
	}
	tr := ""
	if transition > 0 {
		tr = fmt.Sprintf(", %d more during the handover (the old master, Standby by then, before the new one's sweep named itself to the ports)", transition)
	}
	add("sminfo names the master", len(c.SMInfo) > 0 && right+transition == len(c.SMInfo) && right > 0,
		"%d of %d runs right%s%s", right, len(c.SMInfo), tr, prefixed("; ", strings.Join(wrong, "; ")))
	return cs
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// failoverMasterEvent returns when ibsm's events (evs, read at ats) first
// show it Master by action after from, and whether they do.
func failoverMasterEvent(evs []sm.SMEvent, ats []time.Time, from time.Time, actions ...sm.SMAction) (time.Time, bool) {
	for i, e := range evs {
		if i >= len(ats) || ats[i].Before(from) || e.State != "Master" {
			continue
		}
		for _, a := range actions {
			if e.Action == a {
				return ats[i], true
			}
		}
	}
	return time.Time{}, false
}

// osmStates returns the state changes OpenSM logged ("Entering MASTER
// state" and the like) at or after from, in order: each state's name
// ("MASTER", "DISCOVERING", …) and its time. Lines whose time does not
// parse are skipped.
func osmStates(log string, from time.Time) (states []string, ats []time.Time) {
	for _, line := range strings.Split(log, "\n") {
		_, msg, ok := strings.Cut(line, "-> Entering ")
		if !ok {
			continue
		}
		state, ok := strings.CutSuffix(strings.TrimSpace(msg), " state")
		if !ok {
			continue
		}
		t, err := opensmrun.LineTime(line, from)
		if err != nil || t.Before(from) {
			continue
		}
		states, ats = append(states, state), append(ats, t)
	}
	return states, ats
}

// firstOSMState returns when OpenSM's log (osmStates) first shows state.
func firstOSMState(states []string, ats []time.Time, state string) (time.Time, bool) {
	for i, s := range states {
		if s == state {
			return ats[i], true
		}
	}
	return time.Time{}, false
}

// msSince is d in ms, as a pointer for the report's optional times.
func msSince(t, from time.Time) *float64 {
	v := float64(t.Sub(from).Microseconds()) / 1000
	return &v
}
