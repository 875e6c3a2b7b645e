package topologies

import (
	"strings"
)

// SQS is a static queuing scheme of seed 003: the service level a source
// gives the packets of a flow, fixed before injection and blind to the
// network's state. With SL2VL mapping SL s to VL s, the SL is the queue
// (VL) the flow's packets wait in at every hop. Q is the number of SLs a
// scheme spreads flows over, 3 in the paper's experiments; the schemes
// never return an SL of Q or above (the AFC VL is Q).
type SQS uint8

// The schemes.
const (
	// SQS1VC is no scheme: every flow on SL 0.
	// SQS1VC: SQSDBBM (destination-based buffer management, agnostic of
	SQS1VC SQS = iota + 1 // 1vc
	// topology and routing): SL = DLID mod Q. The paper gives this
	// formula.
	// SQSDBBM: SQSVFtree (topology- and routing-aware, for D-mod-K fat trees):
	SQSDBBM // dbbm
	// SL = (dstLeaf + srcLeaf) mod Q over leaf indexes. The paper gives
	// no formula, only properties: flows with the same source and
	// destination leaves share an SL, and from one source leaf
	// consecutive destination leaves take consecutive SLs. This formula
	// is ours; it has both.
	// SQSVFtree: SQSFlow2SL (topology-aware; vFtree's fix for more than two
	SQSVFtree // vftree
	// stages): hosts form Q groups of consecutive host indexes,
	// g(x) = ⌊x·Q/N⌋ for N hosts, and SL = (g(dst) − g(src)) mod Q.
	// The paper gives no formula, only properties: flows from one source
	// group to one destination group share an SL, and flows from one
	// source group to different destination groups take different SLs.
	// This formula is ours; it has both.
	SQSFlow2SL // flow2sl
)

// MaxSQSQueues bounds Q: SL s travels on data VL s, and a port has at
// most 15 data VLs (VL0–VL14).
const MaxSQSQueues = 15

// SQSs lists the schemes in the paper's order.
func SQSs() []SQS { return []SQS{SQS1VC, SQSDBBM, SQSFlow2SL, SQSVFtree} }

// ParseSQS reads a scheme's name, in any case: 1vc, dbbm, vftree, flow2sl.
func ParseSQS(s string) (SQS, error) {
	for _, q := range SQSs() {
		if strings.EqualFold(s, q.String()) {
			return q, nil
		}
	}
	return 0, invalid("queuing scheme %q: want 1vc, dbbm, vftree or flow2sl", s)
}

// FlowEnds is what a scheme reads of a flow: its source and destination
// hosts by host index and by leaf index (FatTreeLayout numbers both),
// and the destination's LID.
type FlowEnds struct {
	Src, Dst         int
	SrcLeaf, DstLeaf int
	DLID             uint16
}

// SL returns the service level scheme s gives flow e with q queues among
// hosts hosts. It fails, wrapping ErrInvalid, on an unknown scheme, q
// outside 1..MaxSQSQueues, or (for Flow2SL, the scheme that reads them) a
// host index outside 0..hosts−1; a negative leaf index fails for vFtree.
func (s SQS) SL(q, hosts int, e FlowEnds) (uint8, error) {
	if q < 1 || q > MaxSQSQueues {
		return 0, invalid("%v with %d queues, want 1 to %d", s, q, MaxSQSQueues)
	}
	switch s {
	case SQS1VC:
		return 0, nil
	case SQSDBBM:
		return uint8(int(e.DLID) % q), nil
	case SQSVFtree:
		if e.SrcLeaf < 0 || e.DstLeaf < 0 {
			return 0, invalid("vftree: leaf indexes %d and %d, want 0 or more", e.SrcLeaf, e.DstLeaf)
		}
		return uint8((e.DstLeaf + e.SrcLeaf) % q), nil
	case SQSFlow2SL:
		if hosts < 1 || e.Src < 0 || e.Src >= hosts || e.Dst < 0 || e.Dst >= hosts {
			return 0, invalid("flow2sl: hosts %d and %d of %d", e.Src, e.Dst, hosts)
		}
		d := Flow2SLGroup(e.Dst, q, hosts) - Flow2SLGroup(e.Src, q, hosts)
		return uint8((d%q + q) % q), nil
	}
	return 0, invalid("unknown %v", s)
}

// Flow2SLGroup returns g(x) = ⌊x·q/hosts⌋, the Flow2SL group of host
// index x among hosts hosts with q queues; x must be in 0..hosts−1.
func Flow2SLGroup(x, q, hosts int) int { return x * q / hosts }
