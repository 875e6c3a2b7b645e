package interop_test

import (
	"testing"

	"ibfab/internal/fabrictest"
)

// up brings topo up for t as fabric suffix (fabrictest.Up: torn down and
// checked for leftovers when t ends).
var up = fabrictest.Up

// must fails t on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
