package partition

import (
	"fmt"
	"strings"
)

// Enforce is where the switch ports cabled to CAs check P_Keys (IBA
// 10.9.4; OpenSM's part_enforce): data packets coming in from the CA,
// going out to it, both ways, or neither.
type Enforce uint8

// Enforcement modes. The zero value is OpenSM's default.
const (
	EnforceBoth Enforce = iota // inbound and outbound
	EnforceIn                  // inbound only
	EnforceOut                 // outbound only
	EnforceOff                 // none, and the switch ports' tables are left alone
)

var enforceNames = []string{"both", "in", "out", "off"}

// Inbound and Outbound are the PortInfo bits that e sets
// (PartitionEnforcementInbound, PartitionEnforcementOutbound).
func (e Enforce) Inbound() bool  { return e == EnforceBoth || e == EnforceIn }
func (e Enforce) Outbound() bool { return e == EnforceBoth || e == EnforceOut }

func (e Enforce) String() string {
	if int(e) < len(enforceNames) {
		return enforceNames[e]
	}
	return fmt.Sprintf("enforce(%d)", uint8(e))
}

// Valid reports whether e is one of the modes.
func (e Enforce) Valid() bool { return int(e) < len(enforceNames) }

// MarshalText writes e's name; a value that is not a mode is an error.
func (e Enforce) MarshalText() ([]byte, error) {
	if !e.Valid() {
		return nil, fmt.Errorf("partition: no enforcement mode %d", uint8(e))
	}
	return []byte(e.String()), nil
}

// UnmarshalText reads a mode's name.
func (e *Enforce) UnmarshalText(text []byte) error {
	for i, n := range enforceNames {
		if string(text) == n {
			*e = Enforce(i)
			return nil
		}
	}
	return fmt.Errorf("partition: enforcement %q is none of %s", text, strings.Join(enforceNames, ", "))
}
