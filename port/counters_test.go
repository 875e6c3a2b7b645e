package port_test

import (
	"errors"
	"testing"

	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

func TestConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  port.Config
		ok   bool
	}{
		{name: "defaults", cfg: port.Config{}, ok: true},
		{name: "15 data VLs", cfg: port.Config{DataVLs: 15}, ok: true},
		{name: "3 data VLs", cfg: port.Config{DataVLs: 3}},
		{name: "16 data VLs", cfg: port.Config{DataVLs: 16}},
		{name: "MTU 300", cfg: port.Config{MTU: 300}},
		{name: "buffer under one packet", cfg: port.Config{MTU: 4096, RxBlocks: 60}},
		{name: "two widths", cfg: port.Config{Width: mad.LinkWidth4X | mad.LinkWidth1X}},
		{name: "negative VL15 buffer", cfg: port.Config{VL15Packets: -1}},
		{name: "negative queue limit", cfg: port.Config{TxQueueLimit: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ea, eb := pipe.NewPair()
			t.Cleanup(func() { ea.Close(); eb.Close() })
			p, err := port.New(ea, tt.cfg, nil)
			if err == nil {
				p.Close()
			}
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, port.ErrConfig)) {
				t.Errorf("New(%+v) = %v, want ok %v", tt.cfg, err, tt.ok)
			}
		})
	}
}

func TestResetCounters(t *testing.T) {
	e := newEnv(t, port.Config{}, nil)
	e.activate(t)
	for i := range 10 {
		send(t, e.a, porttest.UD(0, 1, 100, byte(i)))
	}
	e.run(t, func() bool { return e.rb.count() == 10 })
	e.b.CountDrop(port.DropUnroutable)
	e.b.CountDrop(port.DropPKey)
	e.b.CountXmitDrop(port.DropPKey)

	e.b.ResetCounters(mad.PCSelRcvPkts, 0)
	c := e.b.Counters()
	if c.PortRcvPkts != 0 || c.PortRcvData == 0 {
		t.Errorf("after resetting PortRcvPkts: PortRcvPkts %d, PortRcvData %d, want 0 and kept", c.PortRcvPkts, c.PortRcvData)
	}
	if c.PortRcvSwitchRelayErrors != 1 || c.PortRcvConstraintErrors != 1 || c.PortXmitConstraintErrors != 1 {
		t.Errorf("PortRcvSwitchRelayErrors %d, PortRcvConstraintErrors %d, PortXmitConstraintErrors %d, want 1, 1, 1",
			c.PortRcvSwitchRelayErrors, c.PortRcvConstraintErrors, c.PortXmitConstraintErrors)
	}
	e.b.ResetCountersExtended(mad.PCExtSelRcvData)
	if got := e.b.CountersExtended().PortRcvData; got != 0 {
		t.Errorf("PortRcvData (extended) = %d after reset, want 0", got)
	}
	e.b.ResetCounters(0xffff, mad.PCSel2XmitWait)
	if got := e.b.Counters(); got != (mad.PortCountersFields{}) {
		t.Errorf("Counters() = %+v after resetting all, want zero", got)
	}
	want := map[string]uint64{"unroutable": 1, "pkey_violation": 2}
	got := e.b.Drops().Map()
	if len(got) != len(want) || got["unroutable"] != 1 || got["pkey_violation"] != 2 {
		t.Errorf("Drops().Map() = %v, want %v (drops by cause are not PMA counters)", got, want)
	}
}

func TestDropCauseString(t *testing.T) {
	seen := map[string]bool{}
	for c := port.DropUnroutable; c <= port.DropInputDown; c++ {
		s := c.String()
		if s == "" || seen[s] {
			t.Errorf("DropCause(%d).String() = %q, empty or repeated", c, s)
		}
		seen[s] = true
	}
	if got := port.DropCause(200).String(); got != "DropCause(200)" {
		t.Errorf("DropCause(200).String() = %q", got)
	}
}
