package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/testsupport"
	"ibfab/sm"
)

// TestQoSCommand: ibsm with a flow file admits it; `ibsm qos` adds,
// lists, refuses and deletes through the control socket, and says so in
// its exit status; every decision is a JSON line of the SM.
func TestQoSCommand(t *testing.T) {
	dir := t.TempDir()
	flows := filepath.Join(dir, "flows.json")
	require.NoError(t, os.WriteFile(flows, []byte(`{"flows":[{"id":"f1","src":"ca4","dst":"ca12","mbps":400,"latency_us":1000}]}`), 0o644))
	sock := filepath.Join(dir, "ibsm.sock")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb testsupport.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--port", "mem", "--qos-flows", flows, "--control", sock, "--json"}, &out, &errb)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), `"action":"admit","id":"f1"`) }, 10*time.Second, 10*time.Millisecond, errb.String())

	code, o, e := ibsm(t, "qos", "add", "--id", "f2", "--src", "ca7", "--dst", "ca13", "--mbps", "1000", "--latency-us", "500", "--control", sock)
	require.Equal(t, exitOK, code, e)
	assert.Contains(t, o, "qos admit f2: SL")

	code, o, _ = ibsm(t, "qos", "add", "--id", "big", "--src", "ca11", "--dst", "ca13", "--mbps", "7000", "--latency-us", "500", "--control", sock)
	assert.Equal(t, exitFailure, code, "a refused flow")
	assert.Contains(t, o, "qos reject big at ")

	code, o, e = ibsm(t, "qos", "list", "--control", sock, "--json")
	require.Equal(t, exitOK, code, e)
	var rep sm.QoSReply
	require.NoError(t, json.Unmarshal([]byte(o), &rep))
	require.Len(t, rep.Flows, 2)
	assert.Equal(t, "f1", rep.Flows[0].ID)
	assert.NotEmpty(t, rep.Flows[1].Hops)

	code, _, e = ibsm(t, "qos", "del", "f1", "--control", sock)
	require.Equal(t, exitOK, code, e)
	code, _, e = ibsm(t, "qos", "del", "f1", "--control", sock)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, e, "no such flow")
	assert.Contains(t, out.String(), `"action":"release","id":"f1"`)
}

func TestQoSUsage(t *testing.T) {
	for _, args := range [][]string{
		{"qos"},
		{"qos", "frob"},
		{"qos", "add", "--id", "x"},
		{"qos", "add", "--id", "x", "--src", "a", "--dst", "b", "--mbps", "1", "--latency-us", "1", "--scope", "far"},
		{"qos", "del"},
		{"qos", "list", "extra"},
	} {
		code, _, e := ibsm(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, e)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"flows":[{"id":"f1","src":"a","dst":"b","mbps":1,"latency_us":1,"colour":"red"}]}`), 0o644))
	for _, args := range [][]string{
		{"--port", "mem", "--qos-flows", bad},
		{"--port", "mem", "--qos-flows", filepath.Join(dir, "missing.json")},
		{"--port", "mem", "--qos", "--qos-model", "7"},
		{"--port", "mem", "--control", filepath.Join(dir, "s")},
	} {
		code, _, e := ibsm(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, e)
	}
	code, _, e := ibsm(t, "qos", "list", "--control", filepath.Join(dir, "nobody.sock"))
	assert.Equal(t, exitFailure, code)
	assert.NotEmpty(t, e)
}
