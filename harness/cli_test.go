package harness_test

import (
	"bytes"

	"ibfab/harness/ibfabcli"
)

// run runs ibfab in-process and returns its exit status and output: the
// tests of the library that check it through the command line.
func run(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := ibfabcli.Main(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}
