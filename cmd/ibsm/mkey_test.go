package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
)

// TestMKeyFlags: no M_Key by default; the lease takes a duration or
// seconds.
func TestMKeyFlags(t *testing.T) {
	tests := []struct {
		args    []string
		key     uint64
		protect uint8
		lease   uint16
		perPort bool
	}{
		{nil, 0, 0, 0, false},
		{[]string{"--m-key", "0xc0ffee"}, 0xc0ffee, 0, 0, false},
		{[]string{"--m-key", "7", "--m-key-protect", "2", "--m-key-lease", "5s"}, 7, 2, 5, false},
		{[]string{"--m-key", "7", "--m-key-protect", "3", "--m-key-lease", "60", "--m-key-per-port"}, 7, 3, 60, true},
		{[]string{"--m-key", "7", "--m-key-lease", "2m"}, 7, 0, 120, false},
		{[]string{"--m-key", "7", "--m-key-lease", "0"}, 7, 0, 0, false},
	}
	for _, tt := range tests {
		o, err := parse(append([]string{"--port", "fake"}, tt.args...), io.Discard)
		require.NoError(t, err, tt.args)
		assert.Equal(t, tt.key, o.cfg.MKey, tt.args)
		assert.Equal(t, tt.protect, o.cfg.MKeyProtect, tt.args)
		assert.Equal(t, tt.lease, o.cfg.MKeyLease, tt.args)
		assert.Equal(t, tt.perPort, o.cfg.MKeyPerPort, tt.args)
	}
}

func TestReportMKey(t *testing.T) {
	e := sm.MKeyEvent{Event: "mkey", Action: sm.MKeyTrap256, GUID: "0x0002fab000000401", LID: 4, RequesterLID: 9,
		Method: "Get", Attribute: "PortInfo", MKey: "0x7"}
	var b bytes.Buffer
	reportMKey(&b, e, true)
	assert.Equal(t, `{"event":"mkey","action":"trap256","guid":"0x0002fab000000401","lid":4,"requester_lid":9,`+
		`"method":"Get","attribute":"PortInfo","mkey":"0x7"}`+"\n", b.String())
	b.Reset()
	reportMKey(&b, e, false)
	assert.Equal(t, "mkey trap256: port 0x0002fab000000401 lid 4 from lid 9 (Get PortInfo) key 0x7\n", b.String())
	b.Reset()
	reportMKey(&b, sm.MKeyEvent{Action: sm.MKeyProtected, Path: "0,1,4", Reason: "no answer"}, false)
	assert.Equal(t, "mkey protected: path 0,1,4: no answer\n", b.String())
}

// TestMKeyOnce: ibsm with a key brings the in-memory fabric up, keys
// cached beside the LID file.
func TestMKeyOnce(t *testing.T) {
	lids := t.TempDir() + "/guid2lid"
	code, _, errs := ibsm(t, "--port", "fake", "--once", "--lid-file", lids, "--m-key", "0x5", "--m-key-protect", "2",
		"--m-key-lease", "3s", "--m-key-per-port")
	require.Equal(t, exitOK, code, errs)
	c, err := sm.LoadMKeyCache(sm.MKeyFile(lids))
	require.NoError(t, err)
	assert.Len(t, c.Keys, 15, "8 switches, 7 CAs")
	code, _, errs = ibsm(t, "--port", "fake", "--once", "--lid-file", lids, "--m-key", "0x5", "--m-key-protect", "2")
	require.Equal(t, exitOK, code, errs)
}
