package arbtable_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/arbtable"
)

func TestModelText(t *testing.T) {
	b, err := json.Marshal(arbtable.Models)
	require.NoError(t, err)
	assert.JSONEq(t, `["M1","M2","M3","M4"]`, string(b), "a list of names, not base64")
	var back []arbtable.Model
	require.NoError(t, json.Unmarshal([]byte(`["M1","2","M3","4"]`), &back))
	assert.Equal(t, arbtable.Models, back)
	var m arbtable.Model
	assert.ErrorContains(t, m.UnmarshalText([]byte("M5")), `model "M5" unknown: want one of M1, M2, M3, M4`)
	_, err = arbtable.Model(0).MarshalText()
	assert.Error(t, err)
}
