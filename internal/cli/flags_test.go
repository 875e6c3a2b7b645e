package cli

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseFlags: -h prints the usage, the description and the flags;
// bad flags and extra arguments are UsageErrors with the synopsis.
func TestParseFlags(t *testing.T) {
	h := Help{Prog: "p", Cmd: "sub", Synopsis: "sub [-n N] ARG", Desc: "\nDoes sub.\n"}
	var out bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &out}
	fs := FlagSet("p", "sub")
	fs.Int("n", 1, "a `N`umber")
	help, err := ParseFlags(env, fs, h, []string{"-h"}, 1)
	require.NoError(t, err)
	assert.True(t, help)
	assert.Equal(t, "usage: p sub [-n N] ARG\n\nDoes sub.\n\nflags:\n  -n N\n    \ta Number (default 1)\n", out.String())

	var ue *UsageError
	_, err = ParseFlags(env, FlagSet("p", "sub"), h, []string{"-x"}, 1)
	require.True(t, errors.As(err, &ue), "%v", err)
	assert.Equal(t, "sub [-n N] ARG", ue.Usage)
	_, err = ParseFlags(env, FlagSet("p", "sub"), h, []string{"a", "b"}, 1)
	assert.EqualError(t, err, `sub: unexpected argument "b"`)
}

// TestParseAround: flags may come between the positional arguments;
// ParseInterleaved takes everything after "--" as positional.
func TestParseAround(t *testing.T) {
	h := Help{Prog: "p", Cmd: "sub", Synopsis: "sub"}
	env := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	fs := FlagSet("p", "sub")
	w := fs.String("w", "", "")
	pos, help, err := ParseInterleaved(env, fs, h, []string{"a", "-w", "f", "b", "--", "-c"})
	require.NoError(t, err)
	assert.False(t, help)
	assert.Equal(t, []string{"a", "b", "-c"}, pos)
	assert.Equal(t, "f", *w)

	fs = FlagSet("p", "sub")
	w = fs.String("w", "", "")
	pos, _, err = ParseInterspersed(env, fs, h, []string{"a", "-w", "g", "b"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, pos)
	assert.Equal(t, "g", *w)

	_, help, err = ParseInterleaved(env, FlagSet("p", "sub"), h, []string{"a", "-h"})
	require.NoError(t, err)
	assert.True(t, help)
}

func TestCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  bool
	}{
		{in: "0", want: []int{0}},
		{in: "0,2", want: []int{0, 2}},
		{in: "0-3,6", want: []int{0, 1, 2, 3, 6}},
		{in: " 1 ", want: []int{1}},
		{in: "", err: true},
		{in: "1,", err: true},
		{in: "3-1", err: true},
		{in: "-1", err: true},
		{in: "a", err: true},
	}
	for _, tt := range tests {
		var l CPUList
		err := l.Set(tt.in)
		if tt.err {
			assert.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, []int(l), tt.in)
	}
	l := CPUList{0, 2}
	assert.Equal(t, "0,2", l.String())
}
