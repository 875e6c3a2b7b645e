package sm_test

import (
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/sm/routing"
)

// mode is what every mode type is: a name both ways.
type mode interface {
	fmt.Stringer
	encoding.TextMarshaler
}

// TestModeNames: every value of every mode has its name, reads back from
// it through UnmarshalText, and an unknown name is an ErrConfig that
// lists the valid ones.
func TestModeNames(t *testing.T) {
	tests := []struct {
		values  []mode
		names   []string
		parse   func(string) (mode, error)
		badName string // in the error for an unknown name
	}{
		{[]mode{sm.DetectBoth, sm.DetectTrap, sm.DetectSweep}, []string{"both", "trap", "sweep"},
			parse[sm.Detect], `detection "x" unknown: want one of both, trap, sweep`},
		{[]mode{sm.DiscoveryPartial, sm.DiscoveryFull}, []string{"partial", "full"},
			parse[sm.Discovery], `discovery "x" unknown: want one of partial, full`},
		{[]mode{sm.DistFullDeactivation, sm.DistCutPorts, sm.DistCutDeps, sm.DistNone},
			[]string{"full-deactivation", "cut-ports", "cut-deps", "none"},
			parse[sm.Distribution], `distribution "x" unknown: want one of full-deactivation, cut-ports, cut-deps, none`},
		{[]mode{sm.TriggerTrap, sm.TriggerSweep}, []string{"trap", "sweep"},
			parse[sm.Trigger], `trigger "x" unknown: want one of trap, sweep`},
		{[]mode{sm.VLTablesSet, sm.VLTablesKeep}, []string{"set", "keep"},
			parse[sm.VLTables], `VL tables "x" unknown: want one of set, keep`},
		{[]mode{routing.ParentLast, routing.ParentFirst, routing.ParentRandom}, []string{"last", "first", "random"},
			parse[routing.Parent], `PIRa parent policy "x" unknown: want one of last, first, random`},
		{[]mode{routing.TieKeepOld, routing.TieRandom}, []string{"keep-old", "random"},
			parse[routing.Ties], `FERa tie-break "x" unknown: want one of keep-old, random`},
	}
	for _, tt := range tests {
		t.Run(tt.names[0], func(t *testing.T) {
			for i, v := range tt.values {
				assert.Equal(t, tt.names[i], v.String())
				text, err := v.MarshalText()
				require.NoError(t, err)
				assert.Equal(t, tt.names[i], string(text))
				back, err := tt.parse(tt.names[i])
				require.NoError(t, err)
				assert.Equal(t, v, back)
			}
			_, err := tt.parse("x")
			assert.ErrorIs(t, err, sm.ErrConfig)
			assert.ErrorContains(t, err, tt.badName)
		})
	}
}

// parse reads a mode of type M from its name.
func parse[M mode, P interface {
	*M
	encoding.TextUnmarshaler
}](name string) (mode, error) {
	var m M
	err := P(&m).UnmarshalText([]byte(name))
	return m, err
}

// TestModeOutOfRange: a value with no name prints as a number and does
// not marshal.
func TestModeOutOfRange(t *testing.T) {
	d := sm.DistNone + 1
	assert.Equal(t, "Distribution(5)", d.String())
	_, err := d.MarshalText()
	assert.ErrorIs(t, err, sm.ErrConfig)
}

// TestModesJSON: a Result names its modes in JSON, and leaves out those
// a sweep does not have.
func TestModesJSON(t *testing.T) {
	a := sm.Result{Event: "assimilation", Trigger: sm.TriggerTrap, Discovery: sm.DiscoveryPartial, Distribution: sm.DistCutDeps}
	b, err := json.Marshal(a)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"trigger":"trap","discovery":"partial","distribution":"cut-deps"`)
	var back sm.Result
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, a.Trigger, back.Trigger)
	assert.Equal(t, a.Discovery, back.Discovery)
	assert.Equal(t, a.Distribution, back.Distribution)

	b, err = json.Marshal(sm.Result{Event: "sweep"})
	require.NoError(t, err)
	for _, k := range []string{"trigger", "discovery", "distribution"} {
		assert.NotContains(t, string(b), `"`+k+`"`)
	}
}

// TestModeFlags: flag.TextVar reads a mode by name, shows its default by
// name, and refuses an unknown one naming the valid ones.
func TestModeFlags(t *testing.T) {
	var cfg sm.Config
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.TextVar(&cfg.Detect, "detect", sm.DetectBoth, "")
	fs.TextVar(&cfg.Distribution, "distribution", sm.DistCutDeps, "")
	require.NoError(t, fs.Parse([]string{"--detect", "trap"}))
	assert.Equal(t, sm.DetectTrap, cfg.Detect)
	assert.Equal(t, sm.DistCutDeps, cfg.Distribution)
	assert.Equal(t, "cut-deps", fs.Lookup("distribution").DefValue)

	err := fs.Parse([]string{"--distribution", "magic"})
	assert.ErrorContains(t, err, `distribution "magic" unknown: want one of full-deactivation, cut-ports, cut-deps, none`)
}

// TestSMActionJSON: an SMEvent's action is a typed enum whose JSON is
// the name it always had.
func TestSMActionJSON(t *testing.T) {
	names := map[sm.SMAction]string{
		sm.SMActionElection: "election", sm.SMActionHandoverSent: "handover-sent", sm.SMActionHandover: "handover",
		sm.SMActionAcknowledgeSent: "acknowledge-sent", sm.SMActionAcknowledge: "acknowledge",
		sm.SMActionDiscover: "discover", sm.SMActionDisable: "disable", sm.SMActionStandby: "standby",
		sm.SMActionPollingTimeout: "polling-timeout", sm.SMActionTrap144: "trap144", sm.SMActionRefused: "refused",
		sm.SMActionIgnored: "ignored",
	}
	for a, name := range names {
		b, err := json.Marshal(sm.SMEvent{Event: "sm", Action: a, State: "Master"})
		require.NoError(t, err)
		assert.Equal(t, `{"event":"sm","action":"`+name+`","state":"Master"}`, string(b))
		var back sm.SMEvent
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, a, back.Action)
	}
	var e sm.SMEvent
	assert.ErrorIs(t, json.Unmarshal([]byte(`{"action":"coup"}`), &e), sm.ErrConfig)
}
