package mgmtplane

import (
	"cmp"
	"fmt"
	"os"

	"ibfab/memfabric"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Status returns every node's status in the shape a node process reports
// it (nodeproc.Status), without what only a data plane has: the
// link-layer counters, credits, arbitration and traffic.
func (p *Plane) Status() []nodeproc.Status {
	out := make([]nodeproc.Status, p.topo.NumNodes())
	pid := os.Getpid()
	for i := range out {
		out[i] = p.nodeStatus(i, pid)
	}
	return out
}

func (p *Plane) nodeStatus(i, pid int) nodeproc.Status {
	tn, n := p.topo.Node(i), p.f.Node(i)
	st := nodeproc.Status{Name: tn.Name, Type: "hca", GUID: fmt.Sprintf("%#016x", tn.GUID), PID: pid,
		SysImageGUID: fmt.Sprintf("%#016x", cmp.Or(tn.SystemImageGUID, tn.GUID)), Desc: tn.Description}
	a := n.Agent
	st.Agent = &nodeproc.AgentStatus{Stats: a.Stats()}
	if tn.Type == topologies.Switch {
		st.Type = "switch"
		st.Agent.PortStateChange, st.Agent.TrapOutstanding = a.PortStateChange(), a.TrapOutstanding()
	}
	for num := 1; num <= tn.NumPorts; num++ {
		st.Ports = append(st.Ports, portStatus(n, tn.Type == topologies.Switch, uint8(num)))
	}
	return st
}

// portStatus is one port's state, rate and LID (a switch's port 0 LID on
// every port, as a switch process reports it).
func portStatus(n *memfabric.Node, sw bool, num uint8) nodeproc.PortStatus {
	ls := n.Ports.Link(num)
	lidPort := num
	if sw {
		lidPort = 0
	}
	ps := nodeproc.PortStatus{Port: int(num), Phys: ls.Phys.String(), State: ls.State.String(),
		LID: n.Agent.PortConfig(lidPort).LID, PKeys: nodeproc.PKeyStrings(n.Agent.PKeys(num))}
	if !sw {
		// As an HCA process reports them (nodeproc's status).
		c := n.Agent.PortConfig(num)
		ps.GUID = fmt.Sprintf("%#016x", n.Agent.PortGUID(num))
		ps.LMC, ps.SMLID, ps.SMSL, ps.CapMask = c.LMC, c.MasterSMLID, c.MasterSMSL, n.Agent.CapabilityMask(num)
	}
	if ls.Phys == mad.PhysStateLinkUp {
		ps.Width, ps.Speed = ls.Width.String(), ls.Speed.String()
		ps.Rate, _ = mad.DataRate(ls.Width, ls.Speed)
	}
	return ps
}
