package partition

import "ibfab/internal/enum"

//go:generate go tool stringer -type=Enforce -linecomment

// Enforce is where the switch ports cabled to CAs check P_Keys (IBA
// 10.9.4; OpenSM's part_enforce): data packets coming in from the CA,
// going out to it, both ways, or neither.
type Enforce uint8

// Enforcement modes. The zero value is OpenSM's default.
const (
	// EnforceBoth: inbound and outbound
	EnforceBoth Enforce = iota // both
	// EnforceIn: inbound only
	EnforceIn // in
	// EnforceOut: outbound only
	EnforceOut // out
	// EnforceOff: none, and the switch ports' tables are left alone
	EnforceOff // off
)

// Inbound and Outbound are the PortInfo bits that e sets
// (PartitionEnforcementInbound, PartitionEnforcementOutbound).
func (e Enforce) Inbound() bool  { return e == EnforceBoth || e == EnforceIn }
func (e Enforce) Outbound() bool { return e == EnforceBoth || e == EnforceOut }

var enforces = enum.New("partition enforcement", EnforceBoth, EnforceIn, EnforceOut, EnforceOff)

// Valid reports whether e is one of the modes.
func (e Enforce) Valid() bool { return enforces.Valid(e) }

// MarshalText implements encoding.TextMarshaler.
func (e Enforce) MarshalText() ([]byte, error) { return enforces.Marshal(e) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (e *Enforce) UnmarshalText(text []byte) error { return enforces.Unmarshal(e, text) }
