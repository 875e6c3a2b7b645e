package sm_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// mgmtPort is the management port of node n: port 0 of a switch, port 1
// of a CA (the thesis's CAs have one).
func mgmtPort(n *memfabric.Node) uint8 {
	if n.Agent.Type() == mad.NodeTypeSwitch {
		return 0
	}
	return 1
}

// mgmtGUID is the port GUID of node i's management port.
func mgmtGUID(topo *topologies.Topology, i int) uint64 {
	if topo.Node(i).Type == topologies.Switch {
		return topo.Node(i).GUID
	}
	return topo.Node(i).Ports[1].GUID
}

// heldPortInfo reads node n's management port's PortInfo as its driver
// does, past the M_Key check.
func heldPortInfo(t *testing.T, n *memfabric.Node) mad.PortInfoFields {
	t.Helper()
	p := mgmtPort(n)
	b, err := n.Agent.LocalGet(p, mad.AttrPortInfo, uint32(p))
	require.NoError(t, err)
	return mad.PortInfo(b).Fields()
}

// violations sums the M_Key violations of every agent.
func violations(f *memfabric.Fabric) uint64 {
	var n uint64
	for _, x := range f.Nodes() {
		n += x.Agent.Stats().MKeyViolations
	}
	return n
}

// TestMKeyProgrammed: the SM gives every management port its key, the
// protection level and the lease period, and every SMP of the next sweep
// carries the port's own key: at protection 2 nothing fails the check.
func TestMKeyProgrammed(t *testing.T) {
	const base = 0xc0ffee
	for _, perPort := range []bool{false, true} {
		t.Run(map[bool]string{false: "one key", true: "per port"}[perPort], func(t *testing.T) {
			b := newBench(t, topologies.Thesis8(), 0, 1)
			cfg := sm.Config{MKeyConfig: sm.MKeyConfig{MKey: base, MKeyProtect: 2, MKeyLease: 7, MKeyPerPort: perPort}}
			s := b.newSM(t, cfg)
			res := b.sweep(t, s)
			require.True(t, res.SubnetUp, res.Reason)
			keys := map[uint64]bool{}
			for _, n := range b.f.Nodes() {
				want := uint64(base)
				if perPort {
					want = sm.PerPortMKey(base, mgmtGUID(b.topo, n.Index))
				}
				pi := heldPortInfo(t, n)
				assert.Equal(t, want, pi.MKey, n.Name)
				assert.EqualValues(t, 2, pi.MKeyProtectBits, n.Name)
				assert.EqualValues(t, 7, pi.MKeyLeasePeriod, n.Name)
				got, ok := s.MKeyOf(mgmtGUID(b.topo, n.Index))
				assert.True(t, ok, n.Name)
				assert.Equal(t, want, got, n.Name)
				keys[pi.MKey] = true
			}
			if perPort {
				assert.Len(t, keys, len(b.f.Nodes()), "a key per port")
			}
			require.Zero(t, violations(b.f), "the first sweep's SMPs carry the keys")
			again := b.sweep(t, s)
			require.True(t, again.SubnetUp, again.Reason)
			assert.Zero(t, violations(b.f), "every SMP carries its port's key")
			assert.Empty(t, again.Warnings)
			act, _ := again.Phase(sm.PhaseActivation)
			assert.Zero(t, act.SMPs, "nothing to set again")
			assert.Equal(t, len(b.f.Nodes()), s.Stats().MKey.Keys)
		})
	}
}

// TestMKeyConfig: protection needs a key, and goes up to 3.
func TestMKeyConfig(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	for _, c := range []sm.Config{
		{MKeyConfig: sm.MKeyConfig{MKeyProtect: 1}},
		{MKeyConfig: sm.MKeyConfig{MKeyLease: 3}},
		{MKeyConfig: sm.MKeyConfig{MKeyPerPort: true}},
		{MKeyConfig: sm.MKeyConfig{MKey: 1, MKeyProtect: 4}},
	} {
		_, err := sm.New(b.port, c)
		assert.ErrorIs(t, err, sm.ErrConfig, "%+v", c)
	}
}

// TestMKeyCache: the keys and routes survive a restart through the file
// beside the LID file: a new SM with another base key reaches every port
// at protection 2 with the keys the cache holds and gives them its own;
// without the cache it cannot read them.
func TestMKeyCache(t *testing.T) {
	dir := t.TempDir()
	lidFile := filepath.Join(dir, "guid2lid")
	b := newBench(t, topologies.Thesis8(), 0, 1)
	first := b.newSM(t, sm.Config{
		MKeyConfig: sm.MKeyConfig{MKey: 0x1111, MKeyProtect: 2, MKeyPerPort: true},
		LIDConfig:  sm.LIDConfig{LIDFile: lidFile},
	})
	require.True(t, b.sweep(t, first).SubnetUp)
	c, err := sm.LoadMKeyCache(sm.MKeyFile(lidFile))
	require.NoError(t, err)
	assert.Len(t, c.Keys, len(b.f.Nodes()))
	assert.Len(t, c.Paths, len(b.f.Nodes()))
	assert.Equal(t, b.topo.Node(0).Ports[1].GUID, c.SMPort)
	_, err = sm.LoadLIDMap(lidFile)
	require.NoError(t, err, "the LID file keeps its format")

	var events recorder[sm.MKeyEvent]
	blind, err := sm.New(b.port, sm.Config{
		MKeyConfig: sm.MKeyConfig{MKey: 0x2222, MKeyProtect: 2, OnMKeyEvent: events.add},
	})
	require.NoError(t, err)
	res := b.sweep(t, blind)
	assert.False(t, res.SubnetUp, "without the keys the SM's own port does not answer")

	second := b.newSM(t, sm.Config{
		MKeyConfig: sm.MKeyConfig{MKey: 0x2222, MKeyProtect: 2, OnMKeyEvent: events.add},
		LIDConfig:  sm.LIDConfig{LIDFile: lidFile},
	})
	res = b.sweep(t, second)
	require.True(t, res.SubnetUp, res.Reason)
	for _, n := range b.f.Nodes() {
		assert.EqualValues(t, 0x2222, heldPortInfo(t, n).MKey, n.Name)
	}
	c, err = sm.LoadMKeyCache(sm.MKeyFile(lidFile))
	require.NoError(t, err)
	for g, k := range c.Keys {
		assert.EqualValues(t, 0x2222, k, "%#x", g)
	}
}

// TestMKeyProtectedAndRecovered: a port another SM protected at level 2
// with a key this SM does not hold does not answer: an event, counted,
// and the subnet comes up without it. Once its lease runs out (the SM's
// SMPs started it) it shows its key at protection 0, the next sweep takes
// the key and gives the port the SM's own.
func TestMKeyProtectedAndRecovered(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	ca7, _ := b.topo.Lookup("ca7")
	protectOwnPort(t, b.f, ca7, 0xbad, 2)
	setLease(t, b.f, ca7, 0xbad, 5)
	var events recorder[sm.MKeyEvent]
	s := b.newSM(t, sm.Config{MKeyConfig: sm.MKeyConfig{MKey: 0xabc, MKeyProtect: 1, OnMKeyEvent: events.add}})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, 6, res.HCAs, "ca7 left out")
	evs := events.list()
	require.Len(t, evs, 1)
	assert.Equal(t, sm.MKeyProtected, evs[0].Action)
	assert.Equal(t, "mkey", evs[0].Event)
	assert.NotEmpty(t, evs[0].Path)
	assert.EqualValues(t, 1, s.Stats().MKey.Protected)
	n := b.f.Node(ca7)
	assert.EqualValues(t, 0xbad, heldPortInfo(t, n).MKey)

	b.f.Advance(6 * time.Second) // the lease runs out
	require.Zero(t, heldPortInfo(t, n).MKeyProtectBits)
	res = b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, 7, res.HCAs)
	evs = events.list()
	require.Len(t, evs, 2)
	assert.Equal(t, sm.MKeyRecovered, evs[1].Action)
	assert.Equal(t, "0xbad", evs[1].MKey)
	assert.EqualValues(t, 1, s.Stats().MKey.Recovered)
	pi := heldPortInfo(t, n)
	assert.EqualValues(t, 0xabc, pi.MKey, "the SM's own key")
	assert.EqualValues(t, 1, pi.MKeyProtectBits)
	checkUp(t, b.f)
}

// setLease sets the M_Key lease period of CA node i's port 1, which holds
// key, from the CA itself.
func setLease(t *testing.T, f *memfabric.Fabric, i int, key uint64, secs uint16) {
	t.Helper()
	n := f.Node(i)
	b, err := n.Agent.LocalGet(1, mad.AttrPortInfo, 1)
	require.NoError(t, err)
	pi := mad.PortInfo(b).Fields()
	pi.PortState, pi.PortPhysicalState, pi.LinkDownDefaultState = mad.PortStateNoChange, mad.PhysStateNoChange, mad.PhysStateNoChange
	pi.LinkWidthEnabled, pi.LinkSpeedEnabled = mad.LinkWidthNoChange, mad.LinkSpeedNoChange
	pi.MKeyLeasePeriod = secs
	m, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodSet, AttrID: mad.AttrPortInfo, AttrModifier: 1,
		Path: []uint8{0}, MKey: key, Data: mad.AppendPortInfo(nil, &pi)})
	require.NoError(t, err)
	f.Send(i, agent.Request{Port: 1, MAD: m})
	f.Run()
	require.Equal(t, secs, heldPortInfo(t, n).MKeyLeasePeriod)
}

// TestMKeyTrap256: an SMP with a wrong key to a protected port makes its
// SMA send Trap 256 to the master, which represses it (the SMA stops
// repeating it) and reports the port and the requester.
func TestMKeyTrap256(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	var events recorder[sm.MKeyEvent]
	s := b.newSM(t, sm.Config{
		MKeyConfig: sm.MKeyConfig{MKey: 0xabc, MKeyProtect: 2, MKeyLease: 5, OnMKeyEvent: events.add},
	})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	ca4, _ := b.topo.Lookup("ca4")
	ca7, _ := b.topo.Lookup("ca7")
	lid4 := b.f.Node(ca4).Agent.PortConfig(1).LID
	lid7 := b.f.Node(ca7).Agent.PortConfig(1).LID
	f := mad.SMPFields{Method: mad.MethodGet, TransactionID: 99, AttrID: mad.AttrPortInfo, AttrModifier: 1, MKey: 7}
	b.f.Send(ca7, agent.Request{Port: 1, DLID: lid4, MAD: mad.AppendSMP(nil, &f)})
	represses := s.Stats().Represses
	require.NoError(t, s.Serve(context.Background(), 10*time.Millisecond))
	evs := events.list()
	require.Len(t, evs, 1)
	e := evs[0]
	assert.Equal(t, sm.MKeyTrap256, e.Action)
	assert.Equal(t, lid4, e.LID)
	assert.Equal(t, lid7, e.RequesterLID)
	assert.Equal(t, "0x7", e.MKey)
	assert.Equal(t, "Get", e.Method)
	assert.Equal(t, "PortInfo", e.Attribute)
	assert.Equal(t, represses+1, s.Stats().Represses)
	assert.EqualValues(t, 1, s.Stats().MKey.Traps256)
	assert.Zero(t, s.Stats().BadTraps)
	assert.False(t, s.Pending(), "no link changed")

	// Repressed: no repeat comes in. The TrapRepress carries the port's
	// key (the trap's), which stops the lease countdown the bad SMP
	// started: the port stays protected past the lease.
	b.f.Advance(10 * time.Second)
	require.NoError(t, s.Serve(context.Background(), 10*time.Millisecond))
	assert.EqualValues(t, 1, s.Stats().MKey.Traps256)
	assert.EqualValues(t, 2, heldPortInfo(t, b.f.Node(ca4)).MKeyProtectBits, "the lease refreshed")
}

// TestMKeySMPort: an SM on a switch keys it like any other.
func TestMKeySMPort(t *testing.T) {
	topo := topologies.Thesis8()
	b := newBench(t, topo, 0, 1)
	sw, _ := topo.Lookup("sw1")
	p, err := memport.New(b.f, sw, 0)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	s, err := sm.New(p, sm.Config{MKeyConfig: sm.MKeyConfig{MKey: 0x5, MKeyProtect: 3, MKeyPerPort: true}})
	require.NoError(t, err)
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	require.True(t, res.SubnetUp, res.Reason)
	res, err = s.Sweep(context.Background())
	require.NoError(t, err)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Zero(t, violations(b.f))
}

// TestMKeyRunRecovers: a running SM sweeps again while ports it found
// protected remain; each sweep's SMP keeps their lease running out, and
// the sweep after it takes them: the port ends with the SM's key, without
// any change of the fabric to set a sweep off.
func TestMKeyRunRecovers(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	ca7, _ := b.topo.Lookup("ca7")
	protectOwnPort(t, b.f, ca7, 0xbad, 2)
	setLease(t, b.f, ca7, 0xbad, 5)
	var events recorder[sm.MKeyEvent]
	s := b.newSM(t, sm.Config{
		MKeyConfig:   sm.MKeyConfig{MKey: 0xabc, MKeyProtect: 2, OnMKeyEvent: events.add},
		TimingConfig: sm.TimingConfig{SweepInterval: 2 * time.Second},
	})
	runSM(t, s)
	n := b.f.Node(ca7)
	require.Eventually(t, func() bool {
		for _, e := range events.list() {
			if e.Action == sm.MKeyRecovered {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "recovered")
	require.Eventually(t, func() bool { return heldPortInfo(t, n).MKey == 0xabc }, 10*time.Second, 10*time.Millisecond)
	assert.EqualValues(t, 2, heldPortInfo(t, n).MKeyProtectBits)
}

// TestMKeyProtectedLevel1: a port another SM protected at level 1
// answers Gets but not Sets: the Set that would give it its LID goes
// unanswered, an event; once the lease has run out the SM takes the key
// and configures the port.
func TestMKeyProtectedLevel1(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	ca7, _ := b.topo.Lookup("ca7")
	protectOwnPort(t, b.f, ca7, 0xbad, 1)
	setLease(t, b.f, ca7, 0xbad, 5)
	var events recorder[sm.MKeyEvent]
	s := b.newSM(t, sm.Config{MKeyConfig: sm.MKeyConfig{MKey: 0xabc, OnMKeyEvent: events.add}})
	res := b.sweep(t, s)
	require.False(t, res.SubnetUp, "ca7 cannot be given its LID")
	evs := events.list()
	require.Len(t, evs, 1)
	assert.Equal(t, sm.MKeyProtected, evs[0].Action)
	assert.EqualValues(t, 1, evs[0].Protect)

	b.f.Advance(6 * time.Second)
	res = b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	evs = events.list()
	require.Len(t, evs, 2)
	assert.Equal(t, sm.MKeyRecovered, evs[1].Action)
	pi := heldPortInfo(t, b.f.Node(ca7))
	assert.EqualValues(t, 0xabc, pi.MKey)
	assert.Zero(t, pi.MKeyProtectBits)
	checkUp(t, b.f)
}

// TestMKeySMInfoOwnKey: SMInfo's M_Key check takes the key the SM's own
// port holds: with a key per port, a request carrying the base key fails
// it at protection 2, one with the port's key passes.
func TestMKeySMInfoOwnKey(t *testing.T) {
	const base = 0xabc
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := b.newSM(t, sm.Config{
		ElectionConfig: sm.ElectionConfig{SMKey: 9},
		MKeyConfig:     sm.MKeyConfig{MKey: base, MKeyProtect: 2, MKeyPerPort: true},
	})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	own := sm.PerPortMKey(base, b.topo.Node(0).Ports[1].GUID)
	ca7, _ := b.topo.Lookup("ca7")
	_, ok := askSMInfo(t, b, s, ca7, lidSMInfo(mad.MethodGet, 0, res.SMLID, base, mad.SMInfoFields{}))
	assert.False(t, ok, "the base key is not the port's")
	got, ok := askSMInfo(t, b, s, ca7, lidSMInfo(mad.MethodGet, 0, res.SMLID, own, mad.SMInfoFields{}))
	require.True(t, ok)
	assert.EqualValues(t, 9, got.info.SMKey)
}
