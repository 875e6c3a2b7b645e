package webview

import (
	"time"

	"ibfab/harness"
	"ibfab/internal/enum"
)

//go:generate go tool stringer -type=EventKind,Layout -linecomment

// EventKind is what an event reports.
type EventKind uint8

const (
	// EventPortState: a port's logical state changed (From, To).
	EventPortState EventKind = iota // port_state
	// EventNodeDied: a node's process stopped answering or is gone.
	EventNodeDied // node_died
	// EventNodeAlive: a node's process answers again (a restart).
	EventNodeAlive // node_alive
	// EventDrops: a port's drop or error counters rose by Delta.
	EventDrops // drops
	// EventFabricDown: the fabric's status cannot be read any more (torn
	// down); Error says why.
	EventFabricDown // fabric_down
	// EventFabricUp: the status can be read again.
	EventFabricUp // fabric_up
)

var eventKinds = enum.New("event kind", EventPortState, EventNodeDied, EventNodeAlive, EventDrops, EventFabricDown, EventFabricUp)

// MarshalText writes the kind's name, which the page switches on.
func (k EventKind) MarshalText() ([]byte, error) { return eventKinds.Marshal(k) }

// UnmarshalText reads a name MarshalText wrote.
func (k *EventKind) UnmarshalText(b []byte) error { return eventKinds.Unmarshal(k, b) }

// Event is one change the poller saw, as /api/events sends it.
type Event struct {
	Time  time.Time `json:"time"`
	Kind  EventKind `json:"kind"`
	Node  string    `json:"node,omitempty"`
	Port  int       `json:"port,omitempty"`
	From  string    `json:"from,omitempty"`
	To    string    `json:"to,omitempty"`
	Delta uint64    `json:"delta,omitempty"`
	Error string    `json:"error,omitempty"`
}

// diff returns the changes from status prev to cur, seen at at. A node
// whose process is dead reports its death, not its ports' states (they
// read Unknown then, which is no change of the link).
func diff(prev, cur *harness.FabricStatus, at time.Time) []Event {
	var ev []Event
	before := map[string]harness.NodeStatus{}
	for _, n := range prev.Nodes {
		before[n.Name] = n
	}
	for _, n := range cur.Nodes {
		b, ok := before[n.Name]
		if !ok {
			continue // added since: the page reloads the map for it
		}
		up := func(s harness.NodeStatus) bool { return s.Alive && s.Error == "" }
		switch {
		case up(b) && !up(n):
			e := Event{Time: at, Kind: EventNodeDied, Node: n.Name, Error: n.Error}
			ev = append(ev, e)
			continue
		case !up(b) && up(n):
			ev = append(ev, Event{Time: at, Kind: EventNodeAlive, Node: n.Name})
		case !up(n):
			continue
		}
		old := map[int]int{}
		for i, p := range b.Ports {
			old[p.Port] = i
		}
		for _, p := range n.Ports {
			i, ok := old[p.Port]
			if !ok {
				continue
			}
			bp := b.Ports[i]
			if bp.State != p.State && up(b) {
				ev = append(ev, Event{Time: at, Kind: EventPortState, Node: n.Name, Port: p.Port, From: bp.State, To: p.State})
			}
			was, is := portDrops(bp)+portErrors(bp.Counters), portDrops(p)+portErrors(p.Counters)
			if is > was {
				ev = append(ev, Event{Time: at, Kind: EventDrops, Node: n.Name, Port: p.Port, Delta: is - was})
			}
		}
	}
	return ev
}
