package routing

import (
	"errors"
	"fmt"
	"slices"

	"ibfab/internal/registry"
	"ibfab/wire/mad"
)

// Errors of configuration and routing. ErrConfig is the SM's too
// (sm.ErrConfig): an option out of range is a configuration error.
var (
	ErrConfig        = errors.New("sm: invalid configuration")
	ErrUnknownEngine = errors.New("sm: unknown routing engine")
	ErrRouting       = errors.New("sm: routing failed")
)

// Options tune the engines; zero values are the defaults.
type Options struct {
	// Seed feeds the engines' random choices (FERa and PIRa tie-breaks
	// when asked for random ones), so a route set is reproducible.
	Seed uint64
	// Parent is how PIRa picks a node's parent among its upper
	// neighbours.
	Parent Parent
	// FERaTies is how FERa breaks a tie between two routes of the same
	// kind and length.
	FERaTies Ties
	// RootGUID, when set, names the up*/down* root switch instead of the
	// SM's own switch.
	RootGUID uint64
}

// Engine computes a route set.
type Engine interface {
	Name() string
	Route(f *Fabric) (*Routes, error)
}

// EngineFactory makes an engine with the given options.
type EngineFactory func(o Options) (Engine, error)

var engines = registry.New[EngineFactory]("sm: routing engine")

// RegisterEngine makes an engine available by name. It panics on a
// duplicate name, like the registries of the standard library.
func RegisterEngine(name string, mk EngineFactory) { engines.Register(name, mk) }

// NewEngine returns the engine called name.
func NewEngine(name string, o Options) (Engine, error) {
	mk, ok := engines.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q (have %v)", ErrUnknownEngine, name, Engines())
	}
	return mk(o)
}

// Engines returns the names of the registered engines, sorted.
func Engines() []string { return engines.Names() }

// Routes is a route set: the linear forwarding table of every switch.
type Routes struct {
	Engine string
	MaxLID uint16
	// LFT[node] is the table of a switch, indexed by LID 0..MaxLID, with
	// mad.LFTNoPort where the switch does not route; nil for other nodes.
	LFT [][]uint8
	// Default[node] is a switch's default port when the engine computes
	// one (PIRa), mad.LFTNoPort when it has none; nil for other engines.
	// LFT already holds it in every entry the engine left implicit, since
	// linear tables have no default port.
	Default []uint8
	// Up[node][port] reports that leaving node through port goes up, for
	// up*/down* engines; the verifier then also checks that no route
	// turns from down to up. nil for other engines.
	Up [][]bool
	// SwitchLIDsExempt leaves the routes to switch LIDs out of the
	// deadlock checks (they are still checked for connectivity). Only
	// management traffic goes to a switch's port 0: SMPs on VL15, which
	// has no credits to deadlock on, and the odd GMP. Engines whose
	// directions cannot carry switch-to-switch routes (ftree: the top
	// switches of a fat tree reach each other only through a valley) or
	// that promise nothing (minhop) set it; the up*/down* engines route
	// switches like everything else and do not.
	SwitchLIDsExempt bool
	// Layers, when above 1, splits the route set into VL layers
	// (multipath.go): the LIDs of a CA port's alias i travel on SL i,
	// which every port maps to VL i mod Layers, so alias i's routes are
	// layer i mod Layers and only a layer's own routes can wait on each
	// other. Switch LIDs and base LIDs are layer 0. 0 or 1: one layer.
	Layers int

	// Computed counts the entries the engine computed, in its own terms:
	// FERa counts every accepted option (overwrites included), PIRa its
	// explicit entries, the others every LFT entry they set. Destinations
	// are end ports, so an end port with 2^LMC LIDs counts once.
	Computed int
	// PerStep[i] is the part of Computed computed for end port i (in
	// Fabric.EndPorts order); for PIRa, the entries of the step that
	// explored it, as the thesis tabulates them.
	PerStep []int
	// DefaultPorts counts the default ports computed (PIRa).
	DefaultPorts int

	// Seq[node][end] orders FERa's entries as it computed them: the
	// count of entries accepted before the last one for that switch and
	// end port (in Fabric.EndPorts order); provisional distribution sends
	// them in that order. nil for other engines.
	Seq [][]int32
}

// NewRoutes returns an empty route set for f: every switch's table of
// LIDs 0..MaxLID at mad.LFTNoPort, PerStep zero for every end port.
func NewRoutes(name string, f *Fabric) *Routes {
	r := &Routes{Engine: name, MaxLID: f.MaxLID(), LFT: make([][]uint8, f.Topo.NumNodes()),
		PerStep: make([]int, len(f.ends))}
	for _, s := range f.Switches() {
		t := make([]uint8, int(r.MaxLID)+1)
		for i := range t {
			t[i] = mad.LFTNoPort
		}
		r.LFT[s] = t
	}
	return r
}

// SetEnd points every LID of end port e at port in switch s's table.
func (r *Routes) SetEnd(s int, e EndPort, port int) {
	for k := range e.NumLIDs() {
		r.LFT[s][int(e.LID)+k] = uint8(port)
	}
}

// LayerOf returns the VL layer of lid's routes: its alias index (lid
// minus its port's base LID) modulo Layers for a CA port, 0 for a switch
// LID, a LID no port owns, or a route set of one layer.
func (r *Routes) LayerOf(f *Fabric, lid uint16) int {
	if r.Layers <= 1 {
		return 0
	}
	i, ok := f.Owner(lid)
	if !ok {
		return 0
	}
	e := f.ends[i]
	if e.Port == 0 && f.IsSwitch(e.Node) {
		return 0
	}
	return int(lid-e.LID) % r.Layers
}

// Entries returns the number of valid LFT entries over all switches: what
// distribution writes.
func (r *Routes) Entries() int {
	n := 0
	for _, t := range r.LFT {
		for _, p := range t {
			if p != mad.LFTNoPort {
				n++
			}
		}
	}
	return n
}

// Clone returns a deep copy of r.
func (r *Routes) Clone() *Routes {
	c := *r
	c.LFT = make([][]uint8, len(r.LFT))
	for i, t := range r.LFT {
		c.LFT[i] = slices.Clone(t)
	}
	c.Default = slices.Clone(r.Default)
	c.Up = make([][]bool, len(r.Up))
	for i, u := range r.Up {
		c.Up[i] = slices.Clone(u)
	}
	if r.Up == nil {
		c.Up = nil
	}
	c.PerStep = slices.Clone(r.PerStep)
	if r.Seq != nil {
		c.Seq = make([][]int32, len(r.Seq))
		for i, q := range r.Seq {
			c.Seq[i] = slices.Clone(q)
		}
	}
	return &c
}
