package simproto

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// Socket naming and the environment variables umad2sim reads.
const (
	// DefaultBase is the base name of the sockets when nothing says
	// otherwise: ibsim's.
	DefaultBase = "sim"
	// EnvSockName names the variable that overrides the base name, read by
	// ibsim and umad2sim alike.
	EnvSockName = "IBSIM_SOCKNAME"
	// EnvHost names umad2sim's variable for the node to attach to
	// (ClientInfo.NodeID); unset means the server's default port.
	EnvHost = "SIM_HOST"
	// EnvSetIsSM names umad2sim's variable that makes it connect as SM.
	EnvSetIsSM = "SIM_SET_ISSM"
)

// IbsimMaxClients is how many clients ibsim itself serves at once.
const IbsimMaxClients = 10

// BaseFromEnv returns the socket base name: $IBSIM_SOCKNAME, else
// DefaultBase.
func BaseFromEnv() string {
	if b := os.Getenv(EnvSockName); b != "" {
		return b
	}
	return DefaultBase
}

// CtlName is the name of the server's control socket.
func CtlName(base string) string { return base + ":ctl" }

// Client ids and slots are C ints on the other side, printed with %d: an
// id of 2^31 or more reads as negative there, and so it does here.

// ClientCtlName is the name of client id's control socket.
func ClientCtlName(base string, id uint32) string { return fmt.Sprintf("%s:ctl%d", base, int32(id)) }

// InName is the name of client id's MAD socket.
func InName(base string, id uint32) string { return fmt.Sprintf("%s:in%d", base, int32(id)) }

// OutName is the name of the server's MAD socket for the client in slot n.
func OutName(base string, n uint32) string { return fmt.Sprintf("%s:out%d", base, int32(n)) }

// Addr returns the abstract unix datagram address of name as ibsim and
// umad2sim bind and address it: a NUL, name, and one more NUL, since their
// address length counts the C string's terminator. "\x00sim:ctl" without
// it is another socket. (Go writes the leading NUL as '@'; it cuts the
// names it reads at the first NUL, so a name read back has no trailing
// NUL: compare with AddrName.)
func Addr(name string) *net.UnixAddr {
	return &net.UnixAddr{Name: "@" + name + "\x00", Net: "unixgram"}
}

// AddrName returns the name an abstract address read back by Go stands
// for, without the leading '@' and the trailing NULs, or "" for any other
// address.
func AddrName(a *net.UnixAddr) string {
	if a == nil || !strings.HasPrefix(a.Name, "@") {
		return ""
	}
	return strings.TrimRight(a.Name[1:], "\x00")
}
