package bpf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire"
	"ibfab/wire/mad"
)

func TestRuleEncoding(t *testing.T) {
	tests := []struct {
		name string
		rule Rule
		want faultRule
		str  string
	}{
		{"drop all", Rule{Action: Drop, Rate: RateOne},
			faultRule{Action: 1, Rate: RateOne}, "--drop 100%"},
		{"corrupt vl15 at 1%", Rule{Action: Corrupt, Rate: 10_000, Match: Match{Fields: FieldVL, VL: 15}},
			faultRule{Action: 2, Rate: 10_000, Fields: 1 << 1, Vl: 15}, "--corrupt 1% --vl 15"},
		{"delay DR NodeInfo Get", Rule{Action: Delay, Rate: RateOne, Delay: 2 * time.Millisecond, Limit: 3,
			Match: Match{Fields: FieldClass | FieldMethod | FieldAttr, Class: mad.ClassSubnDirected, Method: mad.MethodGet, Attr: mad.AttrNodeInfo}},
			faultRule{Action: 3, Rate: RateOne, DelayNs: 2e6, Limit: 3, Fields: 1<<5 | 1<<6 | 1<<7, MgmtClass: 0x81, Method: 1, AttrId: 0x11},
			"--delay 2ms --class 0x81 --method Get --attr NodeInfo --count 3"},
		{"every field", Rule{Action: Drop, Rate: 50_000, Match: Match{Fields: allFields, EtherType: wire.EtherTypeData,
			VL: 1, SL: 2, DLID: 0x1234, SLID: 0x5678, Class: mad.ClassPerfMgt, Method: mad.MethodGetResp, Attr: mad.AttrPortCounters}},
			faultRule{Action: 1, Rate: 50_000, Fields: 0xff, Ethertype: 0x88b5, Vl: 1, Sl: 2, Dlid: 0x1234, Slid: 0x5678,
				MgmtClass: 4, Method: 0x81, AttrId: 0x12},
			"--drop 5% --ethertype data --vl 1 --sl 2 --dlid 4660 --slid 22136 --class 0x04 --method GetResp --attr PortCounters"},
		{"numbers without names", Rule{Action: Drop, Rate: 1, Match: Match{Fields: FieldEtherType | FieldMethod | FieldAttr,
			EtherType: 0x1234, Method: 0x7f, Attr: 0xff00}},
			faultRule{Action: 1, Rate: 1, Fields: 1 | 1<<6 | 1<<7, Ethertype: 0x1234, Method: 0x7f, AttrId: 0xff00},
			"--drop 0.0001% --ethertype 0x1234 --method 0x7f --attr 0xff00"},
		{"link packets", Rule{Action: Drop, Rate: RateOne, Match: Match{Fields: FieldEtherType | FieldVL, EtherType: wire.EtherTypeLink, VL: 3}},
			faultRule{Action: 1, Rate: RateOne, Fields: 3, Ethertype: 0x88b6, Vl: 3}, "--drop 100% --ethertype link --vl 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.rule.encode()
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.rule, decodeRule(got))
			assert.Equal(t, tt.str, tt.rule.String())
		})
	}
}

func TestRuleValidate(t *testing.T) {
	ok := Rule{Action: Drop, Rate: RateOne}
	tests := []struct {
		name string
		edit func(*Rule)
		err  string
	}{
		{"ok", func(*Rule) {}, ""},
		{"no action", func(r *Rule) { r.Action = 0 }, "unknown action"},
		{"bad action", func(r *Rule) { r.Action = 9 }, "unknown action"},
		{"zero rate", func(r *Rule) { r.Rate = 0 }, "rate"},
		{"rate over 100%", func(r *Rule) { r.Rate = RateOne + 1 }, "rate"},
		{"drop with delay", func(r *Rule) { r.Delay = time.Second }, "no delay"},
		{"delay without", func(r *Rule) { r.Action = Delay }, "delay 0s"},
		{"delay too long", func(r *Rule) { r.Action, r.Delay = Delay, time.Minute }, "at most"},
		{"delay ok", func(r *Rule) { r.Action, r.Delay = Delay, time.Millisecond }, ""},
		{"vl 16", func(r *Rule) { r.Match = Match{Fields: FieldVL, VL: 16} }, "VL 16"},
		{"sl 16", func(r *Rule) { r.Match = Match{Fields: FieldSL, SL: 16} }, "SL 16"},
		{"unknown field", func(r *Rule) { r.Match.Fields = 1 << 9 }, "unknown match fields"},
		{"SL on link packets", func(r *Rule) {
			r.Match = Match{Fields: FieldEtherType | FieldSL, EtherType: wire.EtherTypeLink}
		}, "only in data packets"},
		{"VL on link packets", func(r *Rule) {
			r.Match = Match{Fields: FieldEtherType | FieldVL, EtherType: wire.EtherTypeLink, VL: 2}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.edit(&r)
			err := r.Validate()
			if tt.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
		})
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want uint32
		err  bool
	}{
		{"5%", 50_000, false}, {"100%", RateOne, false}, {"0.5%", 5_000, false}, {"0.0001%", 1, false},
		{"3‰", 3_000, false}, {"1000‰", RateOne, false}, {" 7 %", 70_000, false},
		{"5", 0, true}, {"%", 0, true}, {"0%", 0, true}, {"-1%", 0, true}, {"101%", 0, true},
		{"NaN%", 0, true}, {"Inf%", 0, true}, {"0.00001%", 0, true}, {"x%", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if tt.err {
			assert.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
		back, err := ParseRate(FormatRate(got))
		require.NoError(t, err)
		assert.Equal(t, got, back, "FormatRate(%d) parses back", got)
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"5%", "0.5%", "3‰", "100%", "1e2%", "-0%", "NaN%", "%", "‰‰"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ppm, err := ParseRate(s)
		if err != nil {
			return
		}
		if ppm == 0 || ppm > RateOne {
			t.Fatalf("ParseRate(%q) = %d, outside 1..%d", s, ppm, RateOne)
		}
		if back, err := ParseRate(FormatRate(ppm)); err != nil || back != ppm {
			t.Fatalf("FormatRate(%d) = %q parses as %d, %v", ppm, FormatRate(ppm), back, err)
		}
	})
}
