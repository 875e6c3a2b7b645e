package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"ibfab/bpf"
	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/nodeproc"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// soakPKey is the partition the partition changes add and take away; the
// Default partition stays, every port a full member, so the traffic (on
// P_Key index 0) never notices.
const soakPKey = 0x8001

// partitionsConf is ibsm's partitions.conf with the soak partition's
// members (port GUIDs), none: the Default partition alone.
func partitionsConf(members []uint64) string {
	s := "Default=0x7fff : ALL=full ;\n"
	if len(members) == 0 {
		return s
	}
	var gs []string
	for _, g := range members {
		gs = append(gs, fmt.Sprintf("%#x=full", g))
	}
	return s + fmt.Sprintf("soak=%#04x : %s ;\n", soakPKey, strings.Join(gs, ", "))
}

// startSMs writes the partitions file and starts OpenSM first, Master
// of the subnet alone, then ibsm of higher priority, which is handed the
// subnet: ibsm must know OpenSM from its first sweep. (An SM that joins
// later sends no Trap 144 here, and ibsm, assimilating, never reads the
// capability masks again: it would take itself for alone and keep the
// turn blocks of its changes, which OpenSM, taking over, routes into.)
func (r *soakRun) startSMs(ctx context.Context) error {
	r.control = filepath.Join(filepath.Dir(nodeproc.SocketPath(r.o.Fabric, masterNode)), "ibsm-soak.sock")
	r.parts = filepath.Join(r.dir, "partitions.conf")
	if err := os.WriteFile(r.parts, []byte(partitionsConf(nil)), 0o644); err != nil {
		return err
	}
	r.rep.IbsmArgs = ibsmArgs(r.control, r.parts)
	o, err := runner.StartOpenSM(r.o.Fabric, standbyNode, filepath.Join(r.dir, "opensm-"+standbyNode), openSMConf(), []string{"-p", fmt.Sprint(standbyPrio)}, nil)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.opensm = o
	r.mu.Unlock()
	r.event("OpenSM started at %s, priority %d", standbyNode, standbyPrio)
	if _, _, err := o.WaitResult(0, 90*time.Second, func(x runner.SMResult) bool { return x.SubnetUp }); err != nil {
		return fmt.Errorf("OpenSM: subnet not up: %w", err)
	}
	if r.lids, err = r.hostLIDs(ctx); err != nil {
		return err
	}
	r.smp = runner.NewSMInfoSampler(r.o.Fabric, observerNode, map[string]uint16{masterNode: r.lids[masterNode], standbyNode: r.lids[standbyNode]})
	p, err := r.startIbsm()
	if err != nil {
		return err
	}
	if _, _, err := p.WaitResult(0, 90*time.Second, func(x runner.SMResult) bool { return x.SubnetUp }); err != nil {
		return fmt.Errorf("ibsm: subnet not up: %w", err)
	}
	if _, err := r.waitStates(ctx, time.Now().Add(60*time.Second), "Master", "Standby"); err != nil {
		return err
	}
	r.event("ibsm Master at %s, OpenSM Standby at %s", masterNode, standbyNode)
	return nil
}

// startIbsm starts ibsm at the master's HCA, its lines in ibsm-N.jsonl.
func (r *soakRun) startIbsm() (*runner.SMProc, error) {
	r.ibsmN++
	f, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("ibsm-%d.jsonl", r.ibsmN)))
	if err != nil {
		return nil, err
	}
	p, err := runner.StartIbsm(r.o.Fabric, masterNode, ibsmArgs(r.control, r.parts), f, nil)
	if err != nil {
		f.Close()
		return nil, err
	}
	go func() { <-p.Done(); f.Close() }()
	r.mu.Lock()
	r.ibsm = p
	r.qosFlow = "" // a new ibsm knows no flow admitted before
	r.mu.Unlock()
	r.event("ibsm started at %s, priority %d (ibsm-%d.jsonl)", masterNode, masterPrio, r.ibsmN)
	return p, nil
}

// stopSMs stops both SMs.
func (r *soakRun) stopSMs() {
	r.mu.Lock()
	sms := []*runner.SMProc{r.ibsm, r.opensm}
	r.mu.Unlock()
	for _, p := range sms {
		if p != nil {
			p.Stop()
		}
	}
}

// waitStates waits until a reading finds ibsm in state master and OpenSM
// in standby.
func (r *soakRun) waitStates(ctx context.Context, deadline time.Time, master, standby string) (time.Time, error) {
	for {
		s := r.smp.Take()
		if s.States[masterNode] == master && s.States[standbyNode] == standby {
			return s.At, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("SMs not %s/%s: %v", master, standby, s.States)
		}
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}

// hostLIDs reads every CA's port 1 LID.
func (r *soakRun) hostLIDs(ctx context.Context) (map[string]uint16, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := harness.Status(cctx, r.o.Fabric)
	if err != nil {
		return nil, err
	}
	out := map[string]uint16{}
	for _, n := range st.Nodes {
		if n.Type == "hca" && len(n.Ports) > 0 {
			out[n.Name] = n.Ports[0].LID
		}
	}
	for _, h := range append([]string{masterNode, standbyNode}, trafficHosts...) {
		if out[h] == 0 {
			return nil, fmt.Errorf("%s has no LID", h)
		}
	}
	return out, nil
}

// failover kills ibsm, waits for OpenSM to take the subnet over, and
// starts ibsm again after the hold: of higher priority, it is handed the
// subnet back. restored is ibsm's start.
func (r *soakRun) failover(ctx context.Context, d Disturbance, dr *DisturbanceRun) (time.Time, error) {
	r.currentIbsm().Kill()
	killed := time.Now()
	r.event("ibsm killed")
	at, err := r.waitOpenSMMaster(ctx, killed.Add(Bound(KindSMFailover)))
	if err != nil {
		return time.Time{}, err
	}
	dr.TakeoverMs = msSince(at, killed)
	r.event("OpenSM Master %.0f ms after the kill", *dr.TakeoverMs)
	if err := pause(ctx, d.Hold); err != nil {
		return time.Time{}, err
	}
	start := time.Now()
	_, err = r.startIbsm()
	return start, err
}

// waitOpenSMMaster waits for a reading of OpenSM Master.
func (r *soakRun) waitOpenSMMaster(ctx context.Context, deadline time.Time) (time.Time, error) {
	for {
		s := r.smp.Take()
		if s.States[standbyNode] == "Master" {
			return s.At, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("OpenSM did not take over: %v", s.States)
		}
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}

// repartition adds the soak partition with d's hosts (or, when it is
// there, takes it away): ibsm is stopped, its partitions.conf rewritten,
// and started again after the hold.
func (r *soakRun) repartition(ctx context.Context, d Disturbance, dr *DisturbanceRun) (time.Time, error) {
	var members []string
	if r.members == nil {
		members = d.Hosts
	}
	var guids []uint64
	for _, h := range members {
		i, _ := r.topo.Lookup(h)
		guids = append(guids, r.topo.Node(i).Ports[1].GUID)
	}
	if err := os.WriteFile(r.parts, []byte(partitionsConf(guids)), 0o644); err != nil {
		return time.Time{}, err
	}
	r.members = members
	r.currentIbsm().Stop()
	r.event("ibsm stopped; partitions.conf: %s", strings.TrimSpace(partitionsConf(guids)))
	if err := pause(ctx, d.Hold); err != nil {
		return time.Time{}, err
	}
	start := time.Now()
	if _, err := r.startIbsm(); err != nil {
		return time.Time{}, err
	}
	dr.Notes = append(dr.Notes, fmt.Sprintf("partition %#04x members now %v", soakPKey, members))
	return start, nil
}

// checkPKeys reads block 0 of every traffic host's P_Key table from the
// observer: the soak partition's members must hold its key, the others
// not, and all the Default partition's full key.
func (r *soakRun) checkPKeys(ctx context.Context) ([]string, error) {
	member := map[string]bool{}
	for _, h := range r.members {
		member[h] = true
	}
	var bad []string
	for _, h := range trafficHosts {
		keys, err := r.pkeys(ctx, h)
		if err != nil {
			return nil, err
		}
		has := func(k mad.PKey) bool {
			for _, x := range keys {
				if x&0x7fff == k&0x7fff && x != 0 {
					return true
				}
			}
			return false
		}
		if has(soakPKey) != member[h] || !has(0xffff) {
			bad = append(bad, fmt.Sprintf("%s holds %v (member %v)", h, keys, member[h]))
		}
	}
	return bad, nil
}

// pkeys reads block 0 of host's P_Key table with an SMP from the
// observer; an answer may take a moment after a sweep.
func (r *soakRun) pkeys(ctx context.Context, host string) ([]mad.PKey, error) {
	b := mad.AppendSMP(nil, &mad.SMPFields{Method: mad.MethodGet, TransactionID: uint64(0x50a4<<32 | int(r.lids[host])),
		AttrID: mad.AttrPKeyTable, AttrModifier: mad.PKeyTableModifier(1, 0)})
	var m nodeproc.ReceivedMAD
	if err := call(ctx, r.o.Fabric, observerNode, "mad", nodeproc.MADArgs{Port: 1, DLID: r.lids[host], MAD: b, TimeoutMS: 500}, &m); err != nil {
		return nil, fmt.Errorf("P_KeyTable of %s: %w", host, err)
	}
	s := mad.SMP(m.MAD)
	if !s.IsValid() || s.MAD().Status() != mad.StatusOK {
		return nil, fmt.Errorf("P_KeyTable of %s: bad answer", host)
	}
	f := mad.PKeyTable(s.Data()).Fields()
	var out []mad.PKey
	for _, k := range f.PKeys {
		if k != 0 {
			out = append(out, k)
		}
	}
	return out, nil
}

// changeQoS admits a QoS flow between d's hosts, or releases the one
// admitted before, through `ibsm qos` on ibsm's control socket.
func (r *soakRun) changeQoS(ctx context.Context, d Disturbance, dr *DisturbanceRun) (time.Time, error) {
	if len(d.Hosts) != 2 {
		return time.Time{}, errors.New("no hosts for a QoS flow")
	}
	r.mu.Lock()
	flow := r.qosFlow
	r.mu.Unlock()
	args := []string{"qos", "del", flow}
	want := sm.QoSRelease
	if flow == "" {
		flow = fmt.Sprintf("soak%d", dr.N)
		args = []string{"qos", "add", "--id", flow, "--src", d.Hosts[0], "--dst", d.Hosts[1], "--mbps", "100", "--latency-us", "10000"}
		want = sm.QoSAdmit
	}
	start := time.Now()
	ev, err := r.qosCall(ctx, args)
	if err != nil {
		return time.Time{}, err
	}
	if ev.Action != want {
		return time.Time{}, fmt.Errorf("ibsm %s: %s, want %s (%s)", strings.Join(args, " "), ev.Action, want, ev.Reason)
	}
	r.mu.Lock()
	r.qosFlow = map[bool]string{true: flow, false: ""}[want == sm.QoSAdmit]
	r.mu.Unlock()
	dr.Notes = append(dr.Notes, fmt.Sprintf("ibsm %s: %s", strings.Join(args, " "), ev.Action))
	return start, nil
}

// qosCall runs `ibsm ARGS --control SOCK --json` and returns its event.
func (r *soakRun) qosCall(ctx context.Context, args []string) (*sm.QoSEvent, error) {
	bin, err := runner.SMBinary()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, bin, append(args, "--control", r.control, "--json")...).Output()
	var rep sm.QoSReply
	if jerr := json.Unmarshal(out, &rep); jerr != nil || rep.Event == nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("ibsm %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return nil, fmt.Errorf("ibsm %s: %v %v: %q", strings.Join(args, " "), err, jerr, out)
	}
	return rep.Event, nil
}

// addMADLoss drops pct % of the SMPs (both classes, VL15) each way on
// the SM's link.
func (r *soakRun) addMADLoss(pct int) error {
	rate := uint32(uint64(bpf.RateOne) * uint64(pct) / 100)
	for _, ingress := range []bool{false, true} {
		for _, c := range []mad.MgmtClass{mad.ClassSubnDirected, mad.ClassSubnLID} {
			rule := bpf.Rule{Action: bpf.Drop, Rate: rate, Match: bpf.Match{Fields: bpf.FieldVL | bpf.FieldClass, VL: 15, Class: c}}
			if _, err := harness.AddFault(r.o.Fabric, masterNode, 1, ingress, rule); err != nil {
				return err
			}
		}
	}
	return nil
}

// switchLIDs adds every switch's LID to r.lids (a switch's ports all
// report its port 0's).
func (r *soakRun) switchLIDs(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := harness.Status(cctx, r.o.Fabric)
	if err != nil {
		return err
	}
	for _, n := range st.Nodes {
		if n.Type == "switch" && len(n.Ports) > 0 && n.Ports[0].LID != 0 {
			r.lids[n.Name] = n.Ports[0].LID
		}
	}
	return nil
}

// blockedTurns reads, from the observer, the SLtoVL table of every turn
// between two cabled ports of every switch and names those that map SL 0
// to VL15 ("sw10 1>2").
func (r *soakRun) blockedTurns(ctx context.Context) ([]string, error) {
	var out []string
	for i, n := range r.topo.Nodes() {
		if n.Type != topologies.Switch {
			continue
		}
		ports := cabledPorts(r.topo, i)
		for _, in := range ports {
			for _, o := range ports {
				if in == o {
					continue
				}
				vl, err := r.turnVL(ctx, n.Name, in, o)
				if err != nil {
					return out, err
				}
				if vl == 15 {
					out = append(out, fmt.Sprintf("%s %d>%d", n.Name, in, o))
				}
			}
		}
	}
	return out, nil
}

// cabledPorts are switch i's ports with a cable.
func cabledPorts(topo *topologies.Topology, i int) []int {
	var out []int
	for p := 1; p <= topo.Node(i).NumPorts; p++ {
		if _, ok := topo.Peer(topologies.PortRef{Node: i, Port: p}); ok {
			out = append(out, p)
		}
	}
	return out
}

// turnVL reads the VL switch sw maps SL 0 to from port in to port out.
func (r *soakRun) turnVL(ctx context.Context, sw string, in, out int) (uint8, error) {
	m := mad.SLtoVLModifier{InPort: uint8(in), OutPort: uint8(out)}
	r.tid++
	b := mad.AppendSMP(nil, &mad.SMPFields{Method: mad.MethodGet, TransactionID: 0x50a5<<32 | r.tid, AttrID: mad.AttrSLtoVLMapping, AttrModifier: m.Modifier()})
	var got nodeproc.ReceivedMAD
	if err := call(ctx, r.o.Fabric, observerNode, "mad", nodeproc.MADArgs{Port: 1, DLID: r.lids[sw], MAD: b, TimeoutMS: 300}, &got); err != nil {
		return 0, fmt.Errorf("SLtoVL %d>%d of %s: %w", in, out, sw, err)
	}
	s := mad.SMP(got.MAD)
	if !s.IsValid() || s.MAD().Status() != mad.StatusOK || !mad.SLtoVLMappingTable(s.Data()).IsValid() {
		return 0, fmt.Errorf("SLtoVL %d>%d of %s: bad answer", in, out, sw)
	}
	return mad.SLtoVLMappingTable(s.Data()).VL(0), nil
}
