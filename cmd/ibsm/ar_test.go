package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/testsupport"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TestARFlagErrors: a bad adaptive routing flag is a usage error that
// names it.
func TestARFlagErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--ar-mode", "fast"}, `adaptive routing mode "fast" unknown`},
		{[]string{"--ar-mode", "afi", "--ar-threshold", "0"}, "--ar-threshold 0, want 1-100"},
		{[]string{"--ar-mode", "afi", "--ar-threshold", "101"}, "--ar-threshold 101, want 1-100"},
		{[]string{"--ar-mode", "afi", "--op-vls", "3", "--afc-vl", "4"}, "--afc-vl 4, the ports run VL0-VL3 at most (--op-vls 3)"},
		{[]string{"--ar-mode", "afi", "--op-vls", "2", "--afc-vl", "2"}, "--afc-vl 2, the ports run VL0-VL1 at most (--op-vls 2)"},
		{[]string{"--ar-mode", "afi", "--afc-vl", "15"}, "--afc-vl 15, the ports run VL0-VL14 at most"},
		{[]string{"--ar-threshold", "50"}, "--ar-threshold configures adaptive routing: say --ar-mode"},
		{[]string{"--afc-vl", "1"}, "--afc-vl configures adaptive routing: say --ar-mode"},
		{[]string{"--sl2vl", "spread"}, `--sl2vl "spread", want identity`},
		{[]string{"--ar-mode", "adaptive", "--vl-tables", "keep"}, "--vl-tables keep with --ar-mode"},
		{[]string{"--control", filepath.Join(dir, "s")}, "--control serves 'ibsm qos' and 'ibsm ar': say --qos or --ar-mode"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errs := ibsm(t, append([]string{"--port", "mem", "--once"}, tt.args...)...)
			assert.Equal(t, exitUsage, code, errs)
			assert.Contains(t, errs, tt.want)
		})
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"ar"}, "usage: ibsm ar set"},
		{[]string{"ar", "set"}, "set: say --mode"},
		{[]string{"ar", "set", "--mode", "sideways"}, `adaptive routing mode "sideways" unknown`},
		{[]string{"ar", "set", "--mode", "afi", "--threshold", "0"}, "--threshold 0, want 1-100"},
		{[]string{"ar", "set", "--mode", "afi", "--afc-vl", "15"}, "--afc-vl 15, want a data VL"},
		{[]string{"ar", "show", "extra"}, `show: unexpected arguments ["extra"]`},
		{[]string{"ar", "flip"}, `unknown verb "flip"`},
	} {
		code, _, errs := ibsm(t, tt.args...)
		assert.Equal(t, exitUsage, code, "%v: %s", tt.args, errs)
		assert.Contains(t, errs, tt.want, tt.args)
	}
}

// TestAROnce: on a fat tree ibsm --ar-mode programs every switch and says
// so in the sweep's JSON; the default AFC VL is the highest data VL the
// ports run: VL7, as memfabric's ports support VL0-VL7 and no --op-vls
// bounds them.
func TestAROnce(t *testing.T) {
	file := writeTopo(t, mustKAry(t))
	code, out, errs := ibsm(t, "--port", "mem:"+file, "--routing", "ftree", "--once", "--json", "--ar-mode", "afi", "--ar-threshold", "60")
	require.Equal(t, exitOK, code, errs)
	var res sm.Result
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &res), out)
	require.NotNil(t, res.AR, out)
	assert.Equal(t, sm.ARResult{Mode: mad.ARAFI, Threshold: 60, AFCVL: 7, Switches: 12, Enabled: 12, Read: 12,
		Sets: res.AR.Sets, Groups: 1}, *res.AR)
	assert.NotZero(t, res.SMPsByAttr["Set ARLIDTable"])

	code, out, errs = ibsm(t, "--port", "mem:"+file, "--routing", "ftree", "--once", "--ar-mode", "adaptive")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "ar: mode adaptive, threshold 75 %, AFC VL 7: 12 of 12 switches on")

	code, out, errs = ibsm(t, "--port", "mem:"+file, "--routing", "ftree", "--once", "--ar-mode", "afi", "--op-vls", "3")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "ar: mode afi, threshold 75 %, AFC VL 3: 12 of 12 switches on", "--op-vls bounds the default")

	code, out, errs = ibsm(t, "--port", "mem", "--once", "--ar-mode", "adaptive-th")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "adaptive routing left off: ")
	assert.Contains(t, out, "ar error: mode adaptive-th", "the event")
}

func mustKAry(t *testing.T) *topologies.Topology {
	t.Helper()
	topo, err := topologies.KAryNTree(2, 3)
	require.NoError(t, err)
	return topo
}

// TestARCommand: `ibsm ar set` changes the mode of a running ibsm, which
// reprograms the switches and prints the event; `ibsm ar show` reads it
// back; a setting the SM refuses fails.
func TestARCommand(t *testing.T) {
	file := writeTopo(t, mustKAry(t))
	sock := filepath.Join(t.TempDir(), "ibsm.sock")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb testsupport.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--port", "mem:" + file, "--routing", "ftree", "--ar-mode", "off", "--control", sock, "--json"}, &out, &errb)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), `"ar":{"mode":"off"`) }, 10*time.Second, 10*time.Millisecond, errb.String())

	code, o, e := ibsm(t, "ar", "set", "--mode", "afi", "--threshold", "60", "--control", sock)
	require.Equal(t, exitOK, code, e)
	assert.Contains(t, o, "ar set: mode afi, threshold 60 %, AFC VL 7: 12 of 12 switches on, 12 Sets, 0 failures, 12 SMPs")
	assert.Contains(t, out.String(), `{"event":"ar","action":"set","mode":"afi","threshold":60,"afc_vl":7,"switches":12,"enabled":12`)

	code, o, e = ibsm(t, "ar", "show", "--control", sock, "--json")
	require.Equal(t, exitOK, code, e)
	var rep sm.ARReply
	require.NoError(t, json.Unmarshal([]byte(o), &rep))
	assert.Equal(t, mad.ARAFI, rep.Mode)
	assert.EqualValues(t, 60, rep.Threshold)
	assert.True(t, rep.Installed)
	require.NotNil(t, rep.Last)
	assert.Equal(t, 12, rep.Last.Enabled)
	code, o, e = ibsm(t, "ar", "show", "--control", sock)
	require.Equal(t, exitOK, code, e)
	assert.Contains(t, o, "ar: mode afi, threshold 60 %, AFC VL 7 (subnet up)")

	code, _, e = ibsm(t, "ar", "set", "--mode", "afi", "--afc-vl", "9", "--control", sock)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, e, "AFC VL 9, the ports run VL0-VL7", "the subnet's VLs, not the bound's VL0-VL14")
	code, o, e = ibsm(t, "ar", "set", "--mode", "adaptive", "--control", sock)
	require.Equal(t, exitOK, code, e)
	assert.Contains(t, o, "ar set: mode adaptive, threshold 60 %, AFC VL 7")
}
