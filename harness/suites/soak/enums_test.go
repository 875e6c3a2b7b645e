package soak

import (
	"testing"

	"ibfab/internal/testsupport"
)

// TestEnumsJSON: every disturbance kind is its name in JSON, and reads
// back from it.
func TestEnumsJSON(t *testing.T) { testsupport.EnumJSON(t, kinds.Values()) }
