package cc

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEnumsJSON: every CC scheme is its name in JSON, and reads back from
// it (runner's TestEnumsJSON does the framework's enums).
func TestEnumsJSON(t *testing.T) {
	for _, v := range ccSchemes.Values() {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("%q", v.String()), string(b))
		var back CCScheme
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, v, back)
	}
}
