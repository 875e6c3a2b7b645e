package sm

import (
	"ibfab/sm/routing"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TableState is the forwarding state of a subnet at one moment of a
// change's distribution, as the SM knows it from what the switches
// acknowledged: the LFT each switch holds (old entries, new ones, or a
// mix), the turns its cut-node blocks stop, and the ports that pass data.
// Config.OnTables hears of one after the protection step ("protected"),
// after every LFT block a switch takes ("tables"), once activation is
// over ("active"), and with provisional routes after every block of the
// definitive stream ("definitive") and at the end ("final"); the stages
// of the provisional distribution carry the prefix "provisional-".
type TableState struct {
	Stage  string
	Fabric *routing.Fabric // the subnet as it is after the change
	// LFT[node] is what switch node holds for LIDs 0..MaxLID
	// (mad.LFTNoPort where nothing); nil for other nodes.
	LFT    [][]uint8
	MaxLID uint16
	// Up are the directions of the up*/down* graph the new routes follow
	// (nil when the engine has none): a down→up turn in this state is one
	// the new graph forbids.
	Up [][]bool
	// Blocked[node][in*(N+1)+out] reports that switch node drops data
	// entering by port in and leaving by port out (its SLtoVL table maps
	// every SL to VL15 there); nil for other nodes.
	Blocked [][]bool
	// Active[node][port] reports that the port passes data (Armed or
	// Active); a switch's port 0 always does.
	Active [][]bool
}

// emitTables reports the current state to Config.OnTables, if set.
func (s *SM) emitTables(stage string, sn *Subnet, rt *routing.Routes) {
	if s.cfg.OnTables == nil || sn == nil || rt == nil {
		return
	}
	s.cfg.OnTables(s.tableState(stage, sn, rt))
}

// tableState builds the state from the shadow of what the switches hold.
func (s *SM) tableState(stage string, sn *Subnet, rt *routing.Routes) *TableState {
	t := sn.Topo
	n := t.NumNodes()
	st := &TableState{Stage: stage, Fabric: &sn.Fabric, MaxLID: rt.MaxLID, Up: rt.Up,
		LFT: make([][]uint8, n), Blocked: make([][]bool, n), Active: make([][]bool, n)}
	for i, node := range t.Nodes() {
		np := node.NumPorts + 1
		st.Active[i] = make([]bool, np)
		sw := node.Type == topologies.Switch
		for p := range np {
			st.Active[i][p] = (sw && p == 0) || (p > 0 && sn.Have[i][p] && portActive(&sn.PortInfo[i][p]))
		}
		if !sw {
			continue
		}
		lft := make([]uint8, int(rt.MaxLID)+1)
		for lid := range lft {
			lft[lid] = mad.LFTNoPort
		}
		for b := 0; b <= int(rt.MaxLID)/mad.LFTEntriesPerBlock; b++ {
			if blk := s.shadow[shadowKey{node.GUID, 0, mad.AttrLinearFwdTbl, uint32(b)}]; blk != nil {
				copy(lft[b*mad.LFTEntriesPerBlock:], blk)
			}
		}
		st.LFT[i] = lft
		st.Blocked[i] = make([]bool, np*np)
	}
	for k := range s.blocked {
		i, ok := t.LookupGUID(k.guid)
		if !ok || st.Blocked[i] == nil {
			continue
		}
		np := t.Node(i).NumPorts + 1
		if k.in < np && k.out < np {
			st.Blocked[i][k.in*np+k.out] = true
		}
	}
	return st
}

// Clone returns a deep copy of st, to keep past the OnTables call.
func (st *TableState) Clone() *TableState {
	c := *st
	c.LFT = cloneRows(st.LFT)
	c.Blocked = cloneRows(st.Blocked)
	c.Active = cloneRows(st.Active)
	return &c
}

func cloneRows[T any](rows [][]T) [][]T {
	out := make([][]T, len(rows))
	for i, r := range rows {
		if r != nil {
			out[i] = append([]T(nil), r...)
		}
	}
	return out
}

// VerifyState checks a distribution's intermediate state as the data
// plane would run it: packets from every CA port to every LID, through
// the tables held, dropped at blocked turns and ports that pass no data.
// Unconnected pairs are expected while tables change; what must hold is
// DeadlockFree: no cycle in the dependency graph of the turns still
// possible, and none of them down→up in the new graph.
func VerifyState(st *TableState) *routing.Report {
	return verifyState(st, nil)
}

func verifyState(st *TableState, turns [][]bool) *routing.Report {
	r := &routing.Routes{MaxLID: st.MaxLID, LFT: st.LFT, Up: st.Up}
	return routing.VerifyTables(st.Fabric, r, st.Blocked, st.Active, turns)
}

// TransitionCheck checks a sequence of TableStates of one distribution as
// a whole: a packet that took a turn under one state may still wait in
// the buffer it turned into under a later one, so the dependencies of
// every state so far count together. Add each state in order; each
// report's Cycle and DownUp are over the union, its pairs over the state.
type TransitionCheck struct {
	f      *routing.Fabric
	turns  [][]bool
	States int
}

// Add checks st together with the states added before (of the same
// fabric; a new fabric starts afresh).
func (c *TransitionCheck) Add(st *TableState) *routing.Report {
	if c.f != st.Fabric {
		c.f, c.turns = st.Fabric, nil
	}
	if c.turns == nil {
		f := st.Fabric
		c.turns = make([][]bool, f.Topo.NumNodes())
		for _, sw := range f.Switches() {
			n := f.Topo.Node(sw).NumPorts + 1
			c.turns[sw] = make([]bool, n*n)
		}
	}
	c.States++
	rep := verifyState(st, c.turns)
	// Deps and DownUp counted only the turns new in this state; count the
	// union's.
	rep.Deps, rep.DownUp = 0, 0
	for sw, row := range c.turns {
		if row == nil {
			continue
		}
		n := st.Fabric.Topo.Node(sw).NumPorts + 1
		for k, on := range row {
			if !on {
				continue
			}
			rep.Deps++
			if st.Up != nil && st.Up[sw][k/n] && st.Up[sw][k%n] {
				rep.DownUp++
			}
		}
	}
	return rep
}
