package sm

import (
	"errors"
	"fmt"
	"strings"

	"ibfab/internal/registry"
	"ibfab/madport"
)

// ErrPortSpec is returned for a port spec no registered scheme opens.
var ErrPortSpec = errors.New("sm: bad port spec")

// PortOpener opens a madport.Port from the part of a port spec after its
// scheme and colon ("" when there is none).
type PortOpener func(arg string) (madport.Port, error)

var openers = registry.New[PortOpener]("sm: port scheme")

// RegisterPort makes port specs "scheme" and "scheme:ARG" open through
// open: sim[:NAME] for the ibsim client protocol, umad:CA:PORT for a real
// HCA, fake:TOPOFILE for an in-memory fabric, as their packages register
// them. It panics on a duplicate scheme.
func RegisterPort(scheme string, open PortOpener) { openers.Register(scheme, open) }

// PortSchemes returns the registered schemes, sorted.
func PortSchemes() []string { return openers.Names() }

// OpenPort opens the port a spec names: its scheme up to the first colon,
// then the opener's argument.
func OpenPort(spec string) (madport.Port, error) {
	scheme, arg, _ := strings.Cut(spec, ":")
	open, ok := openers.Lookup(scheme)
	if !ok {
		return nil, fmt.Errorf("%w %q: unknown scheme %q (have %v)", ErrPortSpec, spec, scheme, PortSchemes())
	}
	p, err := open(arg)
	if err != nil {
		return nil, fmt.Errorf("sm: opening port %q: %w", spec, err)
	}
	return p, nil
}
