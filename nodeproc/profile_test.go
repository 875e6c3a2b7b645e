package nodeproc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProfile(t *testing.T) {
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
		{"unknown kind", ProfileArgs{Path: filepath.Join(dir, "k"), Seconds: 0.01, Kind: 9}, "unknown"},
		{"cpu", ProfileArgs{Path: filepath.Join(dir, "ok"), Seconds: 0.05}, ""},
		{"block", ProfileArgs{Path: filepath.Join(dir, "block"), Seconds: 0.05, Kind: ProfileBlock}, ""},
		{"mutex", ProfileArgs{Path: filepath.Join(dir, "mutex"), Seconds: 0.05, Kind: ProfileMutex}, ""},
		{"trace", ProfileArgs{Path: filepath.Join(dir, "trace"), Seconds: 0.05, Kind: ProfileTrace}, ""},
		{"heap", ProfileArgs{Path: filepath.Join(dir, "heap"), Seconds: 0.01, Kind: ProfileHeap}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := profile(context.Background(), c.args)
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

func TestProfileKindText(t *testing.T) {
	for _, k := range []ProfileKind{ProfileCPU, ProfileBlock, ProfileMutex, ProfileTrace, ProfileHeap} {
		b, err := k.MarshalText()
		require.NoError(t, err)
		var got ProfileKind
		require.NoError(t, got.UnmarshalText(b))
		require.Equal(t, k, got)
	}
	var k ProfileKind
	require.ErrorContains(t, k.UnmarshalText([]byte("goroutine")), "want one of cpu, block, mutex, trace, heap")
	_, err := ProfileKind(7).MarshalText()
	require.Error(t, err)
}
