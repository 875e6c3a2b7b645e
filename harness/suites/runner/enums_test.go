package runner

import (
	"testing"

	"ibfab/internal/testsupport"
)

// TestEnumsJSON: every value of the framework's enums is its name in
// JSON, and reads back from it (each experiment's package tests its own).
func TestEnumsJSON(t *testing.T) {
	testsupport.EnumJSON(t, kinds.Values())
	testsupport.EnumJSON(t, verdicts.Values())
	testsupport.EnumJSON(t, smKinds.Values())
}
