package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"ibfab/internal/enum"
	"ibfab/umadproto"
)

// ShimLibraryName is the file name of the umad shim, which `make build`
// (`make shim`) builds into bin/ next to ibfab.
const ShimLibraryName = "libibfabumad.so"

// EnvShimLibrary names the shim's path explicitly, overriding the search.
const EnvShimLibrary = "IBFAB_UMAD_SHIM"

// ErrNoShim is returned when the umad shim cannot be found.
var ErrNoShim = errors.New("harness: " + ShimLibraryName + " not found: run make shim (or set " + EnvShimLibrary + ")")

// ShimLibrary returns the path of the umad shim: $IBFAB_UMAD_SHIM, else
// the file next to the running executable, else bin/ of the source tree
// the working directory is in.
func ShimLibrary() (string, error) {
	if p := os.Getenv(EnvShimLibrary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvShimLibrary, p, err)
		}
		return p, nil
	}
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dirs = append(dirs, filepath.Join(d, "bin"))
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, ShimLibraryName)
		if _, err := os.Stat(p); err == nil {
			return filepath.Abs(p)
		}
	}
	return "", ErrNoShim
}

// RemoveShimSysfs removes the private sysfs copies the shim made for
// process pid ($TMPDIR/ibfab-umad-PID-*), which a process killed by a
// signal leaves behind (the shim also sweeps those of dead processes
// when it makes the next).
func RemoveShimSysfs(pid int) {
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("ibfab-umad-%d-*", pid)))
	for _, d := range m {
		os.RemoveAll(d)
	}
}

//go:generate go tool stringer -type=UMADMode -linecomment

// UMADMode is how exec --umad reaches an HCA: through ibfab's own shim
// (kernel semantics: RMPP, agents by class and method, P_Key index,
// timeouts) or through Debian's libumad2sim and the ibsim protocol.
type UMADMode uint8

// UMAD modes.
const (
	UMADOff  UMADMode = iota // off
	UMADShim                 // shim
	UMADSim                  // sim
)

var umadModes = enum.New("umad mode", UMADOff, UMADShim, UMADSim)

// umadAliases are the other names --umad has taken: a bool flag's, and
// libumad2sim's.
var umadAliases = map[string]UMADMode{"true": UMADShim, "1": UMADShim, "umad2sim": UMADSim,
	"libumad2sim": UMADSim, "false": UMADOff, "0": UMADOff, "": UMADOff}

// MarshalText implements encoding.TextMarshaler.
func (m UMADMode) MarshalText() ([]byte, error) { return umadModes.Marshal(m) }

// UnmarshalText implements encoding.TextUnmarshaler: a mode's name, or
// one of --umad's aliases (true and 1 the shim, false and 0 off).
func (m *UMADMode) UnmarshalText(b []byte) error {
	if a, ok := umadAliases[strings.ToLower(string(b))]; ok {
		*m = a
		return nil
	}
	return umadModes.Unmarshal(m, []byte(strings.ToLower(string(b))))
}

// ShimEnv returns what exec --umad adds to a command's environment for
// the shim: LD_PRELOAD with the shim ahead of any library already
// preloaded, and IBFAB_UMAD_SOCKET, the HCA's endpoint ("" means
// umadproto.DefaultSocket).
func ShimEnv(socket string) ([]string, error) {
	lib, err := ShimLibrary()
	if err != nil {
		return nil, err
	}
	if socket == "" {
		socket = umadproto.DefaultSocket
	}
	preload := lib
	if old := os.Getenv("LD_PRELOAD"); old != "" {
		preload += ":" + old
	}
	return []string{"LD_PRELOAD=" + preload, umadproto.EnvSocket + "=" + socket}, nil
}

// ModeEnv returns the environment of mode m (UMADShim or UMADSim): the
// shim's with the endpoint at socket, or libumad2sim's with the attach
// point at sim.
func ModeEnv(m UMADMode, socket, sim string) ([]string, error) {
	switch m {
	case UMADShim:
		return ShimEnv(socket)
	case UMADSim:
		return UMADEnv(sim)
	}
	return nil, fmt.Errorf("harness: no umad mode %v", m)
}
