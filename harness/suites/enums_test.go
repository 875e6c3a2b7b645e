package suites

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEnumsJSON: every value of the suites' enums is its name in JSON,
// and reads back from it.
func TestEnumsJSON(t *testing.T) {
	var values []fmt.Stringer
	for _, v := range kinds.Values() {
		values = append(values, v)
	}
	for _, v := range afcRoutingSet.Values() {
		values = append(values, v)
	}
	for _, v := range afcQueuingSet.Values() {
		values = append(values, v)
	}
	for _, v := range afcTraffics.Values() {
		values = append(values, v)
	}
	for _, v := range qosModes.Values() {
		values = append(values, v)
	}
	for _, v := range ccSchemes.Values() {
		values = append(values, v)
	}
	for _, v := range failoverScenarios.Values() {
		values = append(values, v)
	}
	for _, v := range verdicts.Values() {
		values = append(values, v)
	}
	for _, v := range smKinds.Values() {
		values = append(values, v)
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
