package partition

import (
	"fmt"
	"maps"
	"slices"

	"ibfab/wire/mad"
)

// Memory is where each port's keys were placed in earlier runs (OpenSM's
// accumulated P_Key indexes), by port GUID. The zero value is empty;
// Compute never changes the Memory it is given.
type Memory struct {
	ports map[uint64]*accum
}

// accum is one port's placements: key (membership bit included) → index,
// and one past the highest index placed (OpenSM's last_pkey_idx, which a
// key moved down does not lower).
type accum struct {
	idx  map[mad.PKey]int
	last int
}

func (a *accum) clone() *accum {
	return &accum{idx: maps.Clone(a.idx), last: a.last}
}

// set records that k was placed at index i.
func (a *accum) set(k mad.PKey, i int) {
	a.idx[k] = i
	a.last = max(a.last, i+1)
}

// clearIndex forgets the key placed at index i: the first in OpenSM's map
// order, should two be (it stops at one).
func (a *accum) clearIndex(i int) {
	keys := slices.SortedFunc(maps.Keys(a.idx), walkOrder)
	for _, k := range keys {
		if a.idx[k] != i {
			continue
		}
		delete(a.idx, k)
		if a.last == i+1 {
			a.last = 0
			for _, j := range a.idx {
				a.last = max(a.last, j+1)
			}
		}
		return
	}
}

// Forget drops what m remembers of port guid: it left the fabric, or was
// reset.
func (m *Memory) Forget(guid uint64) {
	if m != nil {
		delete(m.ports, guid)
	}
}

// Plan is what Compute decided.
type Plan struct {
	Partitions []Partition // in effect, in OpenSM's order
	Ports      []PortPlan  // by Fabric.Ports's index
	// Absent are the GUIDs the file names that are not end ports of the
	// fabric (skipped), in increasing order.
	Absent []uint64
	// Warnings are the ports whose tables cannot hold their keys.
	Warnings []string
	// Memory is the memory to give the next Compute.
	Memory *Memory
}

// PortPlan is one end port's tables.
type PortPlan struct {
	// Keys are the keys the port is to hold, in the order queued.
	Keys []mad.PKey
	// Table is the port's whole table as it is to be (⌈Cap/32⌉ blocks);
	// nil when the port's Table was not known.
	Table []mad.PKey
	// Peer is the switch port's whole table as it is to be (the blocks
	// past the keys as they were); nil when it is to be left alone (no
	// peer, a peer that does not enforce, enforcement off, or Table nil).
	Peer []mad.PKey
	// PeerManaged: the peer enforces partitions (Cap > 0) and its
	// PortInfo bits are to be PeerEnforce's.
	PeerManaged bool
	PeerEnforce Enforce
}

// Compute resolves c (nil: no file) on f and computes every end port's
// table and its switch port's, with enforcement e, as OpenSM's P_Key
// manager would given the ports' tables as they are and mem (nil: a
// fresh start). The error is a *Error for a definition that cannot be
// made (no P_Key left to generate).
func Compute(c *Config, f Fabric, e Enforce, mem *Memory) (*Plan, error) {
	r, err := resolve(c, f)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Partitions: r.partitions(), Ports: make([]PortPlan, len(f.Ports)), Absent: sortedKeys(r.absent),
		Memory: &Memory{ports: map[uint64]*accum{}}}
	if mem != nil {
		for g, a := range mem.ports {
			plan.Memory.ports[g] = a.clone()
		}
	}
	for i, p := range f.Ports {
		pp := &plan.Ports[i]
		pp.Keys = r.keysOf(p.GUID)
		if p.Table == nil {
			continue
		}
		a := plan.Memory.ports[p.GUID]
		if a == nil {
			a = &accum{idx: map[mad.PKey]int{}}
			plan.Memory.ports[p.GUID] = a
		}
		var used int
		pp.Table, used = place(pp.Keys, r.indx0[p.GUID], p.Cap, blocks(p.Table, p.Cap), a, func(k mad.PKey) {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("port 0x%016x: P_Key table full (%d entries), 0x%04x left out", p.GUID, p.Cap, uint16(k)))
		})
		if p.Peer == nil || p.Peer.Cap == 0 {
			continue
		}
		pp.PeerManaged, pp.PeerEnforce = true, e
		if e == EnforceOff {
			continue
		}
		var fits bool
		pp.Peer, fits = peerTable(pp.Table, used, blocks(p.Peer.Table, p.Peer.Cap))
		if !fits {
			pp.PeerEnforce = EnforceOff
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("port 0x%016x: its switch port's P_Key table (%d entries) cannot hold its keys: no enforcement there",
				p.GUID, p.Peer.Cap))
		}
	}
	return plan, nil
}

// blocks returns t as ⌈capacity/32⌉ whole blocks: padded with 0, or cut.
func blocks(t []mad.PKey, capacity int) []mad.PKey {
	n := (max(capacity, 0) + mad.PKeysPerBlock - 1) / mad.PKeysPerBlock * mad.PKeysPerBlock
	out := make([]mad.PKey, n)
	copy(out, t)
	return out
}

// pending is a key queued for a port, as OpenSM's osm_pending_pkey_t.
type pending struct {
	key   mad.PKey
	isNew bool // not kept where the port holds it
	at    int  // where the port holds it, when not new
}

// place lays keys out in a table of capacity entries that now holds cur
// (whole blocks), as OpenSM's pkey_mgr_process_physical_port and
// pkey_mgr_update_port: a key whose partition cur holds stays there
// (index 0 only for the Default or indx0 key), the others go where a
// earlier run placed them or after the highest index placed, index 0
// for the Default (or indx0) key, or into the first free entry past the
// end. It returns the new table (as long as cur) and the blocks used;
// full hears each key left out.
func place(keys []mad.PKey, indx0 mad.PKey, capacity int, cur []mad.PKey, a *accum, full func(mad.PKey)) ([]mad.PKey, int) {
	queue := queueKeys(keys, indx0, heldAt(cur), a)
	table := make([]mad.PKey, len(cur))
	used := 0
	for len(queue) > 0 {
		pd := queue[0]
		queue = queue[1:]
		pos, found, remembered := pd.at, true, false
		if pd.isNew {
			var again bool
			if pos, found, remembered, again = a.newKeyPosition(pd.key, indx0, capacity, table, full); again {
				queue = append(queue, pd)
				continue
			}
		}
		if !found || pos >= len(table) {
			continue
		}
		table[pos] = pd.key
		used = max(used, pos/mad.PKeysPerBlock+1)
		if !remembered {
			a.set(pd.key, pos)
		}
	}
	return table, used
}

// heldAt returns where the table cur holds each partition: base → the
// first index.
func heldAt(cur []mad.PKey) map[mad.PKey]int {
	at := map[mad.PKey]int{}
	for i, k := range cur {
		if k.Base() == 0 {
			continue
		}
		if _, ok := at[k.Base()]; !ok {
			at[k.Base()] = i
		}
	}
	return at
}

// queueKeys returns keys in the order place lays them out: those that
// stay where the table holds them (at) first, in reverse, then the new
// ones. A key held at index 0 that does not belong there, or that
// belongs at index 0 and is held elsewhere, is new and its index freed.
func queueKeys(keys []mad.PKey, indx0 mad.PKey, at map[mad.PKey]int, a *accum) []pending {
	var queue []pending
	for _, k := range keys {
		pd := pending{key: k, isNew: true}
		if i, ok := at[k.Base()]; ok {
			pd.isNew, pd.at = false, i
			switch {
			case indx0 != 0 && k.Base() == indx0.Base() && i != 0,
				indx0 == 0 && i != 0 && k.Base() == DefaultPKey:
				pd.isNew = true // to index 0
				a.clearIndex(i)
			case indx0 != 0 && i == 0 && k.Base() != indx0.Base(),
				indx0 == 0 && i == 0 && k.Base() != DefaultPKey:
				pd.isNew = true // out of index 0
				a.clearIndex(0)
			}
		}
		if pd.isNew {
			queue = append(queue, pd)
		} else {
			queue = append([]pending{pd}, queue...)
		}
	}
	return queue
}

// newKeyPosition returns where a new key goes in table: where an earlier
// run placed it (remembered), unless that is index 0 against the rules
// (again: its index is freed and the key queued anew); else index 0 for
// the Default (or indx0) key, the highest index placed, or 1; past
// capacity, the first free entry. found is false, and full hears the
// key, when it fits nowhere.
func (a *accum) newKeyPosition(key, indx0 mad.PKey, capacity int, table []mad.PKey, full func(mad.PKey)) (pos int, found, remembered, again bool) {
	if i, ok := a.idx[key]; ok {
		if key.Base() == indx0.Base() || (key != indx0 && i == 0) {
			a.clearIndex(i) // placed again, by the rules for a new key
			return 0, false, false, true
		}
		return i, true, true, false
	}
	switch {
	case key.Base() == DefaultPKey && indx0 == 0, key.Base() == indx0.Base():
		pos = 0
	case a.last > 0:
		pos = a.last
	default:
		pos = 1
	}
	found = pos < capacity
	if !found && key.Base() != DefaultPKey {
		if i, ok := firstFree(table); ok && i < capacity {
			pos, found = i, true
			a.clearIndex(i)
		}
	}
	if !found {
		full(key)
	}
	return pos, found, false, false
}

// firstFree returns the first entry of t from index 1 that holds no key.
func firstFree(t []mad.PKey) (int, bool) {
	for i := 1; i < len(t); i++ {
		if t[i].Base() == 0 {
			return i, true
		}
	}
	return 0, false
}

// peerTable packs the keys of an end port's new table (its first used
// blocks) from index 0 of its switch port's table cur, as OpenSM's
// pkey_mgr_update_peer_port: a limited key whose full key the table also
// holds is left out. The blocks up to the last one the keys reach are
// written (its rest 0), the others kept. fits is false when the keys need
// every block of cur or more: enforcement is then off.
func peerTable(table []mad.PKey, used int, cur []mad.PKey) (out []mad.PKey, fits bool) {
	out = slices.Clone(cur)
	maxBlocks := len(cur) / mad.PKeysPerBlock
	var keys []mad.PKey
	for _, k := range table[:used*mad.PKeysPerBlock] {
		if k.Base() == 0 || (!k.IsFull() && slices.Contains(table, k|mad.PKeyFullMember)) {
			continue
		}
		keys = append(keys, k)
	}
	n := min(len(keys), len(out))
	copy(out, keys[:n])
	if len(keys) >= maxBlocks*mad.PKeysPerBlock {
		return out, false
	}
	if n%mad.PKeysPerBlock != 0 {
		clear(out[n : (n/mad.PKeysPerBlock+1)*mad.PKeysPerBlock])
	}
	return out, true
}
