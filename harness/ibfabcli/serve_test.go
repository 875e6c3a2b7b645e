package ibfabcli_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"ibfab/internal/cli"
)

// TestServeErrors: serve fails as status does on a fabric that is not up
// and on a bad name, before it listens.
func TestServeErrors(t *testing.T) {
	const name = "wvnotup"
	code, out, serveErr := run("serve", "--name", name, "--listen", "127.0.0.1:0")
	assert.Equal(t, cli.ExitFailure, code)
	assert.Empty(t, out)
	_, _, statusErr := run("status", "--name", name)
	assert.Equal(t, strings.Replace(statusErr, "ibfab status:", "ibfab serve:", 1), serveErr, "the error status gives")
	assert.Contains(t, serveErr, "is not up")

	code, _, errOut := run("serve", "--name", "a/b")
	assert.Equal(t, cli.ExitUsage, code)
	assert.Contains(t, errOut, "usage: ibfab serve")

	code, out, _ = run("serve", "-h")
	assert.Equal(t, cli.ExitOK, code)
	assert.Contains(t, out, "--listen")
	assert.Contains(t, out, "/api/fabric")
}
