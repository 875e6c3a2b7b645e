package qos

import (
	"testing"

	"ibfab/internal/testsupport"
)

// TestEnumsJSON: every QoS mode is its name in JSON, and reads back from
// it (runner's TestEnumsJSON does the framework's enums).
func TestEnumsJSON(t *testing.T) { testsupport.EnumJSON(t, qosModes.Values()) }
