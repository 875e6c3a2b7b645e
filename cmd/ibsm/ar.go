package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"ibfab/sm"
	"ibfab/wire/mad"
)

// Adaptive routing control ops.
const (
	opARSet  = "ar-set"
	opARShow = "ar-show"
)

// arOptions are the adaptive routing flags of the SM.
type arOptions struct {
	mode      mad.ARMode // with --ar-mode given
	threshold uint
	afcVL     int
	sl2vl     string
}

// afcVLDefault is --afc-vl's "the highest data VL the ports run".
const afcVLDefault = -1

func addARFlags(fs *flag.FlagSet, a *arOptions) {
	fs.TextVar(&a.mode, "ar-mode", mad.AROff, "manage adaptive routing (seed 003) through the vendor class 0x0A in `mode` off, adaptive, adaptive-th or afi; any mode sets SL s on VL s and equal-weight VL arbitration, and 'ibsm ar set' changes it at run time")
	fs.UintVar(&a.threshold, "ar-threshold", sm.DefaultARThreshold, "with --ar-mode, the downstream VL occupancy in `percent` (1-100) at which adaptive-th and afi adapt")
	fs.IntVar(&a.afcVL, "afc-vl", afcVLDefault, "with --ar-mode, the Adapted Flow Channel `VL` of afi mode (default: the highest data VL every cabled port runs)")
	fs.StringVar(&a.sl2vl, "sl2vl", "", "`identity`: SL s on VL s (mod the port's data VLs) and equal-weight VL arbitration on every port, as --vl-tables set (implied by --ar-mode)")
}

// config turns the flags into the SM's adaptive routing configuration
// (nil without --ar-mode) and applies --sl2vl; fs tells which flags were
// given, opVLs is the OperationalVLs code that bounds the ports' (0 for
// none: as their VLCaps allow).
func (a *arOptions) config(fs *flag.FlagSet, cfg *sm.Config, opVLs uint8) (*sm.ARConfig, error) {
	switch a.sl2vl {
	case "":
	case "identity":
		cfg.VLTables = sm.VLTablesSet
	default:
		return nil, fmt.Errorf("--sl2vl %q, want identity", a.sl2vl)
	}
	if !flagSet(fs, "ar-mode") {
		for _, f := range []string{"ar-threshold", "afc-vl"} {
			if flagSet(fs, f) {
				return nil, fmt.Errorf("--%s configures adaptive routing: say --ar-mode", f)
			}
		}
		return nil, nil
	}
	mode := a.mode
	if flagSet(fs, "vl-tables") && cfg.VLTables == sm.VLTablesKeep {
		return nil, errors.New("--vl-tables keep with --ar-mode: adaptive routing needs SL s on VL s and the VLs arbitrated")
	}
	if !mad.ValidThreshold(uint8(min(a.threshold, 255))) {
		return nil, fmt.Errorf("--ar-threshold %d, want 1-%d", a.threshold, mad.ARThresholdMax)
	}
	c := &sm.ARConfig{Mode: mode, Threshold: uint8(a.threshold), AFCVL: sm.AFCVLHighest}
	if a.afcVL == afcVLDefault {
		return c, nil // found once the SM knows what the ports run
	}
	bound := fmt.Sprintf(" (--op-vls %d)", opVLs)
	if opVLs == 0 {
		opVLs, bound = sm.MaxOpVLs, ""
	}
	if n := mad.NumDataVLs(opVLs); a.afcVL < 0 || a.afcVL >= n {
		return nil, fmt.Errorf("--afc-vl %d, the ports run VL0-VL%d at most%s", a.afcVL, n-1, bound)
	}
	c.AFCVL = uint8(a.afcVL)
	return c, nil
}

// serveAROp answers an adaptive routing control op.
func serveAROp(ctx context.Context, s *sm.SM, op string, args json.RawMessage) (any, error) {
	if op == opARShow {
		return s.ARCall(ctx, nil)
	}
	var set sm.ARSetting
	if err := decodeStrict(args, &set); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return s.ARCall(ctx, &set)
}

// reportAR prints one adaptive routing event.
func reportAR(w io.Writer, e sm.AREvent, asJSON bool) {
	if asJSON {
		printJSONLine(w, e)
		return
	}
	fmt.Fprintf(w, "ar %s: mode %s, threshold %d %%, AFC VL %d", e.Action, e.Mode, e.Threshold, e.AFCVL)
	switch e.Action {
	case sm.ARActionSet:
		fmt.Fprintf(w, ": %d of %d switches on, %d Sets, %d failures, %d SMPs", e.Enabled, e.Switches, e.Sets, e.Failures, e.SMPs)
	case sm.ARActionError:
		fmt.Fprintf(w, ": %s", e.Error)
	}
	if e.Reason != "" {
		fmt.Fprintf(w, ": %s", e.Reason)
	}
	fmt.Fprintln(w)
	for _, x := range e.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", x)
	}
}

// reportARResult prints a sweep's adaptive routing line.
func reportARResult(w io.Writer, r *sm.ARResult) {
	fmt.Fprintf(w, "  ar: mode %s, threshold %d %%, AFC VL %d: %d of %d switches on (%d read), %d Sets, %d groups, %d failures\n",
		r.Mode, r.Threshold, r.AFCVL, r.Enabled, r.Switches, r.Read, r.Sets, r.Groups, r.Failures)
	if r.Error != "" {
		fmt.Fprintf(w, "  ar: %s\n", r.Error)
	}
}

const arSynopsis = `usage: ibsm ar set --mode off|adaptive|adaptive-th|afi [--threshold PCT] [--afc-vl VL] [--control PATH] [--json]
       ibsm ar show [--control PATH] [--json]`

// runAR is the client of a running ibsm's adaptive routing manager.
func runAR(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, arSynopsis)
		return exitUsage
	}
	verb := args[0]
	c := newControlClient("ar", arSynopsis, verb, stdout, stderr)
	fs := c.fs
	var mode mad.ARMode
	var threshold uint
	var afcVL int
	if verb == "set" {
		fs.TextVar(&mode, "mode", mad.AROff, "adaptive routing `mode`: off, adaptive, adaptive-th or afi")
		fs.UintVar(&threshold, "threshold", 0, "threshold `percent`, 1-100 (default: as it is)")
		fs.IntVar(&afcVL, "afc-vl", afcVLDefault, "AFC `VL` (default: as it is)")
	}
	usage := c.usage
	pos, code, ok := c.parse(args[1:])
	if !ok {
		return code
	}
	var op string
	var set sm.ARSetting
	switch {
	case len(pos) > 0 && (verb == "set" || verb == "show"):
		return usage(fmt.Errorf("%s: unexpected arguments %q", verb, pos))
	case verb == "show":
		op = opARShow
	case verb == "set":
		op = opARSet
		if !flagSet(fs, "mode") {
			return usage(errors.New("set: say --mode"))
		}
		set.Mode = &mode
		if flagSet(fs, "threshold") {
			if !mad.ValidThreshold(uint8(min(threshold, 255))) {
				return usage(fmt.Errorf("--threshold %d, want 1-%d", threshold, mad.ARThresholdMax))
			}
			t := uint8(threshold)
			set.Threshold = &t
		}
		if flagSet(fs, "afc-vl") {
			if afcVL < 0 || afcVL > 14 {
				return usage(fmt.Errorf("--afc-vl %d, want a data VL, 0-14", afcVL))
			}
			v := uint8(afcVL)
			set.AFCVL = &v
		}
	default:
		return usage(fmt.Errorf("unknown verb %q", verb))
	}
	var rep sm.ARReply
	if !c.call(ctx, op, set, &rep) {
		return exitFailure
	}
	c.print(rep, func(w io.Writer) {
		if rep.Event != nil {
			reportAR(w, *rep.Event, false)
		} else {
			printARShow(w, rep)
		}
	})
	if rep.Event != nil && rep.Event.Action == sm.ARActionReject {
		return exitFailure
	}
	return exitOK
}

// printARShow prints a show reply.
func printARShow(w io.Writer, rep sm.ARReply) {
	state := "subnet not up"
	if rep.Installed {
		state = "subnet up"
	}
	fmt.Fprintf(w, "ar: mode %s, threshold %d %%, AFC VL %d (%s)\n", rep.Mode, rep.Threshold, rep.AFCVL, state)
	if r := rep.Last; r != nil {
		var b strings.Builder
		reportARResult(&b, r)
		fmt.Fprint(w, strings.Replace(b.String(), "  ar:", "  last:", 1))
	}
}
