package ibfabcli

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/bpf"
	"ibfab/internal/cli"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// faultRule parses the flags of ibfab fault into a rule.
func faultRule(args []string) (bpf.Rule, bool, error) {
	fs := flagSet("fault")
	spec := registerFaultFlags(fs)
	if err := fs.Parse(args); err != nil {
		return bpf.Rule{}, false, err
	}
	return spec.rule(fs)
}

func TestFaultFlags(t *testing.T) {
	tests := []struct {
		args    string
		want    bpf.Rule
		ingress bool
		err     string
	}{
		{args: "--drop 5%", want: bpf.Rule{Action: bpf.Drop, Rate: 50_000}},
		{args: "--corrupt 3‰ --ingress", want: bpf.Rule{Action: bpf.Corrupt, Rate: 3_000}, ingress: true},
		{args: "--delay 2ms --count 4 --egress", want: bpf.Rule{Action: bpf.Delay, Rate: bpf.RateOne, Delay: 2 * time.Millisecond, Limit: 4}},
		{args: "--delay 1s --rate 10%", want: bpf.Rule{Action: bpf.Delay, Rate: 100_000, Delay: time.Second}},
		{args: "--drop 100% --class 0x81 --attr NodeInfo", want: bpf.Rule{Action: bpf.Drop, Rate: bpf.RateOne,
			Match: bpf.Match{Fields: bpf.FieldClass | bpf.FieldAttr, Class: mad.ClassSubnDirected, Attr: mad.AttrNodeInfo}}},
		{args: "--drop 100% --class subndirected --method getresp --attr 0x15", want: bpf.Rule{Action: bpf.Drop, Rate: bpf.RateOne,
			Match: bpf.Match{Fields: bpf.FieldClass | bpf.FieldMethod | bpf.FieldAttr, Class: mad.ClassSubnDirected,
				Method: mad.MethodGetResp, Attr: mad.AttrPortInfo}}},
		{args: "--drop 1% --class PerfMgt --attr PortCounters", want: bpf.Rule{Action: bpf.Drop, Rate: 10_000,
			Match: bpf.Match{Fields: bpf.FieldClass | bpf.FieldAttr, Class: mad.ClassPerfMgt, Attr: mad.AttrPortCounters}}},
		{args: "--drop 1% --attr PortCounters", want: bpf.Rule{Action: bpf.Drop, Rate: 10_000,
			Match: bpf.Match{Fields: bpf.FieldAttr, Attr: mad.AttrPortCounters}}},
		{args: "--drop 1% --ethertype link --vl 0", want: bpf.Rule{Action: bpf.Drop, Rate: 10_000,
			Match: bpf.Match{Fields: bpf.FieldEtherType | bpf.FieldVL, EtherType: wire.EtherTypeLink}}},
		{args: "--drop 1% --ethertype data --sl 3 --dlid 7 --slid 0xc", want: bpf.Rule{Action: bpf.Drop, Rate: 10_000,
			Match: bpf.Match{Fields: bpf.FieldEtherType | bpf.FieldSL | bpf.FieldDLID | bpf.FieldSLID,
				EtherType: wire.EtherTypeData, SL: 3, DLID: 7, SLID: 12}}},
		{args: "", err: "exactly one"},
		{args: "--drop 5% --corrupt 5%", err: "exactly one"},
		{args: "--drop 5", err: "percentage"},
		{args: "--drop 5% --rate 5%", err: "--rate goes with --delay"},
		{args: "--delay 0s", err: "delay 0s"},
		{args: "--delay 1h", err: "at most"},
		{args: "--drop 5% --ingress --egress", err: "exclude"},
		{args: "--drop 5% --count 0", err: "--count 0"},
		{args: "--drop 5% --vl 16", err: "--vl 16"},
		{args: "--drop 5% --dlid 65536", err: "--dlid 65536"},
		{args: "--drop 5% --ethertype ip", err: "--ethertype"},
		{args: "--drop 5% --class nope", err: "--class"},
		{args: "--drop 5% --method 0x100", err: "--method"},
		{args: "--drop 5% --attr Bogus", err: "--attr"},
		{args: "--drop 5% --class 0x04 --attr NodeInfo", err: "--attr"},
		{args: "--drop 5% --ethertype link --sl 1", err: "only in data packets"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			r, ingress, err := faultRule(strings.Fields(tt.args))
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, r)
			assert.Equal(t, tt.ingress, ingress)
			// The rule's own spelling parses back to it.
			back, _, err := faultRule(strings.Fields(r.String()))
			require.NoError(t, err, r.String())
			assert.Equal(t, r, back, r.String())
		})
	}
}

func TestParsePortArg(t *testing.T) {
	tests := []struct {
		in   string
		node string
		port int
		err  bool
	}{
		{"sw1", "sw1", 0, false}, {"sw1[3]", "sw1", 3, false}, {"H-1 x[12]", "H-1 x", 12, false},
		{"", "", 0, true}, {"[1]", "", 0, true}, {"sw1[", "", 0, true}, {"sw1[0]", "", 0, true},
		{"sw1[x]", "", 0, true}, {"sw1[255]", "", 0, true}, {"sw1[1]x", "", 0, true},
	}
	for _, tt := range tests {
		node, port, err := parsePortArg(tt.in)
		if tt.err {
			assert.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.node, node, tt.in)
		assert.Equal(t, tt.port, port, tt.in)
	}
}

func TestFaultUsage(t *testing.T) {
	for _, args := range [][]string{
		{"fault"}, {"fault", "f"}, {"fault", "f", "sw1", "extra", "--drop", "5%"}, {"fault", "f", "sw1[x]", "--drop", "5%"},
		{"fault", "f", "sw1", "--drop", "5"}, {"fault", "list"}, {"fault", "clear"}, {"fault", "clear", "f", "a", "b"},
		{"link", "f", "sw1"}, {"link", "f", "sw1[1]", "sideways"}, {"link", "f", "sw1[1]", "flap", "--period", "0s"},
		{"restart", "f"},
	} {
		var out, errb strings.Builder
		code := Main(args, &out, &errb)
		assert.Equal(t, cli.ExitUsage, code, "%q: %s", args, errb.String())
		assert.Contains(t, errb.String(), "usage: ibfab", "%q", args)
	}
	var out, errb strings.Builder
	require.Equal(t, cli.ExitOK, Main([]string{"fault", "-h"}, &out, &errb))
	assert.Contains(t, out.String(), "--ingress")
	code := Main([]string{"fault", "nosuchfabric", "sw1", "--drop", "5%"}, &out, &errb)
	assert.Equal(t, cli.ExitFailure, code)
	assert.Contains(t, errb.String(), "is not up")
}

// FuzzFaultFlags: no argument list panics the fault parser, and every rule
// it accepts is valid and spells itself back.
func FuzzFaultFlags(f *testing.F) {
	for _, s := range []string{
		"--drop 5%", "--corrupt 1% --vl 15", "--delay 2ms --count 3 --class 0x81 --method Get --attr PortInfo",
		"--drop 100% --ethertype link", "--drop 0.5% --attr PortCounters", "--delay 1s --rate 3‰ --sl 2 --dlid 1 --slid 2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, _, err := faultRule(strings.Fields(s))
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("%q: accepted an invalid rule: %v", s, err)
		}
		back, _, err := faultRule(strings.Fields(r.String()))
		if err != nil || back != r {
			t.Fatalf("%q: %q parses back as %+v, %v; want %+v", s, r.String(), back, err, r)
		}
	})
}
