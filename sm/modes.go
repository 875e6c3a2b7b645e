package sm

import (
	"fmt"
	"strings"
)

// The SM's modes: each is a small integer type with a fixed set of named
// values. String, MarshalText and UnmarshalText use the names, so a mode
// reads and writes the same in flags (flag.TextVar), JSON and messages,
// and a name that is not one is an error that lists those that are.

// Detect is how Run learns of changes once the subnet is up.
type Detect uint8

// Detection modes.
const (
	DetectBoth  Detect = iota // traps as they come, and sweeps (the default)
	DetectTrap                // traps only
	DetectSweep               // sweeps only
)

var detectNames = modeNames{kind: "detection", names: []string{"both", "trap", "sweep"}}

func (d Detect) String() string                   { return detectNames.String(uint8(d)) }
func (d Detect) MarshalText() ([]byte, error)     { return detectNames.marshal(uint8(d)) }
func (d *Detect) UnmarshalText(text []byte) error { return detectNames.unmarshal((*uint8)(d), text) }

// Discovery is how an assimilation discovers a change. The zero value is
// unset: a Result of a sweep has none, and New takes it for
// DiscoveryPartial.
type Discovery uint8

// Discovery modes.
const (
	// DiscoveryPartial is the thesis's protocol (5.3): only the
	// neighbourhood of what changed is read again.
	DiscoveryPartial Discovery = iota + 1
	// DiscoveryFull discovers the whole subnet again.
	DiscoveryFull
)

var discoveryNames = modeNames{kind: "discovery", names: []string{"", "partial", "full"}}

func (d Discovery) String() string               { return discoveryNames.String(uint8(d)) }
func (d Discovery) MarshalText() ([]byte, error) { return discoveryNames.marshal(uint8(d)) }
func (d *Discovery) UnmarshalText(text []byte) error {
	return discoveryNames.unmarshal((*uint8)(d), text)
}

// Distribution is how an assimilation's new tables reach the switches
// (thesis chapter 7). The zero value is unset: a Result of a sweep has
// none, and New takes it for DistCutDeps.
type Distribution uint8

// Distribution strategies.
const (
	// DistFullDeactivation sets every active switch port Down (it falls
	// back to Init, where only SMPs pass), sends the tables, then
	// activates every port again (thesis 7.2.1).
	DistFullDeactivation Distribution = iota + 1
	// DistCutPorts deactivates, at every cut node of the new up*/down*
	// graph, every up-going port but one (7.2.2).
	DistCutPorts
	// DistCutDeps maps every SL to VL15, so that data is dropped, on each
	// forbidden (input, output) port pair of every new cut node (7.2.3);
	// the blocks stay, are tracked, and are undone when a later graph
	// makes the turn legal.
	DistCutDeps
	// DistNone sends the tables unprotected, the deadlock-prone baseline.
	DistNone
)

var distributionNames = modeNames{kind: "distribution",
	names: []string{"", "full-deactivation", "cut-ports", "cut-deps", "none"}}

func (d Distribution) String() string               { return distributionNames.String(uint8(d)) }
func (d Distribution) MarshalText() ([]byte, error) { return distributionNames.marshal(uint8(d)) }
func (d *Distribution) UnmarshalText(text []byte) error {
	return distributionNames.unmarshal((*uint8)(d), text)
}

// Distributions returns the distribution strategies.
func Distributions() []Distribution {
	return []Distribution{DistFullDeactivation, DistCutPorts, DistCutDeps, DistNone}
}

// Trigger is what started an assimilation. The zero value is none: a
// Result of a sweep has none.
type Trigger uint8

// Triggers.
const (
	TriggerTrap  Trigger = iota + 1 // a scan of the switches whose traps came in
	TriggerSweep                    // a sweep of every switch
)

var triggerNames = modeNames{kind: "trigger", names: []string{"", "trap", "sweep"}}

func (t Trigger) String() string                   { return triggerNames.String(uint8(t)) }
func (t Trigger) MarshalText() ([]byte, error)     { return triggerNames.marshal(uint8(t)) }
func (t *Trigger) UnmarshalText(text []byte) error { return triggerNames.unmarshal((*uint8)(t), text) }

// VLTables is what the SM does with the SLtoVL and VL arbitration tables.
type VLTables uint8

// VL table modes.
const (
	// VLTablesSet spreads the SLs over each port's data VLs (SL s on VL
	// s mod n) and gives every data VL the same weight in the
	// low-priority arbitration table, on every port (Config's zero value;
	// ibsm's --vl-tables defaults to DefaultVLTables, keep). A
	// switch without the optimized SLtoVL modifiers takes one Set per
	// (input, output) pair: a device's reset tables are its vendor's
	// (ibsim maps SL s to VL s; the soft switch every SL to VL0), and
	// reading one costs as much as writing it.
	VLTablesSet VLTables = iota
	// VLTablesKeep leaves both tables as the devices hold them, as
	// OpenSM does with QoS off; OperationalVLs is still set. Cut-node
	// blocks read the table they replace first and write it back when
	// undone.
	VLTablesKeep
)

var vlTablesNames = modeNames{kind: "VL tables", names: []string{"set", "keep"}}

func (v VLTables) String() string               { return vlTablesNames.String(uint8(v)) }
func (v VLTables) MarshalText() ([]byte, error) { return vlTablesNames.marshal(uint8(v)) }
func (v *VLTables) UnmarshalText(text []byte) error {
	return vlTablesNames.unmarshal((*uint8)(v), text)
}

// modeNames are the names of a mode's values, indexed by value; "" names
// a zero value that means unset, which parses but is not offered.
type modeNames struct {
	kind  string
	names []string
}

func (m modeNames) String(v uint8) string {
	if m.valid(v) {
		return m.names[v]
	}
	return fmt.Sprintf("%s(%d)", m.kind, v)
}

func (m modeNames) valid(v uint8) bool { return int(v) < len(m.names) }

// check returns an error for a value that has no name.
func (m modeNames) check(v uint8) error {
	if m.valid(v) {
		return nil
	}
	return fmt.Errorf("%w: %s %d, want %s", ErrConfig, m.kind, v, m.offered())
}

func (m modeNames) marshal(v uint8) ([]byte, error) {
	if err := m.check(v); err != nil {
		return nil, err
	}
	return []byte(m.names[v]), nil
}

func (m modeNames) unmarshal(v *uint8, text []byte) error {
	for i, n := range m.names {
		if n == string(text) {
			*v = uint8(i)
			return nil
		}
	}
	return fmt.Errorf("%w: %s %q, want %s", ErrConfig, m.kind, text, m.offered())
}

// offered lists the names a user may give: "a, b or c".
func (m modeNames) offered() string {
	var names []string
	for _, n := range m.names {
		if n != "" {
			names = append(names, n)
		}
	}
	last := len(names) - 1
	if last < 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:last], ", ") + " or " + names[last]
}
