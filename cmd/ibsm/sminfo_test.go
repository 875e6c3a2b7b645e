package main

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
)

// TestSMInfoFlags: the SM_Key defaults to OpenSM's, 1; the polling flags
// take OpenSM's defaults, and --polling-retries 0 means none.
func TestSMInfoFlags(t *testing.T) {
	tests := []struct {
		args     []string
		key      uint64
		prio     uint8
		interval time.Duration
		retries  int
	}{
		{nil, 1, 0, 10 * time.Second, 4},
		{[]string{"--sm-key", "0x5ec7", "--priority", "15"}, 0x5ec7, 15, 10 * time.Second, 4},
		{[]string{"--sm-key", "0", "--polling-interval", "1s", "--polling-retries", "2"}, 0, 0, time.Second, 2},
		{[]string{"--polling-retries", "0"}, 1, 0, 10 * time.Second, -1},
	}
	for _, tt := range tests {
		o, err := parse(append([]string{"--port", "fake"}, tt.args...), io.Discard)
		require.NoError(t, err, tt.args)
		assert.Equal(t, tt.key, o.cfg.SMKey, tt.args)
		assert.Equal(t, tt.prio, o.cfg.Priority, tt.args)
		assert.Equal(t, tt.interval, o.cfg.PollInterval, tt.args)
		assert.Equal(t, tt.retries, o.cfg.PollRetries, tt.args)
	}
}

func TestReportSM(t *testing.T) {
	e := sm.SMEvent{Event: "sm", Action: sm.SMActionHandover, State: "Master", Previous: "Standby",
		Peer: &sm.SMPeer{GUID: "0x0002fab000000401", LID: 3, Priority: 1, State: "Master"}}
	var b bytes.Buffer
	reportSM(&b, e, true)
	assert.Equal(t, `{"event":"sm","action":"handover","state":"Master","previous":"Standby",`+
		`"peer":{"guid":"0x0002fab000000401","lid":3,"priority":1,"state":"Master"}}`+"\n", b.String())
	b.Reset()
	reportSM(&b, e, false)
	assert.Equal(t, "sm handover: Master (was Standby), peer 0x0002fab000000401 at LID 3 priority 1 Master\n", b.String())
	b.Reset()
	reportSM(&b, sm.SMEvent{Action: sm.SMActionPollingTimeout, State: "Discovering", Reason: "5 polls unanswered"}, false)
	assert.Equal(t, "sm polling-timeout: Discovering: 5 polls unanswered\n", b.String())
}
