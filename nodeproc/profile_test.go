package nodeproc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProfileCPU(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name    string
		args    ProfileArgs
		wantErr string
	}{
		{"no path", ProfileArgs{Seconds: 1}, "no path"},
		{"zero seconds", ProfileArgs{Path: filepath.Join(dir, "z"), Seconds: 0}, "out of range"},
		{"too long", ProfileArgs{Path: filepath.Join(dir, "l"), Seconds: 3600}, "out of range"},
		{"bad directory", ProfileArgs{Path: filepath.Join(dir, "none", "p"), Seconds: 0.01}, "no such file"},
		{"ok", ProfileArgs{Path: filepath.Join(dir, "ok"), Seconds: 0.05}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := profileCPU(context.Background(), c.args)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			fi, err := os.Stat(c.args.Path)
			require.NoError(t, err)
			require.Positive(t, fi.Size(), "an empty profile")
		})
	}
}

// TestGoroutineStacks: the dump has every goroutine with its full stack,
// this one's included.
func TestGoroutineStacks(t *testing.T) {
	st, err := goroutineStacks()
	require.NoError(t, err)
	require.Contains(t, st.Goroutines, "TestGoroutineStacks")
	require.Contains(t, st.Goroutines, "goroutine 1 [")
}
