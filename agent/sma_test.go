package agent_test

import (
	"slices"
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/memfabric"
	"ibfab/wire/mad"
)

// TestPortStateTransitions checks every logical state the SM may ask for
// from every state a port can be in.
func TestPortStateTransitions(t *testing.T) {
	tests := []struct {
		name      string
		from      mad.PortState
		to        mad.PortState
		want      mad.Status
		wantCalls []string
		then      mad.PortState
	}{
		{"Init to Armed", mad.PortStateInit, mad.PortStateArmed, mad.StatusOK, []string{"SetState Armed", "Configure"}, mad.PortStateArmed},
		{"Armed to Active", mad.PortStateArmed, mad.PortStateActive, mad.StatusOK, []string{"SetState Active", "Configure"}, mad.PortStateActive},
		{"Armed again", mad.PortStateArmed, mad.PortStateArmed, mad.StatusOK, []string{"Configure"}, mad.PortStateArmed},
		{"Active again", mad.PortStateActive, mad.PortStateActive, mad.StatusOK, []string{"Configure"}, mad.PortStateActive},
		{"Active to Down retrains", mad.PortStateActive, mad.PortStateDown, mad.StatusOK, []string{"SetState Down", "Configure"}, mad.PortStateInit},
		{"Armed to Down retrains", mad.PortStateArmed, mad.PortStateDown, mad.StatusOK, []string{"SetState Down", "Configure"}, mad.PortStateInit},
		{"Init to Down retrains", mad.PortStateInit, mad.PortStateDown, mad.StatusOK, []string{"SetState Down", "Configure"}, mad.PortStateInit},
		{"no change", mad.PortStateInit, mad.PortStateNoChange, mad.StatusOK, []string{"Configure"}, mad.PortStateInit},
		{"Init to Active", mad.PortStateInit, mad.PortStateActive, mad.StatusInvalidField, nil, mad.PortStateInit},
		{"Active to Armed", mad.PortStateActive, mad.PortStateArmed, mad.StatusInvalidField, nil, mad.PortStateActive},
		{"Down to Armed", mad.PortStateDown, mad.PortStateArmed, mad.StatusInvalidField, nil, mad.PortStateDown},
		{"Down to Active", mad.PortStateDown, mad.PortStateActive, mad.StatusInvalidField, nil, mad.PortStateDown},
		{"to Init", mad.PortStateInit, mad.PortStateInit, mad.StatusInvalidField, nil, mad.PortStateInit},
	}
	for _, tt := range tests {
		for _, typ := range []mad.NodeType{mad.NodeTypeSwitch, mad.NodeTypeCA} {
			t.Run(tt.name+"/"+typ.String(), func(t *testing.T) {
				nd := newNode(t, typ, 2)
				nd.setLink(1, tt.from)
				calls := len(nd.ports.Calls())
				pi := forSet(nd.portInfo(t, 1))
				pi.PortState = tt.to
				r := nd.setPortInfo(t, 1, pi)
				if got := status(r); got != tt.want {
					t.Errorf("status %v, want %v", got, tt.want)
				}
				if got := nd.ports.Calls()[calls:]; !slices.Equal(got, tt.wantCalls) {
					t.Errorf("PortControl calls %q, want %q", got, tt.wantCalls)
				}
				if got := mad.PortInfo(r.Data()).PortState(); got != tt.then {
					t.Errorf("response PortState %v, want %v", got, tt.then)
				}
			})
		}
	}
}

// TestSetPortInfo checks what a Set applies, to the agent and the port.
func TestSetPortInfo(t *testing.T) {
	nd := newNode(t, mad.NodeTypeCA, 2)
	pi := forSet(nd.portInfo(t, 1))
	pi.LID, pi.LMC, pi.MasterSMLID, pi.MasterSMSL = 0x10, 2, 1, 3
	pi.NeighborMTU, pi.OperationalVLs, pi.VLHighLimit = mad.MTU1024, 3, 7
	pi.SubnetTimeOut, pi.ClientReregister = 18, true
	pi.PortPhysicalState = mad.PhysStateDisabled
	pi.CapabilityMask = 0xffffffff // read-only: ignored
	r := nd.setPortInfo(t, 1, pi)
	if st := status(r); st != mad.StatusOK {
		t.Fatalf("Set(PortInfo): %v", st)
	}
	got := mad.PortInfo(r.Data()).Fields()
	switch {
	case got.LID != 0x10 || got.LMC != 2 || got.MasterSMLID != 1 || got.MasterSMSL != 3:
		t.Errorf("addressing %d/%d SM %d/%d, want 16/2 SM 1/3", got.LID, got.LMC, got.MasterSMLID, got.MasterSMSL)
	case got.NeighborMTU != mad.MTU1024 || got.OperationalVLs != 3 || got.VLHighLimit != 7 || got.SubnetTimeOut != 18:
		t.Errorf("MTU %v VLs %d high limit %d timeout %d", got.NeighborMTU, got.OperationalVLs, got.VLHighLimit, got.SubnetTimeOut)
	case got.PortPhysicalState != mad.PhysStateDisabled || got.PortState != mad.PortStateDown:
		t.Errorf("after Disabled: %v %v", got.PortPhysicalState, got.PortState)
	case got.CapabilityMask == 0xffffffff:
		t.Errorf("CapabilityMask was set")
	}
	want := agent.PortConfig{LID: 0x10, LMC: 2, MasterSMLID: 1, MasterSMSL: 3, NeighborMTU: mad.MTU1024, OperationalVLs: 3,
		VLHighLimit: 7, HOQLife: pi.HOQLife, VLStallCount: pi.VLStallCount}
	// The Set named the enabled widths and speeds (those it read): the
	// port gets them, for its next training.
	wantPort := want
	wantPort.LinkWidthEnabled, wantPort.LinkSpeedEnabled = pi.LinkWidthEnabled, pi.LinkSpeedEnabled
	if c := nd.ports.Config(1); c != wantPort {
		t.Errorf("Configure(1, %+v), want %+v", c, wantPort)
	}
	if c := nd.a.PortConfig(1); c != want {
		t.Errorf("PortConfig(1) = %+v, want %+v", c, want)
	}
	for lid, want := range map[uint16]bool{0x0f: false, 0x10: true, 0x13: true, 0x14: false} {
		if got := nd.a.HasLID(1, lid); got != want {
			t.Errorf("HasLID(1, %#x) = %v, want %v", lid, got, want)
		}
	}

	nd.ports.Refuse(true)
	pi.PortPhysicalState = mad.PhysStatePolling
	if st := status(nd.setPortInfo(t, 1, pi)); st != mad.StatusInvalidField {
		t.Errorf("Set refused by the port: status %v, want InvalidField", st)
	}
}

// TestSwitchPort0 checks the virtual management port of a switch.
func TestSwitchPort0(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 4)
	pi := nd.portInfo(t, 0)
	if pi.PortState != mad.PortStateActive || pi.PortPhysicalState != mad.PhysStateLinkUp || pi.LocalPortNum != 1 {
		t.Errorf("port 0: %v %v local port %d, want Active LinkUp 1", pi.PortState, pi.PortPhysicalState, pi.LocalPortNum)
	}
	pi = forSet(pi)
	pi.PortState, pi.LID = mad.PortStateArmed, 7
	if r := nd.setPortInfo(t, 0, pi); status(r) != mad.StatusOK || mad.PortInfo(r.Data()).LID() != 7 {
		t.Errorf("Set port 0: %v LID %d", status(r), mad.PortInfo(r.Data()).LID())
	}
	ni := mad.NodeInfo(nd.do(t, smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil)).Data())
	if ni.PortGUID() != swGUID || ni.NumPorts() != 4 || ni.NodeType() != mad.NodeTypeSwitch {
		t.Errorf("NodeInfo %+v", ni.Fields())
	}
	gi := mad.GUIDInfo(nd.do(t, smp(mad.MethodGet, mad.AttrGUIDInfo, 0, nil)).Data())
	if gi.GUID(0) != swGUID {
		t.Errorf("GUIDInfo[0] = %#x, want the node GUID", gi.GUID(0))
	}
	nd2 := mad.NodeDescription(nd.do(t, smp(mad.MethodGet, mad.AttrNodeDescription, 0, nil)).Data())
	if nd2.Text() != "node under test" {
		t.Errorf("NodeDescription %q", nd2.Text())
	}
}

// TestMKey checks the protection levels of IBA 14.2.4 against Gets, Sets
// and TrapRepresses with the wrong key.
func TestMKey(t *testing.T) {
	const key, wrong = 0x1122334455667788, 0xbad
	tests := []struct {
		name     string
		level    uint8
		method   mad.Method
		mkey     uint64
		answered bool
		shown    uint64 // M_Key in the PortInfo answer
		violate  bool
	}{
		{"level 0 Get wrong key", 0, mad.MethodGet, wrong, true, key, false},
		{"level 1 Get wrong key", 1, mad.MethodGet, wrong, true, 0, false},
		{"level 2 Get wrong key", 2, mad.MethodGet, wrong, false, 0, true},
		{"level 3 Get wrong key", 3, mad.MethodGet, wrong, false, 0, true},
		{"level 0 Set wrong key", 0, mad.MethodSet, wrong, false, 0, true},
		{"level 1 Set wrong key", 1, mad.MethodSet, wrong, false, 0, true},
		{"level 0 TrapRepress wrong key", 0, mad.MethodTrapRepress, wrong, false, 0, true},
		{"level 2 Get right key", 2, mad.MethodGet, key, true, key, false},
		{"level 3 Set right key", 3, mad.MethodSet, key, true, key, false},
		{"level 1 Get right key", 1, mad.MethodGet, key, true, key, false},
	}
	for _, tt := range tests {
		for _, typ := range []mad.NodeType{mad.NodeTypeSwitch, mad.NodeTypeCA} {
			t.Run(tt.name+"/"+typ.String(), func(t *testing.T) {
				nd := newNode(t, typ, 2)
				mgmt := uint8(1)
				if typ == mad.NodeTypeSwitch {
					mgmt = 0
				}
				pi := forSet(nd.portInfo(t, mgmt))
				pi.MKey, pi.MKeyProtectBits = key, tt.level
				nd.setPortInfo(t, mgmt, pi)
				attr := mad.AttrPortInfo
				if tt.method == mad.MethodTrapRepress {
					attr = mad.AttrNotice
				}
				data := mad.AppendPortInfo(nil, &pi)
				outs := nd.a.HandleMAD(lidSMP(withMKey(smp(tt.method, attr, uint32(mgmt), data), tt.mkey)))
				if got := len(outs) == 1; got != tt.answered {
					t.Fatalf("answered %v, want %v (%d outbounds)", got, tt.answered, len(outs))
				}
				if tt.answered {
					r := mad.SMP(outs[0].MAD)
					if st := status(r); st != mad.StatusOK {
						t.Errorf("status %v", st)
					}
					if got := mad.PortInfo(r.Data()).MKey(); got != tt.shown {
						t.Errorf("M_Key answered %#x, want %#x", got, tt.shown)
					}
				}
				// Read the counter with the right key, which every level lets through.
				r := nd.do(t, withMKey(smp(mad.MethodGet, mad.AttrPortInfo, uint32(mgmt), nil), key))
				want := uint16(0)
				if tt.violate {
					want = 1
				}
				if got := mad.PortInfo(r.Data()).MKeyViolations(); got != want {
					t.Errorf("M_KeyViolations %d, want %d", got, want)
				}
				if got := nd.a.Stats().MKeyViolations; got != uint64(want) {
					t.Errorf("Stats.MKeyViolations %d, want %d", got, want)
				}
			})
		}
	}
}

// TestMKeyLease checks that the protection ends when the lease runs out
// after a violation, and that the right key stops the countdown.
func TestMKeyLease(t *testing.T) {
	const key = 0xfeed
	setup := func(t *testing.T) *node {
		nd := newNode(t, mad.NodeTypeSwitch, 2)
		pi := forSet(nd.portInfo(t, 0))
		pi.MKey, pi.MKeyProtectBits, pi.MKeyLeasePeriod = key, 2, 10
		nd.setPortInfo(t, 0, pi)
		if got := nd.a.HandleMAD(lidSMP(smp(mad.MethodGet, mad.AttrPortInfo, 0, nil))); len(got) != 0 {
			t.Fatalf("Get with no key at level 2 answered")
		}
		return nd
	}
	t.Run("expires", func(t *testing.T) {
		nd := setup(t)
		nd.clk.Advance(9 * time.Second)
		if got := nd.a.HandleMAD(lidSMP(smp(mad.MethodGet, mad.AttrPortInfo, 0, nil))); len(got) != 0 {
			t.Fatalf("Get answered before the lease ran out")
		}
		nd.clk.Advance(time.Second)
		pi := nd.portInfo(t, 0) // no key: answered now
		if pi.MKeyProtectBits != 0 || pi.MKey != key {
			t.Errorf("after the lease: protect bits %d M_Key %#x, want 0 and the key", pi.MKeyProtectBits, pi.MKey)
		}
	})
	t.Run("stopped by the right key", func(t *testing.T) {
		nd := setup(t)
		nd.do(t, withMKey(smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil), key))
		nd.clk.Advance(time.Minute)
		if got := nd.a.HandleMAD(lidSMP(smp(mad.MethodGet, mad.AttrPortInfo, 0, nil))); len(got) != 0 {
			t.Errorf("protection ended although the SM used its key")
		}
	})
}

// TestPKeyViolation sends PMA requests whose P_Key the CA port's table
// does or does not match.
func TestPKeyViolation(t *testing.T) {
	tests := []struct {
		name  string
		table []mad.PKey // nil: the default table
		pkey  mad.PKey
		ok    bool
	}{
		{"default partition", nil, mad.DefaultPKey, true},
		{"limited member of the default partition", nil, 0x7fff, true},
		{"unknown partition", nil, 0x8001, false},
		{"invalid P_Key", nil, 0, false},
		{"limited meets limited", []mad.PKey{0x7fff}, 0x7fff, false},
		{"full meets limited", []mad.PKey{0x0001}, 0x8001, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := newNode(t, mad.NodeTypeCA, 1)
			if tt.table != nil {
				var f mad.PKeyTableFields
				copy(f.PKeys[:], tt.table)
				nd.do(t, smp(mad.MethodSet, mad.AttrPKeyTable, 0, mad.AppendPKeyTable(nil, &f)))
			}
			in := gmp(pma(mad.MethodGet, mad.AttrClassPortInfo, nil))
			in.PKey = tt.pkey
			outs := nd.a.HandleMAD(in)
			if got := len(outs) == 1; got != tt.ok {
				t.Fatalf("answered %v, want %v", got, tt.ok)
			}
			want := uint16(0)
			if !tt.ok {
				want = 1
			} else if outs[0].PKey != tt.pkey {
				t.Errorf("response P_Key %#x, want the request's %#x", outs[0].PKey, tt.pkey)
			}
			if got := nd.portInfo(t, 1).PKeyViolations; got != want {
				t.Errorf("P_KeyViolations %d, want %d", got, want)
			}
			if got := nd.a.Stats().PKeyViolations; got != uint64(want) {
				t.Errorf("Stats.PKeyViolations %d, want %d", got, want)
			}
		})
	}
}

// TestSMInfo checks that SMInfo goes to the SM when one is attached.
func TestSMInfo(t *testing.T) {
	nd := newNode(t, mad.NodeTypeCA, 1)
	if err := nd.a.SetIsSM(1, true); err != nil {
		t.Fatal(err)
	}
	o := one(t, nd.a.HandleMAD(lidSMP(smp(mad.MethodGet, mad.AttrSMInfo, 0, nil))))
	if !o.Local || mad.MAD(o.MAD).Method() != mad.MethodGet {
		t.Errorf("SMInfo Get with an SM attached: %+v, want the request handed to the SM", o)
	}
	if pi := nd.portInfo(t, 1); pi.CapabilityMask&mad.PortCapIsSM == 0 {
		t.Errorf("CapabilityMask %#x without IsSM", pi.CapabilityMask)
	}
	if err := nd.a.SetIsSM(2, true); err == nil {
		t.Errorf("SetIsSM of a port that does not exist succeeded")
	}
}

// TestTrapWaitsForSM checks that a switch holds its trap until it knows
// where the SM is, then sends it, and that Notice reads and acknowledges
// it.
func TestTrapWaitsForSM(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 2) // links trained: PortStateChange set
	if !nd.a.PortStateChange() || len(*nd.sent) != 0 {
		t.Fatalf("PortStateChange %v, %d traps sent before any LID", nd.a.PortStateChange(), len(*nd.sent))
	}
	pi := forSet(nd.portInfo(t, 0))
	pi.LID, pi.MasterSMLID, pi.MasterSMSL = 5, 1, 2
	nd.setPortInfo(t, 0, pi)
	trap := one(t, *nd.sent)
	if !nd.a.TrapOutstanding() {
		t.Errorf("trap sent, not outstanding")
	}
	if trap.DLID != 1 || trap.SLID != 5 || trap.SL != 2 || trap.VL != 15 || trap.Port != 1 {
		t.Errorf("trap %+v, want LID 5 to 1, SL 2, VL15, out of port 1", trap)
	}
	notice := mad.Notice(nd.do(t, smp(mad.MethodGet, mad.AttrNotice, 0, nil)).Data())
	if notice.TrapNumber() != mad.TrapLinkStateChange || notice.Trap128LID() != 5 {
		t.Errorf("Notice %+v, want the outstanding trap 128", notice.Fields())
	}
	nd.do(t, smp(mad.MethodSet, mad.AttrNotice, 0, notice))
	if nd.a.TrapOutstanding() {
		t.Errorf("trap outstanding after Set(Notice) acknowledged it")
	}
	nd.clk.Advance(agent.MaxTrapRepeat)
	if len(*nd.sent) != 1 {
		t.Errorf("%d traps sent after Set(Notice) acknowledged it, want 1", len(*nd.sent))
	}
	if got := mad.Notice(nd.do(t, smp(mad.MethodGet, mad.AttrNotice, 0, nil)).Data()).Type(); got != mad.NoticeEmpty {
		t.Errorf("Notice type %v after the acknowledgement, want empty", got)
	}
}

// TestTrapRepeatInterval checks the interval's formula and clamps.
func TestTrapRepeatInterval(t *testing.T) {
	tests := []struct {
		name       string
		subnet, rt uint8
		want       time.Duration
	}{
		{"floor", 0, 8, agent.MinTrapRepeat},
		{"OpenSM's default subnet timeout", 18, 8, 2*4096*time.Nanosecond<<18 + 4096*time.Nanosecond<<8},
		{"ceiling", 31, 31, agent.MaxTrapRepeat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := agent.TrapRepeatInterval(tt.subnet, tt.rt); got != tt.want {
				t.Errorf("TrapRepeatInterval(%d, %d) = %v, want %v", tt.subnet, tt.rt, got, tt.want)
			}
		})
	}
}

// TestNew checks the configurations New refuses.
func TestNew(t *testing.T) {
	ok := agent.Config{Type: mad.NodeTypeCA, NumPorts: 1, NodeGUID: 1, Ports: memfabric.NewPorts(1)}
	tests := []struct {
		name string
		mut  func(*agent.Config)
	}{
		{"router", func(c *agent.Config) { c.Type = mad.NodeTypeRouter }},
		{"no ports", func(c *agent.Config) { c.NumPorts = 0 }},
		{"port 255", func(c *agent.Config) { c.NumPorts = 255 }},
		{"zero GUID", func(c *agent.Config) { c.NodeGUID = 0 }},
		{"no PortControl", func(c *agent.Config) { c.Ports = nil }},
		{"port GUIDs", func(c *agent.Config) { c.PortGUIDs = []uint64{1, 2} }},
		{"VLCap", func(c *agent.Config) { c.VLCap = 9 }},
		{"MTUCap", func(c *agent.Config) { c.MTUCap = 7 }},
		{"VL arbitration cap", func(c *agent.Config) { c.VLArbHighCap = 65 }},
		{"LinearFDBCap", func(c *agent.Config) { c.LinearFDBCap = 0xc001 }},
	}
	if _, err := agent.New(ok); err != nil {
		t.Fatalf("New(%+v): %v", ok, err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mut(&c)
			if _, err := agent.New(c); err == nil {
				t.Errorf("New accepted %+v", c)
			}
		})
	}
}

// TestGUIDInfo sets an alias GUID; entry 0, the port GUID, stays.
func TestGUIDInfo(t *testing.T) {
	nd := newNode(t, mad.NodeTypeCA, 2)
	var f mad.GUIDInfoFields
	f.GUIDs[0], f.GUIDs[3] = 0xdead, 0xbeef
	r := nd.do(t, smp(mad.MethodSet, mad.AttrGUIDInfo, 0, mad.AppendGUIDInfo(nil, &f)))
	got := mad.GUIDInfo(r.Data())
	if got.GUID(0) != caGUID+1 || got.GUID(3) != 0xbeef {
		t.Errorf("GUIDInfo %#x, want port GUID %#x and alias 0xbeef", got.Fields().GUIDs, uint64(caGUID+1))
	}
}

// TestNoSender checks that traps with nowhere to go are counted.
func TestNoSender(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 2, func(c *agent.Config) { c.Sender = nil })
	pi := forSet(nd.portInfo(t, 0))
	pi.LID, pi.MasterSMLID = 2, 1
	nd.setPortInfo(t, 0, pi)
	if st := nd.a.Stats(); st.TrapsDropped != 1 || st.TrapsSent != 0 {
		t.Errorf("traps sent %d dropped %d, want 0 and 1", st.TrapsSent, st.TrapsDropped)
	}
	if st := nd.a.Stats(); st.Dropped() != 0 {
		t.Errorf("Dropped() = %d, want 0: traps are not MADs received", st.Dropped())
	}
}

// TestUnmappedSL checks that a PMA answer whose SL maps to VL15 is not
// sent.
func TestUnmappedSL(t *testing.T) {
	nd := newNode(t, mad.NodeTypeCA, 1)
	var f mad.SLtoVLMappingTableFields
	f.VL[4] = 15
	nd.do(t, smp(mad.MethodSet, mad.AttrSLtoVLMapping, 0, mad.AppendSLtoVLMappingTable(nil, &f)))
	in := gmp(pma(mad.MethodGet, mad.AttrClassPortInfo, nil))
	in.SL = 4
	if outs := nd.a.HandleMAD(in); len(outs) != 0 {
		t.Errorf("answered on an unmapped SL: %+v", outs)
	}
	if got := nd.a.Stats().Unroutable; got != 1 {
		t.Errorf("Unroutable %d, want 1", got)
	}
}

// TestLinkWidthSpeedFromPort: a port whose data plane keeps its widths and
// speeds reports those (not the agent's defaults), and a Set may enable
// only what it supports; what it enables reaches the port.
func TestLinkWidthSpeedFromPort(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 2)
	w14, sdr := mad.LinkWidth1X|mad.LinkWidth4X, mad.LinkSpeedSDR
	nd.ports.SetLink(1, agent.LinkState{State: mad.PortStateInit, Phys: mad.PhysStateLinkUp, Width: mad.LinkWidth4X,
		Speed: sdr, WidthSupported: w14, WidthEnabled: w14, SpeedSupported: sdr, SpeedEnabled: sdr})
	pi := nd.portInfo(t, 1)
	if pi.LinkWidthSupported != w14 || pi.LinkWidthEnabled != w14 || pi.LinkSpeedSupported != sdr || pi.LinkSpeedEnabled != sdr {
		t.Errorf("PortInfo width %v/%v speed %v/%v, want the port's %v/%v %v/%v", pi.LinkWidthSupported, pi.LinkWidthEnabled,
			pi.LinkSpeedSupported, pi.LinkSpeedEnabled, w14, w14, sdr, sdr)
	}
	for _, tt := range []struct {
		name string
		w    mad.LinkWidth
		s    mad.LinkSpeed
		want mad.Status
	}{
		{"12X not supported", mad.LinkWidth12X, mad.LinkSpeedNoChange, mad.StatusInvalidField},
		{"QDR not supported", mad.LinkWidthNoChange, mad.LinkSpeedQDR, mad.StatusInvalidField},
		{"1X", mad.LinkWidth1X, mad.LinkSpeedNoChange, mad.StatusOK},
	} {
		set := forSet(pi)
		set.LinkWidthEnabled, set.LinkSpeedEnabled = tt.w, tt.s
		if st := status(nd.setPortInfo(t, 1, set)); st != tt.want {
			t.Errorf("%s: Set status %v, want %v", tt.name, st, tt.want)
		}
	}
	if c := nd.ports.Config(1); c.LinkWidthEnabled != mad.LinkWidth1X || c.LinkSpeedEnabled != 0 {
		t.Errorf("Configure got width %v speed %v, want 1X and no change", c.LinkWidthEnabled, c.LinkSpeedEnabled)
	}
}

// TestSystemImageGUID: NodeInfo carries the system image GUID the node was
// given (IsSystemImageGUIDSupported), else the node GUID, as a node that
// is its own system image reports.
func TestSystemImageGUID(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  mad.NodeType
		set  uint64
		want uint64
	}{
		{"switch, own image", mad.NodeTypeSwitch, 0, swGUID},
		{"CA, own image", mad.NodeTypeCA, 0, caGUID},
		{"CA in a chassis", mad.NodeTypeCA, 0x02fab0_00000ff000, 0x02fab0_00000ff000},
	} {
		t.Run(c.name, func(t *testing.T) {
			nd := newNode(t, c.typ, 2, func(cfg *agent.Config) { cfg.SystemImageGUID = c.set })
			ni := mad.NodeInfo(nd.do(t, smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil)).Data()).Fields()
			if ni.SystemImageGUID != c.want {
				t.Errorf("SystemImageGUID = %#x, want %#x", ni.SystemImageGUID, c.want)
			}
			if pi := nd.portInfo(t, 1); pi.CapabilityMask&mad.PortCapIsSystemImageGUIDSupported == 0 && c.typ == mad.NodeTypeCA {
				t.Errorf("CA port CapabilityMask %#x lacks IsSystemImageGUIDSupported", pi.CapabilityMask)
			}
		})
	}
}

// A TrapRepress the SMA did not ask for belongs to the node's own SM when
// one is attached: the repress of its own trap (OpenSM's Trap 144), which
// its MAD layer matches by TID. Without an SM it is consumed, as the
// repress of a repeat whose first copy already stopped the trap.
func TestTrapRepressForTheLocalSM(t *testing.T) {
	repress := smp(mad.MethodTrapRepress, mad.AttrNotice, 0, nil)
	tests := []struct {
		name      string
		issm      bool
		wantLocal bool
	}{
		{"SM attached", true, true},
		{"no SM", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := newNode(t, mad.NodeTypeCA, 1)
			if tt.issm {
				if err := nd.a.SetIsSM(1, true); err != nil {
					t.Fatal(err)
				}
			}
			before := nd.a.Stats()
			outs := nd.a.HandleMAD(lidSMP(repress))
			if !tt.wantLocal {
				if len(outs) != 0 {
					t.Fatalf("HandleMAD = %+v, want nothing", outs)
				}
				if got := nd.a.Stats().Unexpected - before.Unexpected; got != 0 {
					t.Errorf("Unexpected += %d, want 0", got)
				}
				return
			}
			o := one(t, outs)
			if !o.Local || mad.MAD(o.MAD).Method() != mad.MethodTrapRepress || mad.MAD(o.MAD).TransactionID() != 0x1234 {
				t.Errorf("got %+v, want the TrapRepress handed to the local SM", o)
			}
		})
	}
}

// TestOwnedMAD: an agent handed the MAD (Inbound.Owned) answers in it
// what it answers in a copy otherwise, and leaves a MAD it was not handed
// as it was: a LID-routed SMP, a directed-route one it forwards, a GMP.
func TestOwnedMAD(t *testing.T) {
	dr, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 9, AttrID: mad.AttrNodeInfo,
		Path: []uint8{0, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	mad.DRSMP(dr).SetHopPointer(1) // at the first hop: on out of port 2
	drIn := agent.Inbound{Port: 1, SLID: mad.PermissiveLID, DLID: mad.PermissiveLID, DstQP: 0, MAD: dr}
	for _, tt := range []struct {
		name string
		in   agent.Inbound
	}{
		{"LID-routed SMP", lidSMP(smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil))},
		{"directed route, forwarded", drIn},
		{"PMA", gmp(pma(mad.MethodGet, mad.AttrPortCounters, nil))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sent := slices.Clone(tt.in.MAD)
			copied := newNode(t, mad.NodeTypeSwitch, 3).a.HandleMAD(tt.in)
			if !slices.Equal(tt.in.MAD, sent) {
				t.Fatal("a MAD not handed over was changed")
			}
			owned := tt.in
			owned.MAD, owned.Owned = slices.Clone(sent), true
			got := newNode(t, mad.NodeTypeSwitch, 3).a.HandleMAD(owned)
			if len(got) != 1 || len(copied) != 1 {
				t.Fatalf("outbounds: %d owned, %d copied, want 1", len(got), len(copied))
			}
			if !slices.Equal(got[0].MAD, copied[0].MAD) || got[0].Port != copied[0].Port {
				t.Errorf("owned: port %d %x\ncopied: port %d %x", got[0].Port, got[0].MAD[:64], copied[0].Port, copied[0].MAD[:64])
			}
			if &got[0].MAD[0] != &owned.MAD[0] {
				t.Error("the owned MAD was not answered in place")
			}
		})
	}
}
