package qos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"

	"ibfab/internal/enum"
	"ibfab/sm"
	"ibfab/sm/qos"
	"ibfab/topologies"
)

// The QoS experiment (`ibfab run qos`): two switches joined by two links,
// three senders and the SM on one, two hosts on the other. Best effort
// from a3 and b2 offers twice the rate of b1's link, its bottleneck; two
// QoS flows from a1 and a2 to b1 ask for bandwidth and a latency bound.
// Each run of the experiment is one arrangement:
//
//   - QoSIbsm: ibsm admits the flows (f1 from its flow file at start, f2
//     through `ibsm qos add`), refuses f3 (too big for b1's link), and
//     the flows run on the SLs it gave; then the link they cross is cut
//     and ibsm must move or give up every flow that crossed it;
//   - QoSNone: ibsm without QoS, the same flows sent as best effort (SL
//     0), which is what they get from an SM that does not manage QoS;
//   - QoSOpenSM: OpenSM with QoS on (qos_* options: the same SLtoVL, a
//     high-priority table weighing each flow VL as ibsm would, the same
//     high limit), the flows on the SLs ibsm's mapping gives.
//
// Time is emulated at QoSTimeScale: rates, latencies and the flows'
// bounds are all in emulated time. Every link runs at 4x SDR unless
// QoSOptions.Rate names another rate, at which the time scale and the
// flows scale with it (qosAtRate).

//go:generate go tool stringer -type=QoSMode -linecomment

// QoSMode is one arrangement of the QoS experiment.
type QoSMode uint8

// QoS experiment arrangements.
const (
	QoSIbsm   QoSMode = iota // ibsm-qos
	QoSNone                  // no-qos
	QoSOpenSM                // opensm-qos
)

var qosModes = enum.New("QoS mode", QoSIbsm, QoSNone, QoSOpenSM)

// MarshalText implements encoding.TextMarshaler.
func (x QoSMode) MarshalText() ([]byte, error) { return qosModes.Marshal(x) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (x *QoSMode) UnmarshalText(b []byte) error { return qosModes.Unmarshal(x, b) }

// QoSTimeScale runs the QoS fabric 250 times slower than real time at
// 4x SDR: the hot-spot benchmark's scale, at which a two-core machine
// paces four senders at full rate into one port without a drop. At
// another rate it scales with the rate (runner.ScaleAt).
const QoSTimeScale = 250

// qosFlow is one QoS flow of the experiment: its request and the host
// that sends it.
type qosFlow struct {
	qos.Request
	id uint32 // the HCA's flow id
}

// The experiment's flows at 4x SDR. f1 comes from ibsm's flow file, f2
// through `ibsm qos add`; f3, from b2 whose own port is free, asks for
// more of b1's link than its high table has left and must be refused at
// sw2's port to b1.
var (
	qosF1 = qosFlow{Request: qos.Request{ID: "f1", Src: "a1", Dst: "b1", Mbps: 2000, LatencyUs: 1000}, id: 1}
	qosF2 = qosFlow{Request: qos.Request{ID: "f2", Src: "a2", Dst: "b1", Mbps: 1000, LatencyUs: 300}, id: 2}
	qosF3 = qos.Request{ID: "f3", Src: "b2", Dst: "b1", Mbps: 3000, LatencyUs: 1000}
)

// qosAt is the experiment at one link rate: its time scale and flows.
// Those tuned at 4x SDR scale by the rate's factor over it, the flows'
// rates up and their bounds down: ibsm's mapping, a function of request
// over link rate, then makes the same decisions, and the machine moves
// as many packets per real second as at 4x SDR.
type qosAt struct {
	rate   topologies.Rate
	bps    uint64 // every link's data rate
	scale  float64
	f1, f2 qosFlow
	f3     qos.Request
}

// qosAtRate is the experiment at rate r (the zero Rate: 4x SDR).
func qosAtRate(r topologies.Rate) qosAt {
	r = runner.OrTuned(r)
	k := runner.RateFactor(r)
	at := func(q qos.Request) qos.Request {
		q.Mbps, q.LatencyUs = q.Mbps*k, q.LatencyUs/k
		return q
	}
	return qosAt{rate: r, bps: runner.RateBps(r), scale: runner.ScaleAt(QoSTimeScale, r),
		f1: qosFlow{Request: at(qosF1.Request), id: qosF1.id}, f2: qosFlow{Request: at(qosF2.Request), id: qosF2.id}, f3: at(qosF3)}
}

// flows are the flows that run (f3 is refused).
func (q qosAt) flows() []qosFlow { return []qosFlow{q.f1, q.f2} }

// qosBottleneck is b1's link, where every flow and the best effort meet.
const qosBottleneck = "sw2[1]"

// qosBestEffort are the best-effort senders to b1, each at 100 % of its
// link: twice what the bottleneck carries.
var qosBestEffort = []string{"a3", "b2"}

// QoSOptions tune RunQoS.
type QoSOptions struct {
	Out    string    // report directory; "" writes none
	Fabric string    // fabric name prefix; default "qos"
	Log    io.Writer // progress lines
	// Modes to run, in order; default QoSIbsm then QoSNone.
	Modes []QoSMode
	// Measure is the real time over which the flows are measured;
	// Quick runs shorter.
	Measure time.Duration
	Quick   bool
	// Rate is every link's; the zero Rate is 4x SDR.
	Rate topologies.Rate
}

// QoSFlowResult is what b1 received of one flow in one window.
type QoSFlowResult struct {
	ID            string  `json:"id"`
	SL            uint8   `json:"sl"`
	RequestedMbps float64 `json:"requested_mbps"`
	BoundUs       float64 `json:"bound_us"`       // the request's latency bound
	PromisedUs    float64 `json:"promised_us"`    // the SM's own bound for the flow (ibsm)
	ReceivedMbps  float64 `json:"received_mbps"`  // emulated time
	SentMbps      float64 `json:"sent_mbps"`      // what the source put on the wire
	P50Us         float64 `json:"p50_us"`         // one-way latency, emulated
	P99Us         float64 `json:"p99_us"`         //
	MaxUs         float64 `json:"max_us"`         //
	Packets       uint64  `json:"packets"`        //
	Lost          uint64  `json:"lost"`           // sequence gaps at the receiver
	SourceDropped uint64  `json:"source_dropped"` // arrivals its source backlog could not hold
	BandwidthMet  bool    `json:"bandwidth_met"`  // received ≥ 98 % of requested
	LatencyMet    bool    `json:"latency_met"`    // p99 ≤ bound
}

// QoSSeriesPoint is one sample of the flows at b1 over time.
type QoSSeriesPoint struct {
	T    float64            `json:"t"`    // seconds since the flows started (real)
	Mbps map[string]float64 `json:"mbps"` // per flow, and "best-effort"
	P99  map[string]float64 `json:"p99_us"`
}

// QoSModeReport is one arrangement's run.
type QoSModeReport struct {
	Mode      QoSMode          `json:"mode"`
	Fabric    string           `json:"fabric"`
	TimeScale float64          `json:"time_scale"`
	Flows     []QoSFlowResult  `json:"flows"`
	BestMbps  float64          `json:"best_effort_mbps"` // best effort b1 received, emulated
	LinkMbps  float64          `json:"link_mbps"`        // the bottleneck's data rate
	Series    []QoSSeriesPoint `json:"series"`
	// ibsm's decisions, and what the link cut did (QoSIbsm).
	Events   []sm.QoSEvent       `json:"events,omitempty"`
	Rejected *sm.QoSEvent        `json:"rejected,omitempty"`
	Cut      string              `json:"cut,omitempty"`
	AfterCut []QoSFlowResult     `json:"after_cut,omitempty"`
	SM       []runner.SMResult   `json:"sm,omitempty"`
	Capture  *runner.CaptureInfo `json:"capture,omitempty"`
	Checks   []runner.Check      `json:"checks"`
	Error    string              `json:"error,omitempty"`
}

// QoSReport is the experiment.
type QoSReport struct {
	Started   time.Time       `json:"started"`
	LinkRate  topologies.Rate `json:"link_rate"` // every link's
	TimeScale float64         `json:"time_scale"`
	Measure   float64         `json:"measure_s"` // real seconds per window
	Modes     []QoSModeReport `json:"modes"`
	Checks    []runner.Check  `json:"checks"`
	Passed    bool            `json:"passed"`
	Files     []string        `json:"files,omitempty"`
}

// RunQoS runs the QoS experiment's arrangements and, with o.Out, writes
// the report there. The error is for a run that could not be carried
// out; failed checks are in the report.
func RunQoS(ctx context.Context, o QoSOptions) (*QoSReport, error) {
	if len(o.Modes) == 0 {
		o.Modes = []QoSMode{QoSIbsm, QoSNone}
	}
	if o.Measure <= 0 {
		o.Measure = 8 * time.Second
		if o.Quick {
			o.Measure = 3 * time.Second
		}
	}
	if o.Fabric == "" {
		o.Fabric = "qos"
	}
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return nil, err
		}
	}
	at := qosAtRate(o.Rate)
	rep := &QoSReport{Started: time.Now(), LinkRate: at.rate, TimeScale: at.scale, Measure: o.Measure.Seconds()}
	for _, m := range o.Modes {
		mr, err := runQoSMode(ctx, m, o, at)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		rep.Modes = append(rep.Modes, *mr)
	}
	rep.Checks = qosCompare(rep)
	rep.Passed = true
	for _, m := range rep.Modes {
		for _, c := range m.Checks {
			rep.Passed = rep.Passed && c.OK
		}
	}
	for _, c := range rep.Checks {
		rep.Passed = rep.Passed && c.OK
	}
	if o.Out != "" {
		if err := writeQoSReport(o.Out, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// qosCompare checks across arrangements: the flows that ibsm's QoS
// served must miss without it (the experiment shows something only if
// they do).
func qosCompare(rep *QoSReport) []runner.Check {
	var with, without *QoSModeReport
	for i := range rep.Modes {
		switch rep.Modes[i].Mode {
		case QoSIbsm:
			with = &rep.Modes[i]
		case QoSNone:
			without = &rep.Modes[i]
		}
	}
	if with == nil || without == nil {
		return nil
	}
	missed := 0
	for _, f := range without.Flows {
		if !f.BandwidthMet || !f.LatencyMet {
			missed++
		}
	}
	return []runner.Check{{Name: "without QoS the flows miss", OK: missed > 0,
		Detail: fmt.Sprintf("%d of %d flows missed their bandwidth or latency as best effort", missed, len(without.Flows))}}
}

// errNoFlows is a window in which b1 heard nothing of a flow.
var errNoFlows = errors.New("no flow packets at b1")

func qosFabricName(prefix string, m QoSMode) string {
	short := map[QoSMode]string{QoSIbsm: "q", QoSNone: "n", QoSOpenSM: "o"}[m]
	return prefix + "_" + short
}

func qosModeDir(out string, m QoSMode) string {
	if out == "" {
		return ""
	}
	return filepath.Join(out, m.String())
}

const (
	qosSynopsis = "run qos [--sm ibsm|opensm|all] [--quick] [--measure D] [--rate RATE] [--out DIR] [--name N] [--json]"
	qosDesc     = `The QoS experiment (issue 18): on ibfab topo dumbbell at time scale 250, best
effort saturates b1's link while two flows ask ibsm for bandwidth and a
latency bound (f1 from ibsm's flow file, f2 through 'ibsm qos add'); f3 does
not fit and must be refused at sw2[1]. Then the link the flows cross is cut
and ibsm must move or report every flow on it. The same flows run again as
best effort under ibsm without QoS (they must miss); --sm opensm runs ibsm's
QoS and then OpenSM's, configured with the same SLs and tables, side by side;
--sm all runs the three. --rate cables every link at RATE (default 4xSDR):
the time scale and the flows' rates grow by RATE's data rate over 4x SDR's
(25 for 4xHDR: time scale 6250), their latency bounds shrink by it. The
report (index.md with the modes side by side, report.json, per mode
throughput and latency plots, a capture of b1's link) goes to DIR. The exit
status is 1 when a check fails.`
)

// runQoSCmd is `ibfab run qos`.
func runQoSCmd(env *harness.Env, args []string) error {
	const cmd = "run qos"
	fs := flag.NewFlagSet("ibfab run qos", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	smKind := fs.String("sm", runner.SMIbsm.String(), "ibsm (ibsm with QoS, then without), opensm (ibsm's QoS, then OpenSM's), or all three")
	quick := fs.Bool("quick", false, "shorter windows (3 s real)")
	measure := fs.Duration("measure", 0, "real length of a measurement window (default 8 s, 3 s with --quick)")
	out := fs.String("out", "out/qos", "write the report to `DIR`")
	name := fs.String("name", "qos", "fabric name prefix")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of the checks")
	var rate topologies.Rate
	runner.RateVar(fs, &rate)
	usage := func(err error) error { return &harness.UsageError{Cmd: cmd, Usage: qosSynopsis, Err: err} }
	if help, err := harness.ParseFlags(env, fs, cmd, qosSynopsis, qosDesc, args, 0); help || err != nil {
		return err
	}
	if err := runner.CheckRate(rate); err != nil {
		return usage(err)
	}
	o := QoSOptions{Out: *out, Fabric: *name, Quick: *quick, Measure: *measure, Rate: rate}
	switch *smKind {
	case runner.SMIbsm.String():
		o.Modes = []QoSMode{QoSIbsm, QoSNone}
	case runner.SMOpenSM.String():
		o.Modes = []QoSMode{QoSIbsm, QoSOpenSM} // side by side
	case "all":
		o.Modes = []QoSMode{QoSIbsm, QoSNone, QoSOpenSM}
	default:
		return usage(fmt.Errorf("--sm %q: want ibsm, opensm or all", *smKind))
	}
	if *measure < 0 {
		return usage(errors.New("--measure must be positive"))
	}
	if !runner.FabricNameRE.MatchString(*name) {
		return usage(fmt.Errorf("--name %q: want 1-20 of [a-z0-9_]", *name))
	}
	start := time.Now()
	rep, err := runner.RunAndPrint(env, cmd, *asJSON, func(ctx context.Context, log io.Writer) (*QoSReport, error) {
		o.Log = log
		return RunQoS(ctx, o)
	}, func(rep *QoSReport) {
		verdict := "PASS"
		if !rep.Passed {
			verdict = "FAIL"
		}
		fmt.Fprintf(env.Stdout, "%s qos (%.1f s), report %s\n", verdict, time.Since(start).Seconds(), filepath.Join(*out, "index.md"))
		fmt.Fprintf(env.Stdout, "  every link %s, time scale %g\n", rep.LinkRate, rep.TimeScale)
		for _, m := range rep.Modes {
			for _, f := range m.Flows {
				fmt.Fprintf(env.Stdout, "  %-10s %s SL %d: %7.1f of %5.0f Mb/s, p99 %7.1f µs (bound %4.0f)\n",
					m.Mode, f.ID, f.SL, f.ReceivedMbps, f.RequestedMbps, f.P99Us, f.BoundUs)
			}
			for _, c := range m.Checks {
				fmt.Fprintf(env.Stdout, "  %-4s %-10s %-36s %s\n", runner.Mark(c), m.Mode, c.Name, c.Detail)
			}
		}
		for _, c := range rep.Checks {
			fmt.Fprintf(env.Stdout, "  %-4s %-10s %-36s %s\n", runner.Mark(c), "all", c.Name, c.Detail)
		}
	})
	if err != nil {
		return err
	}
	if !rep.Passed {
		return &harness.CommandError{Cmd: cmd, Err: errors.New("a check failed")}
	}
	return nil
}

// Experiment is `ibfab run qos`, for the command's table.
var Experiment = runner.Experiment{Name: "qos", Synopsis: qosSynopsis, Run: runQoSCmd}
