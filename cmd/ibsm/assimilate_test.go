package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/sm"
	"ibfab/topologies"
)

// changing is the port of the "changing" scheme the tests register: the
// default fabric, which the test changes while ibsm runs.
var changing struct {
	mu   sync.Mutex
	port *memport.Port
}

func init() {
	sm.RegisterPort("changing", func(string) (madport.Port, error) {
		f, err := memfabric.NewFabric(topologies.Thesis8())
		if err != nil {
			return nil, err
		}
		p, err := memport.New(f, 0, 1)
		if err != nil {
			return nil, err
		}
		changing.mu.Lock()
		changing.port = p
		changing.mu.Unlock()
		return &memPort{Port: p, f: f}, nil
	})
}

// lines is ibsm's stdout but its SM state events: after the first line
// (the first sweep) it kills a switch (from ibsm's own goroutine, between
// its sweeps), after n it cancels.
type lines struct {
	b      bytes.Buffer
	n      int
	cancel context.CancelFunc
	kill   string
	err    error
}

// smEvent reports whether line is an SM state event, as JSON or text.
func smEvent(line []byte) bool {
	return bytes.HasPrefix(line, []byte(`{"event":"sm",`)) || bytes.HasPrefix(line, []byte("sm "))
}

func (w *lines) Write(p []byte) (int, error) {
	if smEvent(p) {
		return len(p), nil
	}
	w.b.Write(p)
	switch strings.Count(w.b.String(), "\n") {
	case 1:
		changing.mu.Lock()
		w.err = changing.port.PowerOff(w.kill)
		changing.mu.Unlock()
	case w.n:
		w.cancel()
	}
	return len(p), nil
}

// TestAssimilationJSON: a switch dies after bring-up; ibsm prints the
// assimilation as one JSON line with the sweep's fields and its own.
func TestAssimilationJSON(t *testing.T) {
	for _, args := range [][]string{
		{"--detect", "trap"},
		{"--detect", "sweep", "--sweep-factor", "4"},
		{"--detect", "both", "--discovery", "full", "--distribution", "full-deactivation", "--lid-activation"},
		{"--provisional", "--distribution", "cut-ports"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := &lines{n: 2, cancel: cancel, kill: "sw2"}
			var errs bytes.Buffer
			code := run(ctx, append([]string{"--port", "changing", "--json"}, args...), out, &errs)
			require.NoError(t, out.err)
			assert.Equal(t, exitOK, code, errs.String())
			ls := strings.Split(strings.TrimSpace(out.b.String()), "\n")
			require.Len(t, ls, 2)
			assert.True(t, strings.HasPrefix(ls[1], `{"event":"assimilation","subnet_up":true,"switches":7,"hcas":6,`), ls[1])
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(ls[1]), &m))
			for _, k := range []string{"trigger", "discovery", "distribution", "phases", "smps_total", "ms_total", "ms_to_connectivity"} {
				assert.Contains(t, m, k)
			}
			want := map[string]string{"--detect trap": "trap", "--detect sweep": "sweep"}[args[0]+" "+args[1]]
			if want != "" {
				assert.Equal(t, want, m["trigger"])
			}
			var names []string
			for _, p := range m["phases"].([]any) {
				names = append(names, p.(map[string]any)["name"].(string))
			}
			wantPhases := []string{"detection", "discovery", "routing", "distribution", "activation"}
			if args[0] == "--provisional" {
				wantPhases = append(wantPhases, "definitive-routing", "definitive-distribution")
			}
			assert.Equal(t, wantPhases, names)
		})
	}
}

func TestAssimilationText(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lines{n: 10, cancel: cancel, kill: "sw6"}
	var errs bytes.Buffer
	code := run(ctx, []string{"--port", "changing", "--detect", "trap"}, out, &errs)
	assert.Equal(t, exitOK, code, errs.String())
	s := out.b.String()
	assert.Contains(t, s, "assimilation (trap, partial discovery, cut-deps): subnet up: 7 switches, 6 CAs")
	assert.Contains(t, s, "to connectivity")
}

func TestAssimilationBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args, want string
		code       int
	}{
		{"--detect poll", `invalid value "poll" for flag -detect: sm: invalid configuration: detection "poll" unknown: want one of both, trap, sweep`, exitUsage},
		{"--discovery half", `discovery "half" unknown: want one of partial, full`, exitUsage},
		{"--distribution magic", `distribution "magic" unknown: want one of full-deactivation, cut-ports, cut-deps, none`, exitUsage},
		{"--sweep-factor -1", "sweep factor", exitFailure},
	} {
		code, _, errs := ibsm(t, append([]string{"--port", "fake", "--once"}, strings.Fields(tt.args)...)...)
		assert.Equal(t, tt.code, code, tt.args)
		assert.Contains(t, errs, tt.want)
	}
}
