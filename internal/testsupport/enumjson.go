package testsupport

import (
	"encoding/json"
	"fmt"
	"testing"
)

// EnumJSON checks that each of an enum's values is its name in JSON (the
// String its stringer gives, quoted) and reads back from it as itself:
// what a report's reader sees of every typed enum.
func EnumJSON[E interface {
	comparable
	fmt.Stringer
}](t *testing.T, values []E) {
	t.Helper()
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			t.Errorf("%T %v: %v", v, v, err)
			continue
		}
		if want := fmt.Sprintf("%q", v.String()); string(b) != want {
			t.Errorf("%T %v in JSON: %s, want %s", v, v, b, want)
		}
		var back E
		if err := json.Unmarshal(b, &back); err != nil || back != v {
			t.Errorf("%T %s read back as %v (%v)", v, b, back, err)
		}
	}
}
