package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"ibfab/internal/ctl"
	"ibfab/sm"
	"ibfab/sm/arbtable"
	"ibfab/sm/qos"
)

// DefaultControl is the control socket of an ibsm with QoS or adaptive
// routing on.
const DefaultControl = "/run/ibsm/ibsm.sock"

// Control ops.
const (
	opQoSAdd  = "qos-add"
	opQoSDel  = "qos-del"
	opQoSList = "qos-list"
)

// qosOptions are the QoS flags of the SM.
type qosOptions struct {
	on      bool
	flows   string
	control string
	model   arbtable.Model
	share   float64
}

func addQoSFlags(fs *flag.FlagSet, q *qosOptions) {
	fs.BoolVar(&q.on, "qos", false, "manage QoS: admit flows into the VL arbitration tables (seed 002), SL n on VL n")
	fs.StringVar(&q.flows, "qos-flows", "", "JSON `file` of static flows admitted at start (implies --qos)")
	fs.StringVar(&q.control, "control", "", "control socket `path` for 'ibsm qos' and 'ibsm ar' (default "+DefaultControl+" with --qos or --ar-mode)")
	fs.TextVar(&q.model, "qos-model", qos.DefaultModel, "arbitration-table maintenance `model`, 1-4 (or M1-M4)")
	fs.Float64Var(&q.share, "qos-share", qos.DefaultShare, "`fraction` of each link promised to QoS flows; best effort keeps the rest")
}

// config turns the flags into the SM's QoS configuration; nil with QoS
// off.
func (q *qosOptions) config() (*sm.QoSConfig, error) {
	if q.flows != "" {
		q.on = true
	}
	if !q.on {
		return nil, nil // --control without --qos may serve 'ibsm ar': parse checks
	}
	c := &sm.QoSConfig{Params: qos.Params{Model: q.model, Share: q.share}}
	if q.flows != "" {
		fl, err := readFlows(q.flows)
		if err != nil {
			return nil, err
		}
		c.Flows = fl
	}
	return c, nil
}

// flowFile is the file of static flows.
type flowFile struct {
	Flows []qos.Request `json:"flows"`
}

// readFlows reads a flow file: {"flows": [{"id", "src", "dst", "mbps",
// "latency_us", "scope", "payload"}, …]}; unknown fields are errors.
func readFlows(path string) ([]qos.Request, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f flowFile
	if err := decodeStrict(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range f.Flows {
		if err := f.Flows[i].Normalize(); err != nil {
			return nil, fmt.Errorf("%s: flow %d: %w", path, i+1, err)
		}
	}
	return f.Flows, nil
}

// decodeStrict decodes the JSON in b into v; a field v does not have is
// an error, as a misspelt one would otherwise be silently dropped.
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// serveControl serves the QoS and adaptive routing ops on path for s
// until the returned function is called: JSON lines of {op, args}, as
// internal/ctl has them.
func serveControl(path string, s *sm.SM) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	srv, err := ctl.Listen(path, func(ctx context.Context, op string, args json.RawMessage) (any, error) {
		var r qos.Request
		var code sm.QoSOp
		switch op {
		case opQoSAdd:
			code = sm.QoSOpAdd
		case opQoSDel:
			code = sm.QoSOpDel
		case opQoSList:
			code = sm.QoSOpList
		case opARSet, opARShow:
			return serveAROp(ctx, s, op, args)
		default:
			return nil, fmt.Errorf("%w %q (qos-add, qos-del, qos-list, ar-set, ar-show)", ctl.ErrUnknownOp, op)
		}
		if code != sm.QoSOpList {
			if err := decodeStrict(args, &r); err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
		}
		return s.QoSCall(ctx, code, r)
	})
	if err != nil {
		return nil, err
	}
	return func() { srv.Close(); os.Remove(path) }, nil
}

// reportQoS prints one QoS event.
func reportQoS(w io.Writer, e sm.QoSEvent, asJSON bool) {
	if asJSON {
		printJSONLine(w, e)
		return
	}
	fmt.Fprintf(w, "qos %s %s", e.Action, e.ID)
	if f := e.Flow; f != nil && (e.Action == sm.QoSAdmit || e.Action == sm.QoSReroute) {
		fmt.Fprintf(w, ": SL %d, %d hops, bound %.1f µs", f.SL, len(f.Hops), f.BoundUs)
	}
	if e.Port != "" {
		fmt.Fprintf(w, " at %s", e.Port)
	}
	if e.Reason != "" {
		fmt.Fprintf(w, ": %s", e.Reason)
	}
	if e.SMPs > 0 {
		fmt.Fprintf(w, " (%d blocks, %d SMPs)", e.Blocks, e.SMPs)
	}
	fmt.Fprintln(w)
}

const qosSynopsis = `usage: ibsm qos add --id ID --src CA --dst CA --mbps N --latency-us N [--scope e2e|hop] [--payload N] [--control PATH] [--json]
       ibsm qos del ID [--control PATH] [--json]
       ibsm qos list [--control PATH] [--json]`

// runQoS is the client of a running ibsm's QoS manager.
func runQoS(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, qosSynopsis)
		return exitUsage
	}
	verb := args[0]
	c := newControlClient("qos", qosSynopsis, verb, stdout, stderr)
	fs := c.fs
	var r qos.Request
	if verb == "add" {
		fs.StringVar(&r.ID, "id", "", "flow `id`")
		fs.StringVar(&r.Src, "src", "", "source CA port: name, name:port, node GUID or LID")
		fs.StringVar(&r.Dst, "dst", "", "destination CA port")
		fs.Float64Var(&r.Mbps, "mbps", 0, "mean bandwidth, Mb/s on the wire")
		fs.Float64Var(&r.LatencyUs, "latency-us", 0, "latency bound, µs")
		fs.TextVar(&r.Scope, "scope", qos.EndToEnd, "what the latency bounds: e2e or hop")
		fs.IntVar(&r.Payload, "payload", qos.DefaultPayload, "UD payload `bytes` of the flow's packets")
	}
	pos, code, ok := c.parse(args[1:])
	if !ok {
		return code
	}
	var op string
	switch {
	case verb == "add" && len(pos) == 0:
		op = opQoSAdd
		if err := r.Normalize(); err != nil {
			return c.usage(err)
		}
	case verb == "del" && len(pos) == 1:
		op, r.ID = opQoSDel, pos[0]
	case verb == "list" && len(pos) == 0:
		op = opQoSList
	case verb == "add" || verb == "del" || verb == "list":
		return c.usage(fmt.Errorf("%s: unexpected arguments %q", verb, pos))
	default:
		return c.usage(fmt.Errorf("unknown verb %q", verb))
	}
	var rep sm.QoSReply
	if !c.call(ctx, op, r, &rep) {
		return exitFailure
	}
	c.print(rep, func(w io.Writer) {
		if rep.Event != nil {
			reportQoS(w, *rep.Event, false)
		} else {
			printFlows(w, rep)
		}
	})
	if rep.Event != nil && (rep.Event.Action == sm.QoSReject || rep.Event.Action == sm.QoSLost) {
		return exitFailure
	}
	return exitOK
}

// printFlows prints a list reply as a table.
func printFlows(w io.Writer, rep sm.QoSReply) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSRC\tDST\tMB/S\tLATENCY µS\tSCOPE\tSL\tHOPS\tBOUND µS\tLEVELS")
	for _, f := range rep.Flows {
		var lv []string
		for _, h := range f.Hops {
			lv = append(lv, fmt.Sprintf("%s:%d×%d", h.Port, h.Entries, h.Weight))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%.1f\t%s\t%d\t%d\t%.1f\t%s\n", f.ID, f.Src, f.Dst, f.Mbps, f.LatencyUs,
			f.Scope, f.SL, len(f.Hops), f.BoundUs, strings.Join(lv, " "))
	}
	for _, r := range rep.Waiting {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%.1f\t%s\t-\t-\t-\twaiting\n", r.ID, r.Src, r.Dst, r.Mbps, r.LatencyUs, r.Scope)
	}
	tw.Flush()
}

// parseInterspersed parses flags before and after positional arguments,
// as "ibsm qos del ID --control PATH" wants, and returns the positional
// ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
