package madfuzz

import (
	"ibfab/harness"
)

// Accounting weighs the fuzz MADs no one answered against what the
// fabric counted: a MAD the spec lets an agent drop (a bad directed
// route, a failed M_Key, P_Key or CC_Key check, a response nobody asked
// for, a LID nobody has) is counted where it was dropped, so more
// unanswered MADs than counted drops means one vanished uncounted
// somewhere: silence the counters do not explain. One MAD may be counted
// twice (a switch and an agent both saw it), so the check is a bound,
// not an equality.
type Accounting struct {
	// Unanswered are the fuzz MADs sent that got no answer from the
	// fabric (the fuzzer's own attach point's hand-backs included).
	Unanswered uint64 `json:"unanswered"`
	// Counted is the growth of every drop counter of the fabric over the
	// run: the agents' (malformed, directed-route checks, misaddressed,
	// unroutable, key violations, unexpected, traps dropped), the ports'
	// drops by cause, and, but for the fuzzer's own HCA, the attach
	// points' and MAD endpoints' drops.
	Counted uint64 `json:"counted_drops"`
	// Local is the growth of the MADs the HCAs but the fuzzer's handed to
	// their own SM or clients, which answer or drop them themselves.
	Local uint64 `json:"handed_to_clients"`
	// Unexplained is what Counted and Local leave of Unanswered.
	Unexplained uint64 `json:"unexplained"`
}

// drops sums st's drop counters and the MADs its HCAs handed to local
// clients, leaving out the attach point and endpoint of node from (the
// fuzzer's: its drops are answers to MADs it never sent as a client).
func drops(st *harness.FabricStatus, from string) (counted, local uint64) {
	for _, n := range st.Nodes {
		if a := n.Agent; a != nil {
			counted += a.Malformed + a.DRDropped + a.Misaddressed + a.Unroutable + a.MKeyViolations +
				a.PKeyViolations + a.CCKeyViolations + a.Unexpected + a.TrapsDropped
			if n.Name != from {
				local += a.Local
			}
		}
		for _, p := range n.Ports {
			for _, v := range p.Drops {
				counted += v
			}
		}
		if n.Name == from {
			continue
		}
		counted += n.ClientDropped
		if n.Sim != nil {
			counted += n.Sim.DropTotal
		}
		if n.UMAD != nil {
			counted += n.UMAD.Dropped
		}
	}
	return counted, local
}

// account weighs report r's unanswered MADs against the drops the fabric
// counted between before and after.
func account(r *Report, before, after *harness.FabricStatus, from string) Accounting {
	c0, l0 := drops(before, from)
	c1, l1 := drops(after, from)
	answered := uint64(r.Answered - r.ByStatus["timeout"])
	a := Accounting{Counted: c1 - min(c0, c1), Local: l1 - min(l0, l1)}
	if uint64(r.Sent) > answered {
		a.Unanswered = uint64(r.Sent) - answered
	}
	if explained := a.Counted + a.Local; a.Unanswered > explained {
		a.Unexplained = a.Unanswered - explained
	}
	return a
}
