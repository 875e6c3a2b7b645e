package harness_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
)

// The sysfs tree libumad2sim leaves behind is removed; anything else by
// that name is not.
func TestRemoveUMADSysfs(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string) {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, rel), 0o755))
	}
	mk("sys-10/sys/class/infiniband/ibsim0")
	mk("sys-10/sys/class/infiniband_mad/umad0")
	mk("sys-11/sys/class/net")
	mk("sys-12/other")
	for _, pid := range []int{10, 11, 12, 13} {
		harness.RemoveUMADSysfs(dir, pid)
	}
	for name, want := range map[string]bool{"sys-10": false, "sys-11": true, "sys-12": true} {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.Equal(t, want, err == nil, name)
	}
}
