package runner

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEnumsJSON: every value of the framework's enums is its name in
// JSON (each experiment's package tests its own).
func TestEnumsJSON(t *testing.T) {
	var values []fmt.Stringer
	for _, vs := range [][]fmt.Stringer{
		stringers(kinds.Values()),
		stringers(verdicts.Values()),
		stringers(smKinds.Values()),
	} {
		values = append(values, vs...)
	}
	for _, v := range values {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("%q", v.String()), string(b), "%T", v)
	}
}

// stringers returns an enum's values as fmt.Stringers.
func stringers[E fmt.Stringer](vs []E) []fmt.Stringer {
	out := make([]fmt.Stringer, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}
