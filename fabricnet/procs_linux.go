package fabricnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Processes returns the PIDs of the processes whose network namespace is
// one of the given namespaces: the node processes of a fabric and whatever
// ran in it with `ibfab exec`. Identity is the namespace's inode, so a
// process elsewhere is never listed whatever its name. The calling process
// is never listed either, whichever namespace its threads visit.
func Processes(namespaces []string) ([]int, error) {
	inodes := map[uint64]bool{}
	for _, ns := range namespaces {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(netnsDir, ns), &st); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		inodes[st.Ino] = true
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(filepath.Join("/proc", e.Name(), "ns", "net"), &st) != nil {
			continue // gone, or a kernel thread
		}
		if inodes[st.Ino] {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Kill sends sig to every process in the namespaces (see Processes) and
// returns how many it signalled.
func Kill(namespaces []string, sig syscall.Signal) (int, error) {
	pids, err := Processes(namespaces)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err == nil {
			n++
		}
	}
	return n, nil
}
