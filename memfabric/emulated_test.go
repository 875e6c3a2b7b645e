package memfabric_test

import (
	"slices"
	"testing"

	"ibfab/memfabric"
	"ibfab/wire/mad"
)

// The compact counters read as whole records would: counting, a Set with
// fields beyond packets and data (kept whole from then on), resets of
// either attribute, and a Set back to packets and data only.
func TestCountersCompactAndWhole(t *testing.T) {
	c := memfabric.NewCounters(2)
	c.CountXmit(1, 72)
	c.CountXmit(1, 72)
	c.CountRcv(1, 72)
	want := mad.PortCountersFields{PortXmitData: 144, PortXmitPkts: 2, PortRcvData: 72, PortRcvPkts: 1}
	wantExt := mad.PortCountersExtendedFields{PortXmitData: 144, PortXmitPkts: 2, PortUnicastXmitPkts: 2,
		PortRcvData: 72, PortRcvPkts: 1, PortUnicastRcvPkts: 1}
	if got := c.PortCounters(1); got != want {
		t.Errorf("counted: %+v, want %+v", got, want)
	}
	if got := c.PortCountersExtended(1); got != wantExt {
		t.Errorf("counted: %+v, want %+v", got, wantExt)
	}
	if got := c.PortCounters(2); got != (mad.PortCountersFields{}) {
		t.Errorf("port 2 counted %+v", got)
	}

	// A whole record: the error counters survive counting and a reset of
	// the data counters only.
	c.Set(1, mad.PortCountersFields{SymbolErrorCounter: 7, PortXmitPkts: 0xffff_fffe}, mad.PortCountersExtendedFields{PortMulticastRcvPkts: 3})
	c.CountXmit(1, 72)
	c.CountXmit(1, 72) // saturates
	c.ResetPortCounters(1, mad.PCSelXmitData, 0)
	if got, w := c.PortCounters(1), (mad.PortCountersFields{SymbolErrorCounter: 7, PortXmitPkts: 0xffff_ffff}); got != w {
		t.Errorf("whole: %+v, want %+v", got, w)
	}
	if got, w := c.PortCountersExtended(1), (mad.PortCountersExtendedFields{PortMulticastRcvPkts: 3,
		PortXmitData: 144, PortXmitPkts: 2, PortUnicastXmitPkts: 2}); got != w {
		t.Errorf("whole ext: %+v, want %+v", got, w)
	}
	c.ResetPortCounters(1, mad.PCSelSymbolError|mad.PCSelXmitPkts, 0)
	c.ResetPortCountersExtended(1, 0xffff)
	c.CountRcv(1, 1)
	if got, w := c.PortCounters(1), (mad.PortCountersFields{PortRcvData: 1, PortRcvPkts: 1}); got != w {
		t.Errorf("after the resets: %+v, want %+v", got, w)
	}
	if got := c.PortCountersExtended(1); got.PortRcvData != 1 || got.PortUnicastRcvPkts != 1 || got.PortMulticastRcvPkts != 0 {
		t.Errorf("after the resets: %+v", got)
	}
	if got := c.PortCounters(3); got != (mad.PortCountersFields{}) {
		t.Errorf("no port 3: %+v", got)
	}
}

// Ports keep no log of their calls until asked: a fabric's would grow with
// every Set an SM sends.
func TestPortsRecordCallsOnlyWhenAsked(t *testing.T) {
	p := memfabric.NewPorts(1)
	if err := p.SetState(1, mad.PortStateArmed); err != nil {
		t.Fatal(err)
	}
	if got := p.Calls(); len(got) != 0 {
		t.Errorf("calls before RecordCalls: %q", got)
	}
	p.RecordCalls()
	if err := p.SetState(1, mad.PortStateActive); err != nil {
		t.Fatal(err)
	}
	if got := p.Calls(); !slices.Equal(got, []string{"SetState Active"}) {
		t.Errorf("calls: %q", got)
	}
}

// A port kept whole counts both directions into the right fields.
func TestCountersWholeDirections(t *testing.T) {
	c := memfabric.NewCounters(1)
	c.Set(1, mad.PortCountersFields{SymbolErrorCounter: 1}, mad.PortCountersExtendedFields{})
	c.CountXmit(1, 10)
	c.CountRcv(1, 3)
	c.CountRcv(1, 3)
	if got, w := c.PortCounters(1), (mad.PortCountersFields{SymbolErrorCounter: 1,
		PortXmitData: 10, PortXmitPkts: 1, PortRcvData: 6, PortRcvPkts: 2}); got != w {
		t.Errorf("whole: %+v, want %+v", got, w)
	}
	if got, w := c.PortCountersExtended(1), (mad.PortCountersExtendedFields{PortXmitData: 10, PortXmitPkts: 1,
		PortUnicastXmitPkts: 1, PortRcvData: 6, PortRcvPkts: 2, PortUnicastRcvPkts: 2}); got != w {
		t.Errorf("whole ext: %+v, want %+v", got, w)
	}
}
