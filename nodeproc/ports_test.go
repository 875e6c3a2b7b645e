package nodeproc

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPortFlags(t *testing.T) {
	base := []string{"--fabric", "f", "--node", "sw1"}
	for _, tc := range []struct {
		name    string
		args    []string
		prefix  string
		wait    time.Duration
		wantErr string
	}{
		{name: "defaults", prefix: "p"},
		{name: "containerlab", args: []string{"--port-names", "eth", "--port-wait", "2m"}, prefix: "eth", wait: 2 * time.Minute},
		{name: "empty prefix", args: []string{"--port-names", ""}, wantErr: `--port-names "": want 1 to 12`},
		{name: "too long", args: []string{"--port-names", "abcdefghijklm"}, wantErr: "want 1 to 12"},
		{name: "slash", args: []string{"--port-names", "e/th"}, wantErr: `--port-names "e/th"`},
		{name: "negative wait", args: []string{"--port-wait", "-1s"}, wantErr: "--port-wait -1s: want 0 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(KindSwitch, append(append([]string(nil), base...), tc.args...), io.Discard)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.prefix, o.PortNames)
			assert.Equal(t, tc.wait, o.PortWait)
		})
	}
}
