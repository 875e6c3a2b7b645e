package harness_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"ibfab/bpf"
	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// dataVL0 matches the data frames of the HCAs' UD traffic (SL 0, VL 0).
var dataVL0 = bpf.Match{Fields: bpf.FieldEtherType | bpf.FieldVL, EtherType: wire.EtherTypeData, VL: 0}

// faultsOn returns the fault rules on the frames from sends.
func faultsOn(t *testing.T, f *fabrictest.Fabric, from string) []harness.Fault {
	t.Helper()
	all, err := harness.ListFaults(f.Name)
	require.NoError(t, err)
	var out []harness.Fault
	for _, x := range all {
		if x.From == from {
			out = append(out, x)
		}
	}
	return out
}

// tcxPrograms returns the IDs of the TCX programs on node's port, egress.
func tcxPrograms(t *testing.T, f *fabrictest.Fabric, node string, port int) []uint32 {
	t.Helper()
	var ids []uint32
	require.NoError(t, fabricnet.Do(fabricnet.Namespace(f.Name, node), func() error {
		l, err := netlink.LinkByName(fabricnet.PortIface(port))
		if err != nil {
			return err
		}
		progs, err := bpf.Attached(l.Attrs().Index, bpf.Egress)
		for _, p := range progs {
			ids = append(ids, uint32(p))
		}
		return err
	}))
	return ids
}

// sendTraffic runs ca1's UD traffic to dlid until n packets arrived at
// ca2 (or sent, when most are lost), stops it and returns how many ca1's
// generator sent.
func sendTraffic(t *testing.T, f *fabrictest.Fabric, dlid uint16, n uint64) uint64 {
	t.Helper()
	rx0 := f.Node("ca2").Ports[0].Traffic.RxPackets
	f.MustCall("ca1", "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 5, Payload: 256, Dests: []uint16{dlid}, Seed: 1}, nil)
	fabrictest.Wait(t, 20*time.Second, "traffic at ca2", func() bool {
		return f.Node("ca2").Ports[0].Traffic.RxPackets-rx0 >= n
	})
	var gs struct {
		Sent uint64 `json:"sent"`
	}
	f.MustCall("ca1", "traffic-stop", map[string]int{"port": 1}, &gs)
	return gs.Sent
}

// settle waits until ca2 has received every packet ca1's generator sent
// (sent, in all) but those the rules on ca1[1] dropped or corrupted, and
// every one of them went through the rules; it returns ca2's port status
// and the counters of ca1[1]'s first rule (zero without one).
func settle(t *testing.T, f *fabrictest.Fabric, sent uint64) (nodeproc.PortStatus, bpf.Counters) {
	t.Helper()
	var (
		p nodeproc.PortStatus
		c bpf.Counters
	)
	// Until two polls in a row find the same counts, all sent frames
	// accounted for: a frame is counted by the rule before ca2 counts it,
	// so one poll can see either side ahead of the other.
	var last string
	fabrictest.Wait(t, 10*time.Second, "ca2 received what got through", func() bool {
		p = f.Node("ca2").Ports[0]
		c = bpf.Counters{}
		if fl := faultsOn(t, f, "ca1[1]"); len(fl) > 0 {
			c = fl[0].Counters
		}
		now := fmt.Sprint(p.Traffic.RxPackets, p.Drops, c)
		stable := now == last
		last = now
		return stable && p.Traffic.RxPackets+c.Acted >= sent
	})
	return p, c
}

// TestFaultDrop: a 10 % drop rule on the data frames ca1 sends takes out
// exactly the frames its counter says: ca2's packet counters fall short by
// that many. Clearing it detaches the program and the losses stop.
func TestFaultDrop(t *testing.T) {
	f := fabrictest.Up(t, "fdrop", pair(t), harness.UpOptions{})
	sm := f.NewSM("ca1")
	require.NoError(t, sm.Configure())
	dlid := sm.LID[f.Index("ca2")]

	faults, err := harness.AddFault(f.Name, "ca1", 1, false, bpf.Rule{Action: bpf.Drop, Rate: 100_000, Match: dataVL0})
	require.NoError(t, err)
	require.Len(t, faults, 1)
	assert.Equal(t, harness.Fault{From: "ca1[1]", To: "ca2[1]", Slot: 0, Action: bpf.Drop,
		Rule: "--drop 10% --ethertype data --vl 0", Spec: faults[0].Spec}, faults[0])

	tx0 := f.Node("ca1").Ports[0].Counters.PortXmitPkts
	rx0 := f.Node("ca2").Ports[0].Counters.PortRcvPkts
	sent := sendTraffic(t, f, dlid, 300)
	p, c := settle(t, f, sent)
	t.Logf("sent %d, rule %+v", sent, c)
	assert.Equal(t, sent, c.Matched, "every UD packet matched")
	assert.InDelta(t, float64(sent)/10, float64(c.Acted), float64(sent)/10, "about 10 %% dropped")
	require.NotZero(t, c.Acted)
	assert.Equal(t, sent-c.Acted, p.Traffic.RxPackets, "UD packets at ca2")
	tx := f.Node("ca1").Ports[0].Counters.PortXmitPkts - tx0
	assert.Equal(t, tx-c.Acted, p.Counters.PortRcvPkts-rx0, "ca2's PortRcvPkts short of ca1's PortXmitPkts by the drops")
	assert.Empty(t, p.Drops, "the receiver saw nothing wrong")
	require.NotEmpty(t, tcxPrograms(t, f, "ca1", 1))

	// Clear: no program left, no rule listed, no more losses.
	n, err := harness.ClearFaults(f.Name, "ca1", 1)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Empty(t, tcxPrograms(t, f, "ca1", 1), "TCX programs left on ca1 p1")
	all, err := harness.ListFaults(f.Name)
	require.NoError(t, err)
	assert.Empty(t, all)
	rxBefore := p.Traffic.RxPackets
	sent2 := sendTraffic(t, f, dlid, 100)
	p, _ = settle(t, f, rxBefore+sent2)
	assert.Equal(t, rxBefore+sent2, p.Traffic.RxPackets, "nothing lost after clear")
}

// TestFaultCorrupt: corrupted frames reach ca2, fail its CRC check and
// are counted there as CRC errors, as many as the rule says it corrupted.
func TestFaultCorrupt(t *testing.T) {
	f := fabrictest.Up(t, "fcrc", pair(t), harness.UpOptions{})
	sm := f.NewSM("ca1")
	require.NoError(t, sm.Configure())

	code, out, errOut := run("fault", f.Name, "ca2[1]", "--ingress", "--corrupt", "5%", "--ethertype", "data", "--vl", "0")
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Contains(t, out, "fault ca1[1] -> ca2[1] slot 0: --corrupt 5% --ethertype data --vl 0")

	sent := sendTraffic(t, f, sm.LID[f.Index("ca2")], 400)
	p, c := settle(t, f, sent)
	t.Logf("sent %d, rule %+v", sent, c)
	require.NotZero(t, c.Acted)
	assert.Equal(t, sent, c.Matched)
	assert.Equal(t, c.Acted, p.Drops["crc_error"], "CRC errors at ca2")
	assert.Equal(t, sent-c.Acted, p.Traffic.RxPackets)
	assert.GreaterOrEqual(t, uint64(p.Counters.PortRcvErrors), c.Acted, "PortRcvErrors")

	// The CLI lists it, then clears everything.
	code, out, errOut = run("fault", "list", f.Name, "--json")
	require.Equal(t, harness.ExitOK, code, errOut)
	var listed []harness.Fault
	require.NoError(t, json.Unmarshal([]byte(out), &listed))
	require.Len(t, listed, 1)
	assert.Equal(t, c.Acted, listed[0].Counters.Acted)
	code, out, errOut = run("fault", "clear", f.Name)
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Contains(t, out, "removed 1 fault rules")
	assert.Empty(t, tcxPrograms(t, f, "ca1", 1))
}

// TestFaultMatch: a rule on directed-route NodeInfo SMPs, set as what the
// switch port receives from the SM's HCA, drops those and nothing else:
// PortInfo still passes; with --count 1 the next NodeInfo passes too.
// ibfab down removes the pinned programs.
func TestFaultMatch(t *testing.T) {
	topo := fabrictest.Star(t)
	f := fabrictest.Up(t, "fmatch", topo, harness.UpOptions{})
	sm := f.NewSM("ca1")
	sw := f.Index("sw1")

	code, out, errOut := run("fault", f.Name, "sw1[1]", "--ingress", "--drop", "100%",
		"--class", "0x81", "--attr", "NodeInfo", "--count", "1")
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Contains(t, out, "ca1[1] -> sw1[1]")

	_, err := sm.NodeGUID(sw)
	require.Error(t, err, "the first NodeInfo is dropped")
	_, err = sm.DR(mad.MethodGet, mad.AttrPortInfo, 1, nil, sw)
	require.NoError(t, err, "PortInfo passes")
	guid, err := sm.NodeGUID(sw)
	require.NoError(t, err, "the count is used up")
	assert.Equal(t, topo.Node(sw).GUID, guid)

	fl := faultsOn(t, f, "ca1[1]")
	require.Len(t, fl, 1)
	assert.Equal(t, bpf.Counters{Matched: 2, Acted: 1}, fl[0].Counters)

	// A second rule on the same port takes the next slot; list shows both.
	_, err = harness.AddFault(f.Name, "ca1", 1, false, bpf.Rule{Action: bpf.Drop, Rate: bpf.RateOne,
		Match: bpf.Match{Fields: bpf.FieldClass | bpf.FieldMethod | bpf.FieldAttr, Class: mad.ClassSubnDirected,
			Method: mad.MethodGet, Attr: mad.AttrPortInfo}})
	require.NoError(t, err)
	_, err = sm.DR(mad.MethodGet, mad.AttrPortInfo, 1, nil, sw)
	require.Error(t, err, "PortInfo Get dropped now")
	fl = faultsOn(t, f, "ca1[1]")
	require.Len(t, fl, 2)
	assert.Equal(t, 1, fl[1].Slot)
	assert.Equal(t, bpf.Counters{Matched: 1, Acted: 1}, fl[1].Counters)

	pins := filepath.Join(bpf.FSRoot, "ibfab", f.Name)
	_, err = os.Stat(pins)
	require.NoError(t, err, "pinned under bpffs")
	require.NoError(t, harness.Down(f.Name))
	_, err = os.Stat(pins)
	assert.True(t, errors.Is(err, os.ErrNotExist), "ibfab down removes %s: %v", pins, err)
}

// TestFaultDelay: delayed frames arrive later: the receiver's latency
// median with a delay rule exceeds the one without. The kernel needs the
// fq qdisc; without it the fault command says so.
func TestFaultDelay(t *testing.T) {
	f := fabrictest.Up(t, "fdelay", pair(t), harness.UpOptions{})
	sm := f.NewSM("ca1")
	require.NoError(t, sm.Configure())
	dlid := sm.LID[f.Index("ca2")]

	sent := sendTraffic(t, f, dlid, 100)
	p, _ := settle(t, f, sent)
	before := p.Traffic.Latency.P50Ns

	const delay = 20 * time.Millisecond
	_, err := harness.AddFault(f.Name, "ca1", 1, false, bpf.Rule{Action: bpf.Delay, Rate: bpf.RateOne, Delay: delay, Match: dataVL0})
	if errors.Is(err, bpf.ErrNoFQ) {
		t.Logf("this kernel has no fq qdisc: delay faults cannot work here, and ibfab says so: %v", err)
		code, _, errOut := run("fault", f.Name, "ca1[1]", "--delay", "2ms")
		assert.Equal(t, harness.ExitFailure, code)
		assert.Contains(t, errOut, "CONFIG_NET_SCH_FQ")
		all, err := harness.ListFaults(f.Name)
		require.NoError(t, err)
		assert.Empty(t, all, "no rule left behind")
		return
	}
	require.NoError(t, err)
	// Three times as many delayed packets as undelayed: the median of all
	// is a delayed one.
	sent2 := sendTraffic(t, f, dlid, 300)
	p, _ = settle(t, f, sent+sent2)
	after := p.Traffic.Latency.P50Ns
	t.Logf("ca2 latency p50: %v without, %v with a %v delay", time.Duration(before), time.Duration(after), delay)
	assert.Greater(t, after, before)
	assert.Empty(t, p.Drops, "delays lose nothing")
	fl := faultsOn(t, f, "ca1[1]")
	require.Len(t, fl, 1)
	assert.Equal(t, sent2, fl[0].Counters.Acted)

	_, err = harness.ClearFaults(f.Name, "ca1", 0)
	require.NoError(t, err)
	require.NoError(t, fabricnet.Do(fabricnet.Namespace(f.Name, "ca1"), func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		l, err := h.LinkByName("p1")
		if err != nil {
			return err
		}
		ok, err := bpf.HasFQ(h, l.Attrs().Index)
		assert.False(t, ok, "fq removed with the last rule")
		return err
	}))
}

// TestFaultErrors: bad targets are errors that name the problem.
func TestFaultErrors(t *testing.T) {
	f := fabrictest.Up(t, "ferr", fabrictest.Star(t), harness.UpOptions{})
	rule := bpf.Rule{Action: bpf.Drop, Rate: bpf.RateOne}
	for _, tt := range []struct {
		node string
		port int
		err  string
	}{
		{"nosuch", 1, "no node"},
		{"sw1", 3, "not cabled"},
		{"sw1", 9, "ports 1-4"},
	} {
		_, err := harness.AddFault(f.Name, tt.node, tt.port, false, rule)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tt.err)
	}
	_, err := harness.AddFault(f.Name, "sw1", 1, false, bpf.Rule{Action: bpf.Drop})
	assert.ErrorContains(t, err, "rate")
	// Every cabled port of a node at once, and the 17th rule is refused.
	faults, err := harness.AddFault(f.Name, "sw1", 0, false, rule)
	require.NoError(t, err)
	assert.Len(t, faults, 2)
	for range bpf.MaxRules - 1 {
		_, err = harness.AddFault(f.Name, "sw1", 1, false, rule)
		require.NoError(t, err)
	}
	_, err = harness.AddFault(f.Name, "sw1", 1, false, rule)
	assert.ErrorContains(t, err, "rule slots in use")
	n, err := harness.ClearFaults(f.Name, "", 0)
	require.NoError(t, err)
	assert.Equal(t, bpf.MaxRules+1, n)
}

// pair is two HCAs cabled back to back.
func pair(tb testing.TB) *topologies.Topology {
	topo := topologies.New()
	for _, n := range []topologies.Node{
		{Type: topologies.CA, Name: "ca1", NumPorts: 1, GUID: 0x2000},
		{Type: topologies.CA, Name: "ca2", NumPorts: 1, GUID: 0x3000},
	} {
		_, err := topo.AddNode(n)
		require.NoError(tb, err)
	}
	require.NoError(tb, topo.Connect(topologies.PortRef{Node: 0, Port: 1}, topologies.PortRef{Node: 1, Port: 1}, 0, 0))
	return topo
}
