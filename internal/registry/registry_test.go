package registry

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistry(t *testing.T) {
	r := New[int]("test: thing")
	r.Register("b", 2)
	r.Register("a", 1)
	v, ok := r.Lookup("b")
	require.True(t, ok)
	assert.Equal(t, 2, v)
	_, ok = r.Lookup("c")
	assert.False(t, ok)
	assert.Equal(t, []string{"a", "b"}, r.Names())
	assert.PanicsWithValue(t, "test: thing a registered twice", func() { r.Register("a", 3) })
	assert.Empty(t, New[int]("none").Names())
}
