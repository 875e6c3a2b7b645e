package sm

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"ibfab/sm/routing"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Provisional routes, thesis 6.3: PIRa's routes, quick to compute, are
// distributed first under the configured strategy; then FERa's, on the
// same up*/down* graph, go out with the subnet in service and no
// protection. Both route sets follow the same graph, so any mix of their
// entries is deadlock-free; what remains is a packet a switch already on
// definitive tables sends back where it came from (a Pout = Pin drop)
// because the next switch is not updated yet. So the definitive entries
// go in FERa's order, a switch's entry for a destination only after the
// next switch's: in waves, where wave 1 holds every changed entry whose
// next hop is unchanged (or the destination) and wave k+1 those whose
// next hop changed in wave k; within a wave, in the order FERa computed
// the entries. Each wave's blocks are acknowledged before the next wave
// goes. Once a switch has its definitive entry for a destination, so has
// every switch from there on, so the packets it forwards follow FERa's
// loop-free routes. Only the LFT blocks that change are sent.

// heldLFT returns what each switch of sn holds for LIDs 0..rt.MaxLID, by
// the shadow.
func (s *SM) heldLFT(sn *Subnet, rt *routing.Routes) [][]uint8 {
	held := make([][]uint8, sn.Topo.NumNodes())
	for _, sw := range sn.Switches() {
		lft := make([]uint8, int(rt.MaxLID)+1)
		for lid := range lft {
			lft[lid] = mad.LFTNoPort
		}
		guid := sn.Topo.Node(sw).GUID
		for b := 0; b <= int(rt.MaxLID)/mad.LFTEntriesPerBlock; b++ {
			if blk := s.shadow[shadowKey{guid, 0, mad.AttrLinearFwdTbl, uint32(b)}]; blk != nil {
				copy(lft[b*mad.LFTEntriesPerBlock:], blk)
			}
		}
		held[sw] = lft
	}
	return held
}

// distributeDefinitive streams rt's entries over the provisional tables
// the switches of sn hold, in waves.
func (s *SM) distributeDefinitive(ctx context.Context, sn *Subnet, rt *routing.Routes, res *Result) error {
	problem := func(format string, args ...any) { res.Problems = append(res.Problems, fmt.Sprintf(format, args...)) }
	f := &sn.Fabric
	t := f.Topo
	held := s.heldLFT(sn, rt)
	changed := func(x, lid int) bool { return held[x][lid] != rt.LFT[x][lid] }
	wave := map[[2]int]int{}
	var waveOf func(x, lid, depth int) int
	waveOf = func(x, lid, depth int) int {
		if w, ok := wave[[2]int{x, lid}]; ok {
			return w
		}
		w := 1
		if out := int(rt.LFT[x][lid]); out != 0 && out != mad.LFTNoPort && depth < t.NumNodes() {
			if peer, ok := t.Peer(topologies.PortRef{Node: x, Port: out}); ok && f.IsSwitch(peer.Node) && changed(peer.Node, lid) {
				w = 1 + waveOf(peer.Node, lid, depth+1)
			}
		}
		wave[[2]int{x, lid}] = w
		return w
	}
	type entry struct {
		x, lid, w int
		seq       int32
	}
	var entries []entry
	for i, e := range f.Ends() {
		for k := range e.NumLIDs() {
			lid := int(e.LID) + k
			for _, x := range f.Switches() {
				if !changed(x, lid) {
					continue
				}
				en := entry{x: x, lid: lid, w: waveOf(x, lid, 0)}
				if rt.Seq != nil && rt.Seq[x] != nil {
					en.seq = rt.Seq[x][i]
				}
				entries = append(entries, en)
			}
		}
	}
	res.LFTEntriesChanged += len(entries)
	slices.SortStableFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.w, b.w), cmp.Compare(a.seq, b.seq), cmp.Compare(a.x, b.x), cmp.Compare(a.lid, b.lid))
	})
	emit := func() { s.emitTables("definitive", sn, rt) }
	for len(entries) > 0 {
		w := entries[0].w
		n := 0
		type blk struct{ x, b int }
		var order []blk
		for n < len(entries) && entries[n].w == w {
			en := entries[n]
			held[en.x][en.lid] = rt.LFT[en.x][en.lid]
			if bk := (blk{en.x, en.lid / mad.LFTEntriesPerBlock}); !slices.Contains(order, bk) {
				order = append(order, bk)
			}
			n++
		}
		entries = entries[n:]
		for _, bk := range order {
			block := make([]byte, mad.LFTEntriesPerBlock)
			for k := range block {
				block[k] = mad.LFTNoPort
				if lid := bk.b*mad.LFTEntriesPerBlock + k; lid <= int(rt.MaxLID) {
					block[k] = held[bk.x][lid]
				}
			}
			if s.sendIfChanged(sn, bk.x, 0, mad.AttrLinearFwdTbl, uint32(bk.b), block, func(err error) {
				problem("LFT block %d of %s: %v", bk.b, t.Node(bk.x).Name, err)
			}, emit) {
				res.LFTBlocks++
			}
		}
		res.Waves++
		if err := s.tx.Run(ctx); err != nil || len(res.Problems) > 0 {
			return err
		}
	}
	return nil
}
