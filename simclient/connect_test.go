package simclient

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/simproto"
)

// TestConnectedQueue: a server socket connected to the client's, as
// ibsim's are, writing without blocking, has answers refused with EAGAIN
// once a handful wait for a client whose socket is not connected back
// (ibsim then spins on the write); connected back, as connectTo does, the
// client's socket takes them all.
func TestConnectedQueue(t *testing.T) {
	qlen := 10 // net.unix.max_dgram_qlen's default
	if b, err := os.ReadFile("/proc/sys/net/unix/max_dgram_qlen"); err == nil {
		fmt.Sscan(string(b), &qlen)
	}
	burst := qlen + 16
	for _, connected := range []bool{false, true} {
		t.Run(fmt.Sprintf("connected %v", connected), func(t *testing.T) {
			base := fmt.Sprintf("ibf-test-%d-%v", os.Getpid(), connected)
			in, err := net.ListenUnixgram("unixgram", simproto.Addr(simproto.InName(base, 1)))
			require.NoError(t, err)
			defer in.Close()
			out, err := net.ListenUnixgram("unixgram", simproto.Addr(simproto.OutName(base, 0)))
			require.NoError(t, err)
			defer out.Close()
			require.NoError(t, connectTo(out, simproto.Addr(simproto.InName(base, 1))))
			if connected {
				require.NoError(t, connectTo(in, simproto.Addr(simproto.OutName(base, 0))))
			}

			rc, err := out.SyscallConn()
			require.NoError(t, err)
			msg := make([]byte, simproto.RequestSize)
			sent := 0
			var werr error
			require.NoError(t, rc.Write(func(fd uintptr) bool {
				for sent < burst {
					if _, werr = syscall.Write(int(fd), msg); werr != nil {
						break
					}
					sent++
				}
				return true // never wait: ibsim's socket does not block either
			}))
			if connected {
				assert.NoError(t, werr)
				assert.Equal(t, burst, sent)
			} else {
				assert.True(t, errors.Is(werr, syscall.EAGAIN), "%v", werr)
				assert.Less(t, sent, burst)
			}
		})
	}
}
