package routing

import (
	"fmt"
	"strings"
)

// The engines' modes, as the SM's (sm/modes.go): each is a small integer
// type with a fixed set of named values. String, MarshalText and
// UnmarshalText use the names, so a mode reads and writes the same in
// flags (flag.TextVar), JSON and messages, and a name that is not one is
// an error, wrapping ErrConfig, that lists those that are.

// Parent is how PIRa picks a node's parent among its upper neighbours
// (Options.Parent).
type Parent uint8

// PIRa parent policies.
const (
	// ParentLast takes the upper neighbour explored last (the highest in
	// exploration order): on the thesis's example network it is the
	// choice behind its Table 19. The default.
	ParentLast Parent = iota
	ParentFirst
	ParentRandom // seeded by Options.Seed
)

var parentNames = modeNames{kind: "PIRa parent policy", names: []string{"last", "first", "random"}}

func (p Parent) String() string                   { return parentNames.String(uint8(p)) }
func (p Parent) MarshalText() ([]byte, error)     { return parentNames.marshal(uint8(p)) }
func (p *Parent) UnmarshalText(text []byte) error { return parentNames.unmarshal((*uint8)(p), text) }

// Check returns an error wrapping ErrConfig for a value that has no name.
func (p Parent) Check() error { return parentNames.check(uint8(p)) }

// Ties is how FERa breaks a tie between two routes of the same kind and
// length (Options.FERaTies).
type Ties uint8

// FERa tie-break policies.
const (
	TieKeepOld Ties = iota // the formal algorithm's (the default)
	TieRandom              // the thesis's informal one, seeded by Options.Seed
)

var tiesNames = modeNames{kind: "FERa tie-break", names: []string{"keep-old", "random"}}

func (t Ties) String() string                   { return tiesNames.String(uint8(t)) }
func (t Ties) MarshalText() ([]byte, error)     { return tiesNames.marshal(uint8(t)) }
func (t *Ties) UnmarshalText(text []byte) error { return tiesNames.unmarshal((*uint8)(t), text) }

// Check returns an error wrapping ErrConfig for a value that has no name.
func (t Ties) Check() error { return tiesNames.check(uint8(t)) }

// modeNames are the names of a mode's values (a copy of sm's), indexed by value; "" names
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
