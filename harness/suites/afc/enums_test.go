package afc

import (
	"encoding/json"
	"ibfab/internal/testsupport"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEnumsJSON: every value of afc's enums is its name in JSON, and a
// point reads them back from it.
func TestEnumsJSON(t *testing.T) {
	testsupport.EnumJSON(t, afcRoutingSet.Values())
	testsupport.EnumJSON(t, afcQueuingSet.Values())
	testsupport.EnumJSON(t, afcTraffics.Values())
	var r AFCPoint
	require.NoError(t, json.Unmarshal([]byte(`{"traffic":"HS25","routing":"Adaptive-th","queuing":"vFtree-3VC"}`), &r))
	assert.Equal(t, AFCHS25, r.Traffic)
	assert.Equal(t, AFCAdaptiveTh, r.Routing)
	assert.Equal(t, AFCVFtree, r.Queuing)
}
