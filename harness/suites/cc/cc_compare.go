package cc

import (
	"fmt"
	"slices"
	"strings"

	"ibfab/harness/suites/runner"
)

// CCVerdict is how one of our figures stands beside the paper's: the
// experiments' one Verdict (verdict.go).
type CCVerdict = runner.Verdict

// The verdicts cc gives.
const (
	CCAgrees      = runner.VerdictAgrees      // within the paper's range, widened by ccTolerance
	CCSameSign    = runner.VerdictSameSign    // the paper's direction, not its size
	CCDisagrees   = runner.VerdictDisagrees   // the opposite of the paper, or no effect
	CCNotMeasured = runner.VerdictNotMeasured // the run gave nothing to compare
)

// ccTolerance widens the paper's ranges on both sides: its figures are
// read off plots of a different simulator with unstated link rate,
// buffers and thresholds, so only the size matters, not the digits.
const ccTolerance = 0.25

// CCComparison is one row of the table: our figure beside the paper's.
type CCComparison struct {
	Experiment string    `json:"experiment"`
	Pattern    string    `json:"pattern,omitempty"`
	Metric     string    `json:"metric"`
	Value      float64   `json:"value"`
	Ours       string    `json:"ours"`
	Paper      string    `json:"paper"`
	Verdict    CCVerdict `json:"verdict"`
	// Why explains a verdict other than CCAgrees from what the run saw.
	Why string `json:"why,omitempty"`
}

// judgeRange places v against the paper's [lo, hi]: within it (widened
// by ccTolerance) it agrees; beyond neutral on the paper's side it has
// the paper's direction; otherwise it disagrees.
func judgeRange(v, lo, hi, neutral float64) CCVerdict {
	switch {
	case !isFinite(v):
		return CCNotMeasured
	case v >= lo*(1-ccTolerance) && v <= hi*(1+ccTolerance):
		return CCAgrees
	case v > neutral:
		return CCSameSign
	}
	return CCDisagrees
}

// unsaturated: the destinations received what the sources offered,
// within 5 %.
func unsaturated(p CCPoint) bool { return p.AcceptedMbps >= 0.95*p.OfferedMbps }

// curve is one pattern's points under one scheme, by offered load.
func curve(ps []CCPoint, pattern string, s CCScheme) []CCPoint {
	var out []CCPoint
	for _, p := range ps {
		if p.Pattern == pattern && p.Scheme == s && p.Error == "" {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b CCPoint) int { return int(a.OfferedMbps - b.OfferedMbps) })
	return out
}

// saturation is the first offered load whose accepted throughput falls
// short of it; ok is false when no load did.
func saturation(c []CCPoint) (load float64, ok bool) {
	for _, p := range c {
		if !unsaturated(p) {
			return p.OfferedMbps, true
		}
	}
	return 0, false
}

// maxAccepted is the curve's throughput: the most it accepted.
func maxAccepted(c []CCPoint) float64 {
	m := 0.0
	for _, p := range c {
		m = max(m, p.AcceptedMbps)
	}
	return m
}

// throughputGain is DRB's throughput over IBA_CC's, minus one (the
// paper: +35-50 % on the torus).
func throughputGain(iba, drb []CCPoint) (float64, bool) {
	a, b := maxAccepted(iba), maxAccepted(drb)
	if a <= 0 || b <= 0 {
		return 0, false
	}
	return b/a - 1, true
}

// at is the point of c at offered load x.
func at(c []CCPoint, x float64) (CCPoint, bool) {
	i := slices.IndexFunc(c, func(p CCPoint) bool { return p.OfferedMbps == x })
	if i < 0 {
		return CCPoint{}, false
	}
	return c[i], true
}

// flatLatencyRatio is IBA_CC's mean latency over DRB's in the flat part
// of DRB's latency curve, where the paper puts its 200-300 %: the loads
// DRB still carries in full (below its saturation, where its curve bends
// up). Of those loads (with an IBA_CC point too) the ratio is the
// highest, at load: the paper's gap grows with the load up to DRB's
// saturation, where IBA_CC's sources already queue.
func flatLatencyRatio(iba, drb []CCPoint) (ratio, load float64, ok bool) {
	for _, d := range drb {
		if !unsaturated(d) || d.MeanLatencyUs <= 0 {
			continue
		}
		i, found := at(iba, d.OfferedMbps)
		if !found || i.MeanLatencyUs <= 0 {
			continue
		}
		if r := i.MeanLatencyUs / d.MeanLatencyUs; !ok || r > ratio {
			ratio, load, ok = r, d.OfferedMbps, true
		}
	}
	return ratio, load, ok
}

// overhead is DRB's cost below saturation, where the paper sees none:
// over the loads at which both schemes accept what is offered, the
// highest ratio of DRB's mean latency to IBA_CC's and the lowest ratio
// of its accepted throughput.
func overhead(iba, drb []CCPoint) (latency, accepted float64, ok bool) {
	accepted = 1
	for _, d := range drb {
		i, found := at(iba, d.OfferedMbps)
		if !found || !unsaturated(i) || !unsaturated(d) || i.MeanLatencyUs <= 0 || i.AcceptedMbps <= 0 {
			continue
		}
		latency = max(latency, d.MeanLatencyUs/i.MeanLatencyUs)
		accepted = min(accepted, d.AcceptedMbps/i.AcceptedMbps)
		ok = true
	}
	return latency, accepted, ok
}

// ccShape is D1's curve: where it saturates, and how far latency rose.
type ccShape struct {
	saturation float64 // offered load at which accepted fell short
	saturated  bool
	below      int     // points before saturation (accepted = offered)
	rise       float64 // latency at the highest load over the lowest
	shortfall  float64 // accepted over offered at the highest load
}

func shape(c []CCPoint) ccShape {
	var s ccShape
	s.saturation, s.saturated = saturation(c)
	for _, p := range c {
		if s.saturated && p.OfferedMbps >= s.saturation {
			break
		}
		s.below++
	}
	if len(c) > 0 && c[0].MeanLatencyUs > 0 {
		last := c[len(c)-1]
		s.rise = last.MeanLatencyUs / c[0].MeanLatencyUs
		if last.OfferedMbps > 0 {
			s.shortfall = last.AcceptedMbps / last.OfferedMbps
		}
	}
	return s
}

// d1Agrees: accepted = offered for at least one load, then saturation,
// and latency at the top at least twice the lowest.
func (s ccShape) agrees() bool { return s.saturated && s.below > 0 && s.rise >= 2 }

// peakReduction is how much lower DRB's peak link load is than the
// reference's (the paper: about 75 % against IBA_CC).
func peakReduction(ref, drb *CCHotRun) (float64, bool) {
	if ref == nil || drb == nil || ref.PeakLoad <= 0 {
		return 0, false
	}
	return 1 - drb.PeakLoad/ref.PeakLoad, true
}

// ccDiag is what a sweep's comparison knows of why it came out as it
// did, at the highest load swept.
type ccDiag struct {
	topLoad          float64
	ibaSat, drbSat   bool
	drbActive        float64 // DRB's mean active paths per source
	ibaCCTI          float64 // IBA_CC's mean CCTI
	fecn             uint64  // marks under either scheme
	lag              bool    // the machine fell behind at the lowest load
	lowOffered       float64
	lowAccepted      float64
	ibaAcc, drbAcc   float64
	ibaPeak, drbPeak float64 // inter-switch peak link loads at the top load
	// IBA_CC's accepted throughput at its best load and at the top one:
	// far apart when its throttling collapses past saturation.
	ibaBestLoad, ibaTopAcc float64
}

func diagnose(iba, drb []CCPoint) ccDiag {
	var d ccDiag
	_, d.ibaSat = saturation(iba)
	_, d.drbSat = saturation(drb)
	d.ibaAcc, d.drbAcc = maxAccepted(iba), maxAccepted(drb)
	for _, c := range [][]CCPoint{iba, drb} {
		for _, p := range c {
			d.fecn += p.FECNMarks
		}
		if len(c) > 0 && !unsaturated(c[0]) {
			d.lag, d.lowOffered, d.lowAccepted = true, c[0].OfferedMbps, c[0].AcceptedMbps
		}
	}
	if len(drb) > 0 {
		top := drb[len(drb)-1]
		d.topLoad, d.drbActive, d.drbPeak = top.OfferedMbps, top.MeanActive, top.PeakLinkLoad
	}
	if len(iba) > 0 {
		top := iba[len(iba)-1]
		d.ibaCCTI, d.ibaPeak, d.ibaTopAcc = top.MeanCCTI, top.PeakLinkLoad, top.AcceptedMbps
		for _, p := range iba {
			if p.AcceptedMbps == d.ibaAcc {
				d.ibaBestLoad = p.OfferedMbps
			}
		}
	}
	return d
}

// ibaCollapsed reports whether IBA_CC's throughput fell past its best
// load by more than a fifth: throttling, not the network, set it.
func (d ccDiag) ibaCollapsed() bool { return d.ibaTopAcc < 0.8*d.ibaAcc }

// why is the sentence a sweep's comparison gets when it does not agree:
// the first cause the run shows, or, failing one, the setting's. above
// says ours exceeds the paper's range (a gain larger than the paper's).
func (d ccDiag) why(v CCVerdict, above bool) string {
	if v == CCAgrees {
		return ""
	}
	switch {
	case above && d.ibaCollapsed():
		return fmt.Sprintf("larger than the paper's because our IBA_CC collapses past saturation: its accepted throughput fell from %.0f Mb/s (at %.0f offered) to %.0f at %.0f as its sources' mean CCTI rose to %.1f; "+
			"our table (128 linear steps, up to 32 packet times of delay) keeps throttling while notifications last, and every source whose packets crossed a congested queue is throttled, the victims' too; "+
			"the throttled packets wait at the source, where latency is counted. The paper's IBA_CC (table and timer not stated) saturates without collapsing", d.ibaAcc, d.ibaBestLoad, d.ibaTopAcc, d.topLoad, d.ibaCCTI)
	case d.lag:
		return fmt.Sprintf("the fabric fell behind already at the lowest load (%.0f of %.0f Mb/s accepted): the machine, not the network, set the limit; a higher --time-scale would show the network", d.lowAccepted, d.lowOffered)
	case !d.ibaSat && !d.drbSat:
		return fmt.Sprintf("neither scheme saturated up to %.0f Mb/s per source, so both carried all that was offered and cannot differ in throughput; the paper's network saturated earlier (its link rate is not stated)", d.topLoad)
	case d.fecn == 0:
		return "no switch marked a packet (no FECN), so neither scheme had anything to react to: the queues never reached the marking threshold"
	case d.drbActive <= 1.05:
		return fmt.Sprintf("DRB hardly opened alias paths (%.2f active per source at %.0f Mb/s), so it ran as IBA_CC without throttling", d.drbActive, d.topLoad)
	case d.ibaCCTI < 0.5:
		return fmt.Sprintf("IBA_CC hardly throttled (mean CCTI %.1f at %.0f Mb/s), so it lost little to DRB", d.ibaCCTI, d.topLoad)
	case d.drbPeak >= 0.95 && d.ibaPeak >= 0.95:
		return fmt.Sprintf("under both schemes some link ran full (peak %.2f and %.2f of its rate): the alias routes ibsm gives for LMC 2 share links with the base routes, so DRB could not move the excess off the hottest one", d.ibaPeak, d.drbPeak)
	}
	return fmt.Sprintf("both schemes acted (DRB %.2f active paths per source, IBA_CC mean CCTI %.1f) but the size differs: our alias routes, buffers (31 packets per VL), threshold and CCT are ours, the paper's are not stated", d.drbActive, d.ibaCCTI)
}

// ccCompare is the table: for every experiment that ran, our figures
// beside the paper's.
func ccCompare(rep *CCReport) []CCComparison {
	var out []CCComparison
	for i := range rep.Experiments {
		e := &rep.Experiments[i]
		switch e.ID {
		case "D1":
			out = append(out, compareD1(e)...)
		case "D2", "D3":
			for _, pat := range e.Patterns {
				out = append(out, compareSweep(e, pat.Name)...)
			}
		}
	}
	out = append(out, compareHotSpot(rep)...)
	return out
}

func compareD1(e *CCExperimentReport) []CCComparison {
	var out []CCComparison
	for _, pat := range e.Patterns {
		c := curve(e.Points, pat.Name, CCOff)
		s := shape(c)
		row := CCComparison{Experiment: e.ID, Pattern: pat.Name, Metric: "accepted = offered, then latency rises",
			Value: s.rise, Paper: "accepted = offered until saturation, then latency rises sharply", Verdict: CCDisagrees}
		switch {
		case len(c) == 0:
			row.Verdict, row.Ours = CCNotMeasured, "no points"
		case !s.saturated:
			row.Ours = fmt.Sprintf("no saturation up to %.0f Mb/s", c[len(c)-1].OfferedMbps)
			row.Why = "the loads swept stayed below the fabric's saturation, so only the flat part of the curve was seen"
		default:
			row.Ours = fmt.Sprintf("saturates at %.0f Mb/s; latency ×%.1f; accepts %.0f %% at the top", s.saturation, s.rise, s.shortfall*100)
			if s.agrees() {
				row.Verdict = CCAgrees
			} else if s.below == 0 {
				row.Why = fmt.Sprintf("already the lowest load (%.0f Mb/s) was not carried in full: the machine or the network was saturated from the start", c[0].OfferedMbps)
			} else {
				row.Why = fmt.Sprintf("past saturation the latency rose only ×%.1f: the sources' backlog (%d packets) bounds the queueing a packet can see", s.rise, ccMaxBacklog)
			}
		}
		out = append(out, row)
	}
	return out
}

// compareSweep is a D2 or D3 pattern's rows: throughput gain, latency in
// the flat part, no overhead below saturation.
func compareSweep(e *CCExperimentReport, pat string) []CCComparison {
	iba, drb := curve(e.Points, pat, CCIBA), curve(e.Points, pat, CCDRB)
	d := diagnose(iba, drb)
	base := CCComparison{Experiment: e.ID, Pattern: pat}
	var out []CCComparison

	g := base
	g.Metric, g.Paper = "throughput, DRB over IBA_CC", "+35–50 %"
	if e.ID == "D3" {
		g.Paper = "+35–50 % on the torus, slightly less on the mesh"
	}
	if v, ok := throughputGain(iba, drb); ok {
		g.Value, g.Ours = v, fmt.Sprintf("%+.0f %% (%.0f vs %.0f Mb/s)", v*100, d.drbAcc, d.ibaAcc)
		g.Verdict = judgeRange(v, 0.35, 0.50, 0)
		if e.ID == "D3" {
			g.Verdict = judgeRange(v, 0.2, 0.50, 0)
		}
	} else {
		g.Verdict, g.Ours = CCNotMeasured, "no throughput measured"
	}
	g.Why = d.why(g.Verdict, g.Value > 0.50)
	out = append(out, g)

	l := base
	l.Metric, l.Paper = "latency in the flat part, IBA_CC / DRB", "2–4× (200–300 %)"
	if r, load, ok := flatLatencyRatio(iba, drb); ok {
		l.Value, l.Ours = r, fmt.Sprintf("%.2f× at %.0f Mb/s", r, load)
		l.Verdict = judgeRange(r, 2, 4, 1.05)
	} else {
		l.Verdict, l.Ours = CCNotMeasured, "no flat part with both schemes"
	}
	l.Why = d.why(l.Verdict, l.Value > 4)
	out = append(out, l)

	o := base
	o.Metric, o.Paper = "overhead below saturation (DRB / IBA_CC)", "none"
	if lat, acc, ok := overhead(iba, drb); ok {
		o.Value, o.Ours = lat, fmt.Sprintf("latency ×%.2f, accepted ×%.3f", lat, acc)
		o.Verdict = CCAgrees
		if lat > 1.25 || acc < 0.97 {
			o.Verdict = CCDisagrees
			o.Why = fmt.Sprintf("below saturation DRB's latency reached %.2f× IBA_CC's (accepted ×%.3f): alias paths opened while IBA_CC's sources were still unthrottled, and an alias is longer than the minimal path", lat, acc)
		}
	} else {
		o.Verdict, o.Ours = CCNotMeasured, "no load below both saturations"
		o.Why = "every load swept saturated one of the schemes"
	}
	out = append(out, o)
	return out
}

// hotRun finds an experiment's hot-spot run of scheme s.
func hotRun(rep *CCReport, id string, s CCScheme) *CCHotRun {
	for i := range rep.Experiments {
		if e := &rep.Experiments[i]; e.ID == id {
			for _, h := range e.Hot {
				if h.Scheme == s && h.Error == "" {
					return h
				}
			}
		}
	}
	return nil
}

// compareHotSpot is D4's peak link load and D5's and D6's mechanism.
func compareHotSpot(rep *CCReport) []CCComparison {
	var out []CCComparison
	if iba, drb := hotRun(rep, "D4", CCIBA), hotRun(rep, "D4", CCDRB); iba != nil || drb != nil {
		row := CCComparison{Experiment: "D4", Metric: "peak link load, DRB against IBA_CC", Paper: "about 75 % lower"}
		if v, ok := peakReduction(iba, drb); ok {
			row.Value, row.Ours = v, fmt.Sprintf("%.0f %% lower (%.2f vs %.2f of the rate at %s)", v*100, drb.PeakLoad, iba.PeakLoad, iba.HotLink)
			row.Verdict = judgeRange(v, 0.65, 0.85, 0)
			row.Why = hotWhy(row.Verdict, iba, drb)
		} else {
			row.Verdict, row.Ours = CCNotMeasured, "a run is missing"
		}
		out = append(out, row)
	}
	if drb := hotRun(rep, "D5", CCDRB); drb != nil {
		row := CCComparison{Experiment: "D5", Metric: "DRB: aliases open, then close", Value: float64(drb.MaxActive),
			Paper: "open gradually up to the cap (4), close one per timer period back to the base path",
			Ours:  fmt.Sprintf("up to %d active, %d opens, %d closes, %d active at the end", drb.MaxActive, drb.Opens, drb.Closes, drb.FinalActive)}
		switch {
		case drb.MaxActive >= 2 && drb.Closes > 0 && drb.FinalActive <= 1:
			row.Verdict = CCAgrees
		case drb.MaxActive >= 2:
			row.Verdict = CCSameSign
			row.Why = fmt.Sprintf("aliases opened but %d were still active at the end of the run: the notifications had not stopped for a timer period yet", drb.FinalActive)
		default:
			row.Verdict = CCDisagrees
			row.Why = fmt.Sprintf("no alias opened (%d BECNs reached the sources)", drb.BECNs)
		}
		if row.Verdict == CCAgrees && drb.MaxActive < ccDRBCap {
			row.Why = fmt.Sprintf("the cap (%d) was not reached: %d paths were enough to bring the notifications down", ccDRBCap, drb.MaxActive)
		}
		out = append(out, row)
	}
	if iba := hotRun(rep, "D6", CCIBA); iba != nil {
		row := CCComparison{Experiment: "D6", Metric: "IBA_CC: CCTI rises, decays; the source queue", Value: float64(iba.MaxCCTI),
			Paper: "CCTI up per BECN, down one per timer; latency moves into the source queue",
			Ours:  fmt.Sprintf("CCTI up to %d, %d at the end; %d packets queued at the sources at most", iba.MaxCCTI, iba.FinalCCTI, iba.MaxBacklog)}
		switch {
		case iba.MaxCCTI > 0 && iba.FinalCCTI < iba.MaxCCTI && iba.MaxBacklog > 0:
			row.Verdict = CCAgrees
		case iba.MaxCCTI > 0:
			row.Verdict = CCSameSign
			row.Why = fmt.Sprintf("the CCTI rose (to %d) but ended at %d and the sources' backlog peaked at %d packets: the run ended before it decayed, or the throttled sources never queued", iba.MaxCCTI, iba.FinalCCTI, iba.MaxBacklog)
		default:
			row.Verdict = CCDisagrees
			row.Why = fmt.Sprintf("no source throttled (CCTI 0; %d BECNs reached them)", iba.BECNs)
		}
		out = append(out, row)
	}
	return out
}

// hotWhy explains a hot spot's peak reduction that does not agree.
func hotWhy(v CCVerdict, iba, drb *CCHotRun) string {
	switch {
	case v == CCAgrees:
		return ""
	case drb.MaxActive < 2:
		return "DRB opened no alias path, so its traffic kept to the hot row"
	case v == CCSameSign:
		return fmt.Sprintf("DRB spread the burst (up to %d paths per pair) but its peak stayed at %.2f of the rate: the burst offers %.1f× a row link's rate, and spreading it evenly over the rows leaves each link loaded; a reduction of 75 %% would need the peak below the burst's own average share", drb.MaxActive, drb.PeakLoad, ccHotLinkLoad)
	}
	return fmt.Sprintf("DRB's peak (%.2f) is not below IBA_CC's (%.2f): IBA_CC throttled the sources, which lowers every link's load, while DRB keeps injecting (the paper compares the distribution, which this peak does not capture)", drb.PeakLoad, iba.PeakLoad)
}

// ccMustShow is the must-show checks on the hot spot, each within
// one run of the suite: with IBA_CC the congested link's FECN count
// rises and the sources' injection falls below what they generate,
// throttled by their CCTI; with DRB the alias paths open, close again
// after the burst, and the hot link's load falls against the run without
// CC (D0; IBA_CC's when D0 did not run); with CC off neither happens.
// The margins are wide (10 % of a load, any mark, any CCTI; the hot link
// must shed 5 % of its rate, where the same link's load measured without
// CC swings by 2 %) and nothing depends on wall-clock time: the runs
// share the machine's noise.
func ccMustShow(rep *CCReport) []runner.Check {
	off, iba, drb := hotRun(rep, "D0", CCOff), hotRun(rep, "D6", CCIBA), hotRun(rep, "D5", CCDRB)
	var cs []runner.Check
	add := func(name string, ok bool, format string, args ...any) {
		cs = append(cs, runner.Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	if iba != nil {
		add("IBA_CC: the hot link's FECN marks rise", iba.FECNBurst > iba.FECNBefore && iba.FECNBurst > 0,
			"%d marks during the burst, %d before", iba.FECNBurst, iba.FECNBefore)
		add("IBA_CC: the sources' injection falls", iba.MaxCCTI > 0 && iba.InjectedMbps < 0.9*iba.OfferedMbps,
			"CCTI up to %d; the burst sources injected %.0f of %.0f Mb/s", iba.MaxCCTI, iba.InjectedMbps, iba.OfferedMbps)
	}
	if drb != nil {
		add("DRB: alias paths open", drb.MaxActive >= 2, "up to %d paths per pair, %d opens", drb.MaxActive, drb.Opens)
		add("DRB: alias paths close after the burst", drb.Closes > 0 && drb.FinalActive <= 1,
			"%d closes, %d paths per pair at the end", drb.Closes, drb.FinalActive)
		ref, refName := off, "without CC"
		if ref == nil {
			ref, refName = iba, "under IBA_CC"
		}
		if ref != nil && ref.HotLink != "" {
			got := drb.BurstLoads[ref.HotLink]
			add("DRB: the hot link's load falls", got <= ref.PeakLoad-ccHotLinkShed,
				"%s carried %.2f of its rate under DRB, %.2f %s", ref.HotLink, got, ref.PeakLoad, refName)
		}
	}
	if off != nil {
		add("CC off: no marks, no throttling, no aliases", off.FECNBurst == 0 && off.MaxCCTI == 0 && off.MaxActive <= 1,
			"%d marks, CCTI up to %d, up to %d paths per pair", off.FECNBurst, off.MaxCCTI, off.MaxActive)
	}
	return cs
}

// disagreements lists the rows that do not agree, for the index.
func disagreements(cs []CCComparison) []string {
	var out []string
	for _, c := range cs {
		if c.Verdict != CCAgrees && c.Why != "" {
			name := c.Experiment
			if c.Pattern != "" {
				name += " " + c.Pattern
			}
			out = append(out, fmt.Sprintf("%s, %s (%s): %s.", name, c.Metric, c.Verdict, strings.TrimSuffix(c.Why, ".")))
		}
	}
	return out
}
