package suites

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// thesisRef holds the thesis's means (Tables 28-31): seconds to valid
// tables and dropped packets, [basic, improved], by switches and load.
type thesisRef struct {
	actS, deactS         [2]float64
	actDrops, deactDrops [2]float64
}

var thesisRefs = map[int]map[float64]thesisRef{
	8: {
		25: {[2]float64{0.084322, 0.043018}, [2]float64{0.061461, 0.026079}, [2]float64{25906.71, 4400.33}, [2]float64{47417.14, 22447.86}},
		50: {[2]float64{0.084184, 0.043004}, [2]float64{0.061422, 0.033075}, [2]float64{51865.43, 8754.33}, [2]float64{94864.57, 43835.71}},
	},
	16: {
		25: {[2]float64{0.309162, 0.106540}, [2]float64{0.262362, 0.095271}, [2]float64{50959.20, 1911.33}, [2]float64{158143.00, 54601.47}},
		50: {[2]float64{0.309141, 0.106548}, [2]float64{0.266308, 0.095274}, [2]float64{102008.47, 3776.00}, [2]float64{298304.13, 109209.60}},
	},
	24: {
		25: {[2]float64{0.820756, 0.231911}, [2]float64{0.735567, 0.209227}, [2]float64{110293.09, 4012.22}, [2]float64{301600.22, 126093.39}},
		50: {[2]float64{0.820750, 0.231935}, [2]float64{0.735569, 0.203523}, [2]float64{220441.26, 8060.00}, [2]float64{603357.87, 252187.26}},
	},
	32: {
		25: {[2]float64{2.444927, 0.591356}, [2]float64{2.195207, 0.526156}, [2]float64{107490.55, 5727.50}, [2]float64{504065.81, 132758.71}},
		50: {[2]float64{2.444983, 0.591355}, [2]float64{2.195328, 0.526184}, [2]float64{214994.13, 11359.00}, [2]float64{1008262.00, 265387.97}},
	},
}

// thesisRows averages the results per size and load.
func thesisRows(rs []ChangeResult, o ThesisOptions) []ThesisRow {
	var rows []ThesisRow
	for _, n := range o.Sizes {
		for _, l := range o.Loads {
			row := ThesisRow{Size: n, Load: l}
			var cnt [2][2]float64 // [mech][act/deact]
			for _, r := range rs {
				if r.Size != n || r.Load != l {
					continue
				}
				m := 0
				if r.Mechanism == "improved" {
					m = 1
				}
				if r.Change == "activation" {
					row.ActMs[m] += r.MsToValid
					row.ActDrops[m] += float64(r.Dropped)
					cnt[m][0]++
				} else {
					row.DeactMs[m] += r.MsToValid
					row.DeactDrops[m] += float64(r.Dropped)
					cnt[m][1]++
				}
			}
			for m := range 2 {
				if cnt[m][0] > 0 {
					row.ActMs[m] /= cnt[m][0]
					row.ActDrops[m] /= cnt[m][0]
				}
				if cnt[m][1] > 0 {
					row.DeactMs[m] /= cnt[m][1]
					row.DeactDrops[m] /= cnt[m][1]
				}
			}
			row.TimeRatioAct, row.TimeRatioDeact = ratio(row.ActMs), ratio(row.DeactMs)
			row.DropCutAct, row.DropCutDeact = cut(row.ActDrops), cut(row.DeactDrops)
			rows = append(rows, row)
		}
	}
	return rows
}

// ratio is basic / improved (0 when improved is 0).
func ratio(v [2]float64) float64 {
	if v[1] == 0 {
		return 0
	}
	return v[0] / v[1]
}

// cut is the fraction of basic's drops the improved mechanism avoids.
func cut(v [2]float64) float64 {
	if v[0] == 0 {
		return 0
	}
	return 1 - v[1]/v[0]
}

// ThesisTable formats the comparison with the thesis's ratios.
func ThesisTable(rep *ThesisReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| switches | load | valid tables, activation ms (basic / improved) | ratio | thesis | deactivation ms | ratio | thesis | dropped on activation (basic / improved) | cut | thesis | dropped on deactivation | cut | thesis |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		ref, ok := thesisRefs[r.Size][r.Load]
		th := func(f func(thesisRef) string) string {
			if !ok {
				return "—"
			}
			return f(ref)
		}
		fmt.Fprintf(&b, "| %d | %g %% | %.1f / %.1f | %.2f× | %s | %.1f / %.1f | %.2f× | %s | %.0f / %.0f | %s | %s | %.0f / %.0f | %s | %s |\n",
			r.Size, r.Load,
			r.ActMs[0], r.ActMs[1], r.TimeRatioAct, th(func(t thesisRef) string { return fmt.Sprintf("%.2f×", ratio(t.actS)) }),
			r.DeactMs[0], r.DeactMs[1], r.TimeRatioDeact, th(func(t thesisRef) string { return fmt.Sprintf("%.2f×", ratio(t.deactS)) }),
			r.ActDrops[0], r.ActDrops[1], pct(r.ActDrops), th(func(t thesisRef) string { return pct(t.actDrops) }),
			r.DeactDrops[0], r.DeactDrops[1], pct(r.DeactDrops), th(func(t thesisRef) string { return pct(t.deactDrops) }))
	}
	return b.String()
}

// pct is the change in drops from basic to improved, as the thesis writes
// it (−83 %).
func pct(v [2]float64) string {
	if v[0] == 0 {
		return "n/a (basic dropped none)"
	}
	return fmt.Sprintf("%+.0f %%", -100*cut(v))
}

func writeThesis(dir string, rep *ThesisReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "thesis.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	o := rep.Options
	fmt.Fprintf(&md, "# Thesis chapter 8 on the soft fabric\n\n")
	fmt.Fprintf(&md, "Irregular networks of %v switches (4 ports, one host per switch, seed %d), time scale %g, traffic at %v %% of saturation "+
		"(uniform destinations, 256-byte payloads; saturation measured per network as the packets/s per host received at %g %% of the link rate offered: %v). "+
		"Per size, mechanism and load, %d switch(es) other than the SM's are killed (deactivation) and restarted (activation). "+
		"Time to valid tables is ibsm's ms_to_connectivity (from the start of the assimilation); drops are data packets dropped from the change until 300 ms after the fabric is whole. "+
		"Run took %.0f s.\n\n", o.Sizes, o.Seed, max(o.TimeScale, 1), o.Loads, saturationLoad, rep.Saturation, o.Changes, rep.Seconds)
	md.WriteString(ThesisTable(rep))
	md.WriteString("\nThesis: time to valid tables 1.96–4.13× better on activation and 2.36–4.17× on deactivation (8–32 switches); packets dropped on activation −83 to −96 %, on deactivation −53 to −74 %.\n\n## Changes\n\n")
	md.WriteString("| switches | mechanism | load | change | switch | ms to valid | SMPs | dropped | sent | drops by cause |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&md, "| %d | %s | %g | %s | %s | %.1f | %d | %d | %d | %s |\n", r.Size, r.Mechanism, r.Load, r.Change, r.Switch, r.MsToValid, r.SMPs, r.Dropped, r.Sent, causes(r.Drops))
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(&md, "\n**Error:** %s\n", e)
	}
	return os.WriteFile(filepath.Join(dir, "thesis.md"), []byte(md.String()), 0o644)
}
