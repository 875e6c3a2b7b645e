package ibfabcli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"ibfab/bpf"
	"ibfab/harness"
	"ibfab/wire"
	"ibfab/wire/mad"
)

const (
	faultSynopsis = "fault N NODE[PORT] [--ingress|--egress] (--drop RATE | --corrupt RATE | --delay D [--rate RATE]) [--count K] [match flags]\n" +
		"       ibfab fault list N [--json]\n" +
		"       ibfab fault clear N [NODE[PORT]]"
	faultDesc = `
Injects faults into fabric N's links in the kernel (eBPF programs attached
with TCX to the veth ends): drops, corrupts (one bit flipped, so the
receiver's CRC check rejects the packet) or delays the frames NODE[PORT]
sends (--egress, the default) or receives (--ingress) that match every
match flag given, at RATE (5%, 0.5%, 3‰) and, with --count, at most K
times. Without [PORT], every cabled port of NODE. A delay keeps the link's
order (frames behind a delayed one wait) and needs the fq qdisc, which
ibfab sets up on the sending veth (kernel option CONFIG_NET_SCH_FQ).

Each sending port holds up to 16 rules; each counts the frames it matched
and those it acted on. Rules outlive ibfab (pinned under /sys/fs/bpf/ibfab/N)
until 'fault clear' or 'ibfab down'.

  fault list N                the rules and their counters
  fault clear N [NODE[PORT]]  remove the rules on both directions of the
                              port (of all ports of NODE; every rule of N)

Match flags: --ethertype data|link|0xNNNN, --vl V, --sl S, --dlid LID,
--slid LID, and for MADs (QP0 and QP1): --class 0x81|SubnDirected|...,
--method Get|GetResp|Set|0xNN, --attr NodeInfo|PortInfo|0xNNNN.`
)

func runFault(env *Env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "list":
			return runFaultList(env, args[1:])
		case "clear":
			return runFaultClear(env, args[1:])
		}
	}
	const cmd = "fault"
	fs := flagSet(cmd)
	spec := registerFaultFlags(fs)
	pos, help, err := parseInterspersed(env, fs, cmd, faultSynopsis, faultDesc, args)
	if help || err != nil {
		return err
	}
	usageErr := func(err error) error { return &UsageError{Cmd: cmd, Usage: faultSynopsis, Err: err} }
	if len(pos) != 2 {
		return usageErr(errors.New("want a fabric name and NODE[PORT]"))
	}
	node, port, err := parsePortArg(pos[1])
	if err != nil {
		return usageErr(err)
	}
	rule, ingress, err := spec.rule(fs)
	if err != nil {
		return usageErr(err)
	}
	faults, err := harness.AddFault(pos[0], node, port, ingress, rule)
	for _, f := range faults {
		fmt.Fprintf(env.Stdout, "fault %s -> %s slot %d: %s\n", f.From, f.To, f.Slot, f.Rule)
	}
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	return nil
}

// faultFlags are the flags of ibfab fault, as given.
type faultFlags struct {
	ingress, egress        *bool
	drop, corrupt, rate    *string
	delay                  *time.Duration
	count                  *uint64
	ethertype, class, attr *string
	method                 *string
	vl, sl                 *uint
	dlid, slid             *uint
}

func registerFaultFlags(fs *flag.FlagSet) *faultFlags {
	return &faultFlags{
		ingress:   fs.Bool("ingress", false, "the frames NODE[PORT] receives"),
		egress:    fs.Bool("egress", false, "the frames NODE[PORT] sends (the default)"),
		drop:      fs.String("drop", "", "drop matching frames at `RATE` (5%, 3‰)"),
		corrupt:   fs.String("corrupt", "", "flip a bit in matching frames at `RATE`"),
		delay:     fs.Duration("delay", 0, "delay matching frames by `D`"),
		rate:      fs.String("rate", "", "with --delay: delay only this `RATE` of the matches (default 100%)"),
		count:     fs.Uint64("count", 0, "act at most `K` times (default: no limit)"),
		ethertype: fs.String("ethertype", "", "match `data` (0x88b5) or link (0x88b6) frames, or a number"),
		vl:        fs.Uint("vl", 0, "match virtual lane `V` (LRH, or a flow-control packet's)"),
		sl:        fs.Uint("sl", 0, "match service level `S`"),
		dlid:      fs.Uint("dlid", 0, "match destination `LID`"),
		slid:      fs.Uint("slid", 0, "match source `LID`"),
		class:     fs.String("class", "", "match MAD management `CLASS` (0x81, SubnDirected, ...)"),
		method:    fs.String("method", "", "match MAD `METHOD` byte (Get, GetResp, Set, 0x81, ...)"),
		attr:      fs.String("attr", "", "match MAD attribute `ATTR` (PortInfo, 0x15, ...)"),
	}
}

// rule builds the rule the flags describe.
func (f *faultFlags) rule(fs *flag.FlagSet) (bpf.Rule, bool, error) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var r bpf.Rule
	if *f.ingress && *f.egress {
		return r, false, errors.New("--ingress and --egress exclude each other")
	}
	actions := 0
	for _, a := range []string{"drop", "corrupt", "delay"} {
		if set[a] {
			actions++
		}
	}
	if actions != 1 {
		return r, false, errors.New("want exactly one of --drop, --corrupt, --delay")
	}
	var err error
	switch {
	case set["drop"]:
		r.Action = bpf.Drop
		r.Rate, err = bpf.ParseRate(*f.drop)
	case set["corrupt"]:
		r.Action = bpf.Corrupt
		r.Rate, err = bpf.ParseRate(*f.corrupt)
	default:
		r.Action, r.Delay, r.Rate = bpf.Delay, *f.delay, bpf.RateOne
		if set["rate"] {
			r.Rate, err = bpf.ParseRate(*f.rate)
		}
	}
	if err != nil {
		return r, false, err
	}
	if set["rate"] && r.Action != bpf.Delay {
		return r, false, errors.New("--rate goes with --delay; --drop and --corrupt take the rate as their value")
	}
	if set["count"] {
		if *f.count == 0 {
			return r, false, errors.New("--count 0: want at least 1")
		}
		r.Limit = *f.count
	}
	m := &r.Match
	if set["ethertype"] {
		m.Fields |= bpf.FieldEtherType
		if m.EtherType, err = parseEtherType(*f.ethertype); err != nil {
			return r, false, err
		}
	}
	for _, u := range []struct {
		name  string
		v     uint
		max   uint
		field bpf.Field
		set   func(uint)
	}{
		{"vl", *f.vl, 15, bpf.FieldVL, func(v uint) { m.VL = uint8(v) }},
		{"sl", *f.sl, 15, bpf.FieldSL, func(v uint) { m.SL = uint8(v) }},
		{"dlid", *f.dlid, 0xffff, bpf.FieldDLID, func(v uint) { m.DLID = uint16(v) }},
		{"slid", *f.slid, 0xffff, bpf.FieldSLID, func(v uint) { m.SLID = uint16(v) }},
	} {
		if !set[u.name] {
			continue
		}
		if u.v > u.max {
			return r, false, fmt.Errorf("--%s %d: want 0-%d", u.name, u.v, u.max)
		}
		m.Fields |= u.field
		u.set(u.v)
	}
	if set["class"] {
		m.Fields |= bpf.FieldClass
		if m.Class, err = parseClass(*f.class); err != nil {
			return r, false, err
		}
	}
	if set["method"] {
		m.Fields |= bpf.FieldMethod
		if m.Method, err = parseMethod(*f.method); err != nil {
			return r, false, err
		}
	}
	if set["attr"] {
		m.Fields |= bpf.FieldAttr
		if m.Attr, err = parseAttr(*f.attr, m.Class, set["class"]); err != nil {
			return r, false, err
		}
	}
	return r, *f.ingress, r.Validate()
}

// parsePortArg parses NODE or NODE[PORT]; PORT 0 means every port.
func parsePortArg(s string) (string, int, error) {
	i := strings.IndexByte(s, '[')
	if i < 0 {
		if s == "" {
			return "", 0, errors.New("empty node name")
		}
		return s, 0, nil
	}
	if i == 0 || !strings.HasSuffix(s, "]") {
		return "", 0, fmt.Errorf("%q: want NODE or NODE[PORT]", s)
	}
	p, err := strconv.Atoi(s[i+1 : len(s)-1])
	if err != nil || p < 1 || p > 254 {
		return "", 0, fmt.Errorf("%q: port: want 1-254", s)
	}
	return s[:i], p, nil
}

func parseNumber(s string, bits int) (uint64, error) {
	return strconv.ParseUint(s, 0, bits)
}

func parseEtherType(s string) (uint16, error) {
	switch strings.ToLower(s) {
	case "data":
		return wire.EtherTypeData, nil
	case "link":
		return wire.EtherTypeLink, nil
	}
	v, err := parseNumber(s, 16)
	if err != nil {
		return 0, fmt.Errorf("--ethertype %q: want data, link or a number", s)
	}
	return uint16(v), nil
}

func parseClass(s string) (mad.MgmtClass, error) {
	if v, err := parseNumber(s, 8); err == nil {
		return mad.MgmtClass(v), nil
	}
	for v := range 256 {
		if c := mad.MgmtClass(v); strings.EqualFold(c.String(), s) {
			return c, nil
		}
	}
	return 0, fmt.Errorf("--class %q: want a number (0x81) or a class name (SubnDirected, SubnLID, PerfMgt, ...)", s)
}

func parseMethod(s string) (mad.Method, error) {
	if v, err := parseNumber(s, 8); err == nil {
		return mad.Method(v), nil
	}
	for v := range 256 {
		if m := mad.Method(v); strings.EqualFold(m.String(), s) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("--method %q: want a number (0x01) or a method name (Get, Set, GetResp, Trap, ...)", s)
}

// attrNames maps every named attribute, per table, lower-cased.
var attrNames = sync.OnceValue(func() map[mad.MgmtClass]map[string]mad.AttrID {
	out := map[mad.MgmtClass]map[string]mad.AttrID{}
	for _, c := range []mad.MgmtClass{mad.ClassSubnLID, mad.ClassPerfMgt} {
		out[c] = map[string]mad.AttrID{}
		for v := range 0x10000 {
			a := mad.AttrID(v)
			if n := a.Name(c); !strings.HasPrefix(n, "AttrID(") {
				out[c][strings.ToLower(n)] = a
			}
		}
	}
	return out
})

// parseAttr parses an attribute number or name; names are looked up in
// the class's table when the class is given (PMA and SM attributes share
// numbers), else in the SM's and then the PMA's.
func parseAttr(s string, c mad.MgmtClass, haveClass bool) (mad.AttrID, error) {
	if v, err := parseNumber(s, 16); err == nil {
		return mad.AttrID(v), nil
	}
	tables := []mad.MgmtClass{mad.ClassSubnLID, mad.ClassPerfMgt}
	if haveClass {
		tables = []mad.MgmtClass{mad.ClassSubnLID}
		if c == mad.ClassPerfMgt {
			tables = []mad.MgmtClass{mad.ClassPerfMgt}
		}
	}
	for _, t := range tables {
		if a, ok := attrNames()[t][strings.ToLower(s)]; ok {
			return a, nil
		}
	}
	return 0, fmt.Errorf("--attr %q: want a number (0x15) or an attribute name (NodeInfo, PortInfo, ...)", s)
}

const (
	faultListSynopsis  = "fault list N [--json]"
	faultClearSynopsis = "fault clear N [NODE[PORT]]"
)

func runFaultList(env *Env, args []string) error {
	const cmd = "fault list"
	fs := flagSet(cmd)
	asJSON := fs.Bool("json", false, "print JSON: [{from, to, slot, action, rule, counters: {matched, acted}}]")
	pos, help, err := parseInterspersed(env, fs, cmd, faultListSynopsis, "Lists fabric N's fault rules with their counters: frames matched and acted on.", args)
	if help || err != nil {
		return err
	}
	if len(pos) != 1 {
		return &UsageError{Cmd: cmd, Usage: faultListSynopsis, Err: errors.New("want a fabric name")}
	}
	faults, err := harness.ListFaults(pos[0])
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	harness.SortFaults(faults)
	if *asJSON {
		if faults == nil {
			faults = []harness.Fault{}
		}
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(faults)
	}
	if len(faults) == 0 {
		fmt.Fprintf(env.Stdout, "fabric %s: no faults\n", pos[0])
		return nil
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FROM\tTO\tSLOT\tMATCHED\tACTED\tRULE")
	for _, f := range faults {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%s\n", f.From, f.To, f.Slot, f.Counters.Matched, f.Counters.Acted, f.Rule)
	}
	return w.Flush()
}

func runFaultClear(env *Env, args []string) error {
	const cmd = "fault clear"
	fs := flagSet(cmd)
	pos, help, err := parseInterspersed(env, fs, cmd, faultClearSynopsis,
		"Removes fault rules of fabric N: those on both directions of NODE[PORT], of every port of NODE, or all.", args)
	if help || err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return &UsageError{Cmd: cmd, Usage: faultClearSynopsis, Err: errors.New("want a fabric name and optionally NODE[PORT]")}
	}
	node, port := "", 0
	if len(pos) == 2 {
		if node, port, err = parsePortArg(pos[1]); err != nil {
			return &UsageError{Cmd: cmd, Usage: faultClearSynopsis, Err: err}
		}
	}
	n, err := harness.ClearFaults(pos[0], node, port)
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	fmt.Fprintf(env.Stdout, "removed %d fault rules\n", n)
	return nil
}
