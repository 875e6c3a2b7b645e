package runner

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVerdictText: the verdicts' names are the reports' words and
// report.json's, and parse back.
func TestVerdictText(t *testing.T) {
	for v, name := range map[Verdict]string{
		VerdictNotMeasured: "not measured",
		VerdictAgrees:      "agrees",
		VerdictSameSign:    "same direction",
		VerdictPartly:      "partly",
		VerdictWithinNoise: "within noise",
		VerdictDisagrees:   "disagrees",
	} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		assert.Equal(t, `"`+name+`"`, string(b))
		var back Verdict
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, v, back)
	}
	var v Verdict
	assert.Error(t, json.Unmarshal([]byte(`"agree"`), &v))
	_, err := json.Marshal(Verdict(99))
	assert.Error(t, err)
}
