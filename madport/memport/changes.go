package memport

import (
	"fmt"

	"ibfab/madport"
	"ibfab/topologies"
)

// Changes at run time. Each one is made under the port's lock, while the
// fabric is idle, and the fabric then runs, so that the Trap 128 the
// neighbours' agents raise move at once: those that reach this port wait
// in its inbox, as on a real fabric they would be on their way.

// Lookup returns the index of the node called name.
func (p *Port) Lookup(name string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.f.Topology().Lookup(name)
	if !ok {
		return 0, fmt.Errorf("memport: no node %q", name)
	}
	return i, nil
}

// PowerOff takes the named nodes away, as a crash would
// (memfabric.Fabric.PowerOff).
func (p *Port) PowerOff(names ...string) error {
	return p.change(names, func(i int) error { return p.f.PowerOff(i) })
}

// PowerOn brings the named nodes back, reset (memfabric.Fabric.PowerOn).
func (p *Port) PowerOn(names ...string) error {
	return p.change(names, func(i int) error { return p.f.PowerOn(i) })
}

// SetLink takes the link at port of the named node down, or up again
// (memfabric.Fabric.SetLink).
func (p *Port) SetLink(name string, port uint8, up bool) error {
	return p.change([]string{name}, func(i int) error { return p.f.SetLink(i, port, up) })
}

// AddPiece cables a piece in (memfabric.Fabric.AddPiece) and returns the
// indexes of its nodes.
func (p *Port) AddPiece(piece *topologies.Piece) ([]int, error) {
	var idx []int
	err := p.change(nil, func(int) error {
		var err error
		idx, err = p.f.AddPiece(piece)
		return err
	})
	return idx, err
}

// change applies fn to each named node (once with no names), then runs
// the fabric.
func (p *Port) change(names []string, fn func(i int) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return madport.ErrClosed
	}
	p.f.Run()
	var err error
	if names == nil {
		err = fn(-1)
	}
	for _, name := range names {
		i, ok := p.f.Topology().Lookup(name)
		if !ok {
			err = fmt.Errorf("memport: no node %q", name)
			break
		}
		if err = fn(i); err != nil {
			break
		}
	}
	p.f.Run()
	p.collectLocked()
	if p.group != nil {
		// The change may have set timers (trap repeats) that no delivery
		// announces: the group's ports look again.
		p.group.wakeLocked()
	}
	return err
}
