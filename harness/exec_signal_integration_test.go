package harness_test

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/topologies"
)

// TestExecForwardsSignals: SIGTERM or SIGINT to `ibfab exec` reaches the
// command it runs in the node's namespace, which ends with it, and exec
// exits with the command's status (128 + the signal, as a shell reports
// a command a signal ended).
func TestExecForwardsSignals(t *testing.T) {
	f := fabrictest.Up(t, "sig", topologies.Dumbbell(), harness.UpOptions{})
	host := f.Hosts()[0]
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			// The shell prints its PID and becomes sleep, so that PID is
			// the command's.
			c := exec.Command(fabrictest.Bin(t, "ibfab"), "exec", f.Name, host, "--", "sh", "-c", "echo $$; exec sleep 60")
			out, err := c.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, c.Start())
			t.Cleanup(func() { c.Process.Kill(); c.Wait() })
			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err)
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			require.NoError(t, err)
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			require.NoError(t, c.Process.Signal(sig))
			fabrictest.Within(t, time.Second, "the command gone after the exec's "+sig.String(), func() bool {
				_, err := os.Stat("/proc/" + strconv.Itoa(pid))
				return os.IsNotExist(err)
			})
			err = c.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, 128+int(sig), ee.ExitCode(), "exec's status")
		})
	}
}
