package umadep

import (
	"ibfab/agent"
	"ibfab/hca"
	"ibfab/wire/mad"
)

// Port is what the endpoint needs of the HCA: sending a MAD, the port
// count, each port's P_Key table and SMA attributes, and the IsSM bit.
// *hca.HCA gives it through HCAPort; tests give a fake.
type Port interface {
	SendMAD(r agent.Request) error
	NumPorts() uint8
	PKeys(port uint8) []mad.PKey
	// LocalGet returns the data of a Get of attr at the SMA of port.
	LocalGet(port uint8, attr mad.AttrID, mod uint32) ([]byte, error)
	SetIsSM(port uint8, on bool) error
}

// HCAPort returns h as a Port.
func HCAPort(h *hca.HCA) Port { return hcaPort{h} }

type hcaPort struct{ h *hca.HCA }

func (p hcaPort) SendMAD(r agent.Request) error { return p.h.SendMAD(r) }
func (p hcaPort) NumPorts() uint8               { return p.h.NumPorts() }
func (p hcaPort) PKeys(port uint8) []mad.PKey   { return p.h.Agent().PKeys(port) }
func (p hcaPort) LocalGet(port uint8, attr mad.AttrID, mod uint32) ([]byte, error) {
	return p.h.Agent().LocalGet(port, attr, mod)
}
func (p hcaPort) SetIsSM(port uint8, on bool) error { return p.h.Agent().SetIsSM(port, on) }
