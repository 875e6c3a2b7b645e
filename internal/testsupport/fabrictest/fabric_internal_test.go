package fabrictest

import (
	"testing"
	"time"

	"ibfab/nodeproc"
)

func TestPeerLossBound(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		scale float64
		want  time.Duration
	}{
		{nil, 1, nodeproc.DefaultLiveness / 2},
		{[]string{"--mtu", "2048"}, 1, nodeproc.DefaultLiveness / 2},
		{[]string{"--liveness", "2s"}, 1, time.Second},
		{[]string{"--liveness=2s"}, 4, 4 * time.Second},
		{[]string{"-liveness", "500ms", "--mtu", "2048"}, 10, 2500 * time.Millisecond},
		{[]string{"--rx-blocks", "128", "liveness", "1s"}, 1, nodeproc.DefaultLiveness / 2},
	} {
		f := &Fabric{Scale: tt.scale, Liveness: liveness(tt.args)}
		if got := f.PeerLossBound(); got != tt.want {
			t.Errorf("args %q, scale %v: %v, want %v", tt.args, tt.scale, got, tt.want)
		}
	}
}
