package testsupport

import (
	"io"
	"testing"
)

// LogWriter is an io.Writer into t's log, one Logf per write: where a
// run's progress lines go in a test.
func LogWriter(t testing.TB) io.Writer { return logWriter{t} }

type logWriter struct{ t testing.TB }

func (l logWriter) Write(b []byte) (int, error) {
	l.t.Logf("%s", b)
	return len(b), nil
}
