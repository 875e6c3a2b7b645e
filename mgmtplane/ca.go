package mgmtplane

import (
	"errors"
	"fmt"

	"ibfab/agent"
	"ibfab/attach"
	"ibfab/memfabric"
	"ibfab/umadep"
	"ibfab/wire/mad"
)

// ca is one CA's client side: its endpoints, and the device they send
// through (umadep.Port and attach.Device over the CA's agent).
type ca struct {
	p     *Plane
	idx   int
	node  *memfabric.Node
	names Names
	umad  *umadep.Server
	sim   *attach.Server
}

var (
	_ umadep.Port   = (*ca)(nil)
	_ attach.Device = (*ca)(nil)
)

// errPort is a send from a port the CA does not have.
var errPort = errors.New("mgmtplane: no such port")

// SendMAD sends a client's MAD from the CA's SMI or GSI, as hca.SendMAD.
func (c *ca) SendMAD(r agent.Request) error {
	if r.Port == 0 || r.Port > c.NumPorts() {
		return fmt.Errorf("%w: %d", errPort, r.Port)
	}
	c.p.Do(func(f *memfabric.Fabric) { f.Send(c.idx, r) })
	return nil
}

func (c *ca) NumPorts() uint8             { return c.node.Agent.NumPorts() }
func (c *ca) Agent() *agent.Agent         { return c.node.Agent }
func (c *ca) PKeys(port uint8) []mad.PKey { return c.node.Agent.PKeys(port) }

// SetIsSM sets the IsSM bit (a trap may follow it out).
func (c *ca) SetIsSM(port uint8, on bool) (err error) {
	c.p.Do(func(*memfabric.Fabric) { err = c.node.Agent.SetIsSM(port, on) })
	return err
}

func (c *ca) LocalGet(port uint8, attr mad.AttrID, mod uint32) ([]byte, error) {
	return c.node.Agent.LocalGet(port, attr, mod)
}

// PortState is the logical state of port num.
func (c *ca) PortState(num uint8) (mad.PortState, bool) {
	if num == 0 || num > c.NumPorts() {
		return mad.PortStateDown, false
	}
	return c.node.Ports.Link(num).State, true
}

func (c *ca) close() error {
	return errors.Join(c.umad.Close(), c.sim.Close())
}
