package port_test

import (
	"testing"

	"ibfab/port"
)

// TestDropCauseText: every cause marshals as its name and parses back;
// a name of no cause and a value past the last are errors.
func TestDropCauseText(t *testing.T) {
	for c := port.DropUnroutable; c <= port.DropInputDown; c++ {
		b, err := c.MarshalText()
		if err != nil || string(b) != c.String() {
			t.Fatalf("%v.MarshalText() = %q, %v", c, b, err)
		}
		var got port.DropCause
		if err := got.UnmarshalText(b); err != nil || got != c {
			t.Fatalf("UnmarshalText(%q) = %v, %v", b, got, err)
		}
	}
	var c port.DropCause
	if err := c.UnmarshalText([]byte("nosuch")); err == nil {
		t.Error("UnmarshalText(nosuch) succeeded")
	}
	if _, err := (port.DropInputDown + 1).MarshalText(); err == nil {
		t.Error("MarshalText of a value past the last succeeded")
	}
}
