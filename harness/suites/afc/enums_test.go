package afc

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEnumsJSON: every value of afc's enums is its name in JSON, and a
// point reads them back from it.
func TestEnumsJSON(t *testing.T) {
	var values []fmt.Stringer
	for _, vs := range [][]fmt.Stringer{
		stringers(afcRoutingSet.Values()),
		stringers(afcQueuingSet.Values()),
		stringers(afcTraffics.Values()),
	} {
		values = append(values, vs...)
	}
	for _, v := range values {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("%q", v.String()), string(b), "%T", v)
	}
	var r AFCPoint
	require.NoError(t, json.Unmarshal([]byte(`{"traffic":"HS25","routing":"Adaptive-th","queuing":"vFtree-3VC"}`), &r))
	assert.Equal(t, AFCHS25, r.Traffic)
	assert.Equal(t, AFCAdaptiveTh, r.Routing)
	assert.Equal(t, AFCVFtree, r.Queuing)
}

// stringers returns an enum's values as fmt.Stringers.
func stringers[E fmt.Stringer](vs []E) []fmt.Stringer {
	out := make([]fmt.Stringer, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}
