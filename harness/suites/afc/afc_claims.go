package afc

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"ibfab/harness/suites/runner"
)

// The paper's qualitative claims (the figures' numbers did not survive in
// its text), each checked against our points by a pure function. An
// ordering the paper states holds when our points show it by more than
// afcNoise, the spread two runs of one point show, fails when they show
// the reverse by as much, and is a tie in between: no evidence either
// way. A claim agrees when every case it covers (HS10 and HS25, say)
// holds, is within noise when every case ties, partly when some hold or
// the rest tie, and disagrees when no case holds and some fail.

// AFCClaim is one claim of the paper beside what we measured.
type AFCClaim struct {
	ID      string         `json:"id"`
	K       int            `json:"k"`
	Paper   string         `json:"paper"`
	Ours    string         `json:"ours"`
	Verdict runner.Verdict `json:"verdict"` // agrees, partly, within noise, disagrees, not measured
	// Why explains a verdict other than agrees.
	Why string `json:"why,omitempty"`
}

// The verdicts afc gives.
const (
	verdictAgree    = runner.VerdictAgrees
	verdictPartly   = runner.VerdictPartly
	verdictTie      = runner.VerdictWithinNoise
	verdictDisagree = runner.VerdictDisagrees
	verdictNone     = runner.VerdictNotMeasured
)

// afcOutcome is what our points say of one case of a claim.
type afcOutcome int

const (
	outcomeFails afcOutcome = iota - 1 // the reverse, by more than afcNoise
	outcomeTie                         // within afcNoise either way
	outcomeHolds                       // by more than afcNoise
)

// above is whether a exceeds b by more than afcNoise.
func above(a, b float64) afcOutcome {
	switch {
	case a > b+afcNoise:
		return outcomeHolds
	case a < b-afcNoise:
		return outcomeFails
	}
	return outcomeTie
}

// both is the outcome of a case that needs every one of os: the weakest.
func both(os ...afcOutcome) afcOutcome { return slices.Min(os) }

// verdictOf turns the outcomes of a claim's cases into its verdict.
func verdictOf(os []afcOutcome) runner.Verdict {
	var n [3]int
	for _, o := range os {
		n[o+1]++
	}
	fails, ties, holds := n[0], n[1], n[2]
	switch {
	case len(os) == 0:
		return verdictNone
	case holds == len(os):
		return verdictAgree
	case ties == len(os):
		return verdictTie
	case holds > 0 || fails == 0:
		return verdictPartly
	}
	return verdictDisagree
}

// afcNoise is how far apart two normalized throughputs may be and still
// count as equal: two runs of the same 16 K=2 points (UT and HS10, four
// routings, 1VC and Flow2SL, full load, 2 ms windows) differed by 0.10 on
// average and 0.32 at most (2026-11-27). Differences below it are not
// evidence either way; the orderings the claims test mostly are.
const afcNoise = 0.10

// afcCollapsed is the normalized throughput below which a scheme counts
// as collapsed (the paper's "almost 0").
const afcCollapsed = 0.1

// afcScaleWhy is the reason common to the claims that need deep,
// persistent congestion trees.
const afcScaleWhy = "likely the scale: our fat trees have 16 or 54 hosts where the paper's has 11,664, so a hot spot has 2-14 sources " +
	"instead of 1,166 and 4 or 9 paths per pair instead of 324; the tree it grows is smaller and the HoL blocking it Causes weaker, " +
	"and the differences between schemes shrink toward the run-to-run spread of a point"

// afcClaims evaluates every claim on each K the points cover.
func afcClaims(ps []AFCPoint, ex []AFCExchange, mech []AFCMechanism) []AFCClaim {
	var out []AFCClaim
	var ks []int
	for _, p := range ps {
		if !slices.Contains(ks, p.K) {
			ks = append(ks, p.K)
		}
	}
	slices.Sort(ks)
	for _, k := range ks {
		c := afcClaimSet{ps: ps, k: k}
		out = append(out, c.sweepClaims()...)
	}
	out = append(out, exchangeClaims(ex)...)
	out = append(out, mechanismClaims(mech)...)
	return out
}

// afcClaimSet evaluates the sweep claims on one K.
type afcClaimSet struct {
	ps []AFCPoint
	k  int
}

// top returns the mean accepted throughput of (t, r, q, voq) over the
// upper half of the sweep (the congested loads).
func (c afcClaimSet) top(t AFCTraffic, r AFCRouting, q AFCQueuing, voq bool) (float64, bool) {
	hi, ok := afcTopLoad(c.ps, c.k, t, voq)
	if !ok {
		return 0, false
	}
	return afcMean(c.ps, c.k, t, r, q, voq, hi/2)
}

// perTraffic evaluates a case on HS10 and on HS25, and joins the texts of
// both into Ours.
func (c afcClaimSet) perTraffic(eval func(t AFCTraffic) (afcOutcome, string, bool)) (string, runner.Verdict) {
	var texts []string
	var os []afcOutcome
	for _, t := range []AFCTraffic{AFCHS10, AFCHS25} {
		o, text, m := eval(t)
		if !m {
			continue
		}
		os = append(os, o)
		texts = append(texts, t.String()+": "+text)
	}
	return strings.Join(texts, "; "), verdictOf(os)
}

// afcTieWhy explains a verdict within noise.
var afcTieWhy = fmt.Sprintf("the differences the claim rests on are within the run-to-run spread of a point (%.2f): "+
	"our runs neither confirm nor refute it", afcNoise)

func (c afcClaimSet) claim(id, paper, ours string, verdict runner.Verdict, why string) AFCClaim {
	cl := AFCClaim{ID: id, K: c.k, Paper: paper, Ours: ours, Verdict: verdict}
	switch verdict {
	case verdictAgree, verdictNone:
	case verdictTie:
		cl.Why = afcTieWhy
	default:
		cl.Why = why
	}
	if ours == "" {
		cl.Ours, cl.Verdict, cl.Why = "—", verdictNone, ""
	}
	return cl
}

// gains returns, per queuing, top(to) − top(from) under t.
func (c afcClaimSet) gains(t AFCTraffic, from, to AFCRouting, voq bool) (map[AFCQueuing]float64, bool) {
	g := map[AFCQueuing]float64{}
	for _, q := range afcQueuings {
		a, ok1 := c.top(t, from, q, voq)
		b, ok2 := c.top(t, to, q, voq)
		if !ok1 || !ok2 {
			return nil, false
		}
		g[q] = b - a
	}
	return g, true
}

// oneVCAndVFtreeLead is whether 1VC and vFtree both gain more than DBBM
// and Flow2SL.
func oneVCAndVFtreeLead(g map[AFCQueuing]float64) afcOutcome {
	return above(min(g[AFC1VC], g[AFCVFtree]), max(g[AFCDBBM], g[AFCFlow2SL]))
}

func fmtGains(g map[AFCQueuing]float64) string {
	var parts []string
	for _, q := range afcQueuings {
		parts = append(parts, fmt.Sprintf("%s %+.2f", q, g[q]))
	}
	return strings.Join(parts, ", ")
}

// afcSweepClaims are the paper's claims about the load sweeps, each
// evaluated on one K by its own function, in the order the claims table
// lists them.
var afcSweepClaims = []func(c afcClaimSet) AFCClaim{
	afcClaimSet.utRouting,
	afcClaimSet.hs1VCCollapse,
	afcClaimSet.hsSQSOrder,
	afcClaimSet.hsAFIGain,
	afcClaimSet.hs10DBBMAdaptive,
	afcClaimSet.hsFlow2SLAFIBest,
	afcClaimSet.hs25AboveHS10,
	afcClaimSet.voqUTOptimal,
	afcClaimSet.voqHSAdaptiveHurts,
	afcClaimSet.voqHSAFIGain,
}

// sweepClaims evaluates every sweep claim on c's K.
func (c afcClaimSet) sweepClaims() []AFCClaim {
	out := make([]AFCClaim, len(afcSweepClaims))
	for i, claim := range afcSweepClaims {
		out[i] = claim(c)
	}
	return out
}

// routingSpread is, without VOQ under UT, the largest spread of accepted
// throughput between the routings at one queuing and load, and where;
// m is whether any point was measured.
func (c afcClaimSet) routingSpread() (spread float64, where string, m bool) {
	for _, q := range afcQueuings {
		for _, p := range c.ps {
			if p.K != c.k || p.Traffic != AFCUniform || p.VOQ || p.Queuing != q || p.Routing != AFCDModK || p.Error != "" {
				continue
			}
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, r := range afcRoutings {
				if x, ok := afcCell(c.ps, c.k, AFCUniform, r, q, false, p.Load); ok {
					lo, hi = min(lo, x.Accepted), max(hi, x.Accepted)
					m = true
				}
			}
			if hi-lo > spread {
				spread, where = hi-lo, fmt.Sprintf("%s at %.0f %%", q, p.Load)
			}
		}
	}
	return spread, where, m
}

// utRouting: UT, no VOQ: the routing hardly matters, a claim of
// equality: agree within the noise.
func (c afcClaimSet) utRouting() AFCClaim {
	spread, where, m := c.routingSpread()
	ours, v := "", verdictNone
	if m {
		ours = fmt.Sprintf("largest spread between routings %.3f (%s)", spread, where)
		v = verdictDisagree
		switch {
		case spread <= afcNoise:
			v = verdictAgree
		case spread <= 2*afcNoise:
			v = verdictPartly
		}
	}
	return c.claim("UT-routing", "UT: the routing algorithm hardly matters (congestion is sporadic and short)", ours, v,
		"sporadic contention costs more in our small switches, whose VLs hold 7-31 packets")
}

// hs1VCCollapse: HS, no VOQ: 1VC collapses with D-mod-K and Adaptive.
// Partly when it does not collapse but is the lowest scheme by more than
// the noise in every case.
func (c afcClaimSet) hs1VCCollapse() AFCClaim {
	var texts []string
	var os []afcOutcome
	lowest := 0
	for _, t := range []AFCTraffic{AFCHS10, AFCHS25} {
		for _, r := range []AFCRouting{AFCDModK, AFCAdaptive} {
			one, ok := c.top(t, r, AFC1VC, false)
			if !ok {
				continue
			}
			o := outcomeFails
			if one <= afcCollapsed {
				o = outcomeHolds
			}
			os = append(os, o)
			note := ""
			if above(c.lowestBut1VC(t, r), one) == outcomeHolds {
				lowest++
				note = " (lowest)"
			}
			texts = append(texts, fmt.Sprintf("%s %s 1VC %.2f%s", t, r, one, note))
		}
	}
	v := verdictOf(os)
	if v == verdictDisagree && lowest == len(os) {
		v = verdictPartly
	}
	return c.claim("HS-1VC-collapse", "HS10/HS25: 1VC throughput collapses to almost 0 with D-mod-K and Adaptive",
		strings.Join(texts, "; "), v, afcScaleWhy)
}

// lowestBut1VC is the lowest top throughput of the queuings other than
// 1VC under (t, r) without VOQ; +Inf when none was measured.
func (c afcClaimSet) lowestBut1VC(t AFCTraffic, r AFCRouting) float64 {
	next := math.Inf(1)
	for _, q := range afcQueuings[1:] {
		if x, ok := c.top(t, r, q, false); ok {
			next = min(next, x)
		}
	}
	return next
}

// hsSQSOrder: HS, no VOQ: Flow2SL and DBBM cope better than 1VC and
// vFtree.
func (c afcClaimSet) hsSQSOrder() AFCClaim {
	ours, v := c.perTraffic(func(t AFCTraffic) (afcOutcome, string, bool) {
		x := map[AFCQueuing]float64{}
		for _, q := range afcQueuings {
			y, ok := c.top(t, AFCDModK, q, false)
			if !ok {
				return outcomeTie, "", false
			}
			x[q] = y
		}
		return above(min(x[AFCFlow2SL], x[AFCDBBM]), max(x[AFC1VC], x[AFCVFtree])), fmt.Sprintf("D-mod-K %s", fmtQ(x)), true
	})
	return c.claim("HS-SQS-order", "HS10/HS25: Flow2SL and DBBM cope better than 1VC and vFtree", ours, v, afcScaleWhy)
}

// hsAFIGain: HS, no VOQ: AFI helps 1VC and vFtree most.
func (c afcClaimSet) hsAFIGain() AFCClaim {
	ours, v := c.perTraffic(func(t AFCTraffic) (afcOutcome, string, bool) {
		g, ok := c.gains(t, AFCDModK, AFCAFI, false)
		if !ok {
			return outcomeTie, "", false
		}
		return oneVCAndVFtreeLead(g), "AFI − D-mod-K: " + fmtGains(g), true
	})
	return c.claim("HS-AFI-gain", "HS10/HS25: AFI helps 1VC and vFtree the most (vFtree significantly)", ours, v, afcScaleWhy)
}

// hs10DBBMAdaptive: HS10: DBBM does better with pure Adaptive than with
// AFI.
func (c afcClaimSet) hs10DBBMAdaptive() AFCClaim {
	a, ok1 := c.top(AFCHS10, AFCAdaptive, AFCDBBM, false)
	b, ok2 := c.top(AFCHS10, AFCAFI, AFCDBBM, false)
	ours, v := "", verdictNone
	if ok1 && ok2 {
		ours, v = fmt.Sprintf("DBBM Adaptive %.2f, AFI %.2f", a, b), verdictOf([]afcOutcome{above(a, b)})
	}
	return c.claim("HS10-DBBM-adaptive", "HS10: DBBM does not combine well with AFI; it does better with pure Adaptive", ours, v,
		"DBBM spreads the few destinations of a small tree over its 3 VLs, so the AFC's extra VL helps it as much as the others")
}

// hsFlow2SLAFIBest: HS: Flow2SL + AFI is best: above every other setup.
func (c afcClaimSet) hsFlow2SLAFIBest() AFCClaim {
	ours, v := c.perTraffic(func(t AFCTraffic) (afcOutcome, string, bool) {
		f, ok := c.top(t, AFCAFI, AFCFlow2SL, false)
		if !ok {
			return outcomeTie, "", false
		}
		best, bestName := math.Inf(-1), ""
		for _, r := range afcRoutings {
			for _, q := range afcQueuings {
				if x, ok := c.top(t, r, q, false); ok && x > best && (r != AFCAFI || q != AFCFlow2SL) {
					best, bestName = x, q.String()+"+"+r.String()
				}
			}
		}
		return above(f, best), fmt.Sprintf("Flow2SL+AFI %.2f, best other %s %.2f", f, bestName, best), true
	})
	return c.claim("HS-Flow2SL-AFI-best", "HS10/HS25: Flow2SL + AFI gives the best results", ours, v, afcScaleWhy)
}

// hs25AboveHS10: HS25 better than HS10 under Adaptive-th and AFI (means
// over the queuings).
func (c afcClaimSet) hs25AboveHS10() AFCClaim {
	var texts []string
	var os []afcOutcome
	for _, r := range []AFCRouting{AFCAdaptiveTh, AFCAFI} {
		var s10, s25 float64
		ok := true
		for _, q := range afcQueuings {
			x, o1 := c.top(AFCHS10, r, q, false)
			y, o2 := c.top(AFCHS25, r, q, false)
			ok = ok && o1 && o2
			s10, s25 = s10+x, s25+y
		}
		if !ok {
			continue
		}
		n := float64(len(afcQueuings))
		os = append(os, above(s25/n, s10/n))
		texts = append(texts, fmt.Sprintf("%s mean HS10 %.2f, HS25 %.2f", r, s10/n, s25/n))
	}
	return c.claim("HS25-above-HS10", "HS25: under Adaptive-th and AFI results are generally better than under HS10 (unexplained in the paper)",
		strings.Join(texts, "; "), verdictOf(os), "with a quarter of our few hosts on the hot spot, the rest share less of the fabric with the tree; the paper gives no cause to compare with")
}

// voqUTOptimal: VOQ, UT: optimal whatever the routing.
func (c afcClaimSet) voqUTOptimal() AFCClaim {
	worst, where, m := math.Inf(1), "", false
	for _, p := range c.ps {
		if p.K != c.k || !p.VOQ || p.Traffic != AFCUniform || p.Error != "" || p.Offered <= 0 {
			continue
		}
		m = true
		if r := p.Accepted / p.Offered; r < worst {
			worst, where = r, fmt.Sprintf("%s/%s at %.0f %%", p.Routing, p.Queuing, p.Load)
		}
	}
	ours, v := "", verdictNone
	if m {
		ours = fmt.Sprintf("lowest accepted/offered %.3f (%s)", worst, where)
		v = verdictDisagree
		switch {
		case worst >= 0.95:
			v = verdictAgree
		case worst >= 0.85:
			v = verdictPartly
		}
	}
	return c.claim("VOQ-UT-optimal", "VOQ, UT: optimal throughput whatever the routing", ours, v,
		"at full load a uniform pattern still collides at the destinations' links, which VOQs do not remove")
}

// voqHSAdaptiveHurts: VOQ, HS: adaptive routing is counter-productive for
// 1VC and vFtree.
func (c afcClaimSet) voqHSAdaptiveHurts() AFCClaim {
	ours, v := c.perTraffic(func(t AFCTraffic) (afcOutcome, string, bool) {
		g, ok := c.gains(t, AFCDModK, AFCAdaptive, true)
		if !ok {
			return outcomeTie, "", false
		}
		return both(above(0, g[AFC1VC]), above(0, g[AFCVFtree])), "Adaptive − D-mod-K: " + fmtGains(g), true
	})
	return c.claim("VOQ-HS-adaptive-hurts", "VOQ, HS10/HS25: adaptive routing is counter-productive for 1VC and vFtree", ours, v, afcScaleWhy)
}

// voqHSAFIGain: VOQ, HS: AFI improves 1VC and vFtree significantly,
// Flow2SL and DBBM less.
func (c afcClaimSet) voqHSAFIGain() AFCClaim {
	ours, v := c.perTraffic(func(t AFCTraffic) (afcOutcome, string, bool) {
		g, ok := c.gains(t, AFCAdaptive, AFCAFI, true)
		if !ok {
			return outcomeTie, "", false
		}
		return both(above(min(g[AFC1VC], g[AFCVFtree]), 0), oneVCAndVFtreeLead(g)), "AFI − Adaptive: " + fmtGains(g), true
	})
	return c.claim("VOQ-HS-AFI-gain", "VOQ, HS10/HS25: AFI improves 1VC and vFtree significantly, Flow2SL and DBBM less", ours, v, afcScaleWhy)
}

func fmtQ(x map[AFCQueuing]float64) string {
	var parts []string
	for _, q := range afcQueuings {
		parts = append(parts, fmt.Sprintf("%s %.2f", q, x[q]))
	}
	return strings.Join(parts, ", ")
}

// afcExchangeWhy is what we know of E5's disagreements.
const afcExchangeWhy = "our stand-in is not the trace: every host sends a few packets to each partner in turn at its full rate, " +
	"so the exchange is a drifting sequence of permutations, not PTRANS's compute-separated bursts; each setup ran once, " +
	"and one process late on the CPU moves the last packet, a spread we have not measured"

// exchangeClaims checks E5's claims on the execution times.
func exchangeClaims(ex []AFCExchange) []AFCClaim {
	ok := slices.DeleteFunc(slices.Clone(ex), func(e AFCExchange) bool { return e.Error != "" || e.ExecUs <= 0 })
	k := 0
	if len(ok) > 0 {
		k = ok[0].K
	}
	c := afcClaimSet{k: k}
	mean := func(keep func(AFCExchange) bool) (float64, bool) {
		var s float64
		n := 0
		for _, e := range ok {
			if keep(e) {
				s += e.ExecUs
				n++
			}
		}
		if n == 0 {
			return 0, false
		}
		return s / float64(n), true
	}
	var out []AFCClaim
	voq, o1 := mean(func(e AFCExchange) bool { return e.VOQ })
	iq, o2 := mean(func(e AFCExchange) bool { return !e.VOQ })
	ours, v := "", verdictNone
	if o1 && o2 {
		ours, v = fmt.Sprintf("mean %.1f µs with VOQs, %.1f µs without", voq, iq), verdictDisagree
		if voq < iq {
			v = verdictAgree
		}
	}
	out = append(out, c.claim("E5-VOQ", "PTRANS: configurations with VOQs beat those without", ours, v, afcExchangeWhy))

	ours, v = "", verdictNone
	if len(ok) > 0 {
		best := slices.MinFunc(ok, func(a, b AFCExchange) int { return cmpFloat(a.ExecUs, b.ExecUs) })
		ours = fmt.Sprintf("best %s %.1f µs", best.afcSetup, best.ExecUs)
		v = verdictDisagree
		if best.Queuing == AFC1VC && best.VOQ {
			v = verdictAgree
		}
	}
	out = append(out, c.claim("E5-best", "PTRANS: best overall is 1VC with VOQs", ours, v, afcExchangeWhy))

	afi, o1 := mean(func(e AFCExchange) bool { return e.Routing == AFCAFI })
	det, o2 := mean(func(e AFCExchange) bool { return e.Routing == AFCDModK })
	ours, v = "", verdictNone
	if o1 && o2 {
		ours, v = fmt.Sprintf("mean AFI %.1f µs, D-mod-K %.1f µs", afi, det), verdictDisagree
		switch {
		case afi <= det && afi >= 0.9*det:
			v = verdictAgree
		case afi <= det:
			v = verdictPartly // better, but by more than slightly
		}
	}
	out = append(out, c.claim("E5-AFI", "PTRANS: AFI is slightly better than deterministic routing", ours, v, afcExchangeWhy))
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// mechanismClaims checks E6: Adaptive spreads the hot spot's packets over
// more SQS VL queues than D-mod-K; AFI keeps the adapted ones in the AFC
// (its SQS queues holding hot packets are D-mod-K's); adaptation stops
// once the hot spot is gone.
func mechanismClaims(ms []AFCMechanism) []AFCClaim {
	get := func(r AFCRouting) (AFCMechanism, bool) {
		i := slices.IndexFunc(ms, func(m AFCMechanism) bool { return m.Routing == r && m.Error == "" })
		if i < 0 {
			return AFCMechanism{}, false
		}
		return ms[i], true
	}
	c := afcClaimSet{k: 2}
	var out []AFCClaim
	det, ok1 := get(AFCDModK)
	ad, ok2 := get(AFCAdaptive)
	ours, v := "", verdictNone
	if ok1 && ok2 {
		ours = fmt.Sprintf("SQS VL queues holding hot-spot packets: D-mod-K %d, Adaptive %d", len(det.HotSQS), len(ad.HotSQS))
		v = verdictDisagree
		if len(ad.HotSQS) > len(det.HotSQS) {
			v = verdictAgree
		}
	}
	out = append(out, c.claim("E6-spread", "adaptive routing spreads the congestion tree over the up paths: hot-spot packets in more SQS VLs", ours, v,
		"the hot spot did not fill the deterministic path's VLs enough to adapt"))

	afi, ok3 := get(AFCAFI)
	ours, v = "", verdictNone
	if ok1 && ok3 {
		extra := afcExtraQueues(afi.HotSQS, det.HotSQS)
		ours = fmt.Sprintf("AFI: %d SQS VL queues with hot-spot packets (%d not on D-mod-K's paths), %d AFC queues; %d adapted",
			len(afi.HotSQS), len(extra), len(afi.HotAFC), afi.AdaptedHot)
		v = verdictDisagree
		if len(extra) == 0 && len(afi.HotAFC) > 0 {
			v = verdictAgree
		}
	}
	out = append(out, c.claim("E6-AFC", "AFI confines adapted packets to the AFC: the SQS VLs stay as D-mod-K leaves them", ours, v,
		"an adapted hot-spot packet reached an SQS VL, which the switch rule forbids"))

	ours, v = "", verdictNone
	if ok3 {
		ours = fmt.Sprintf("adapted while hot %d, in the last %.1f ms after it %d; fullest switch VL at the end %.0f %%",
			afi.AdaptedHot, afi.TailMs, afi.AdaptedTail, 100*afi.EndOccupancy)
		v = verdictDisagree
		if afi.AdaptedHot > 0 && afi.AdaptedTail*100 <= afi.AdaptedHot && afi.EndOccupancy < afi.Threshold {
			v = verdictAgree
		}
	}
	out = append(out, c.claim("E6-stops", "adaptation stops once the downstream VL falls below the threshold", ours, v,
		"VLs stayed above the threshold after the hot spot, or adaptation went on without it"))
	return out
}

// afcExtraQueues returns the queues of got that want does not hold.
func afcExtraQueues(got, want []string) []string {
	var out []string
	for _, q := range got {
		if !slices.Contains(want, q) {
			out = append(out, q)
		}
	}
	return out
}
