package opensmrun_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ibfab/internal/opensmrun"
)

// Lines of OpenSM 3.3.23's logs on ibsim.
const (
	noRootLine  = "Nov 26 14:30:53 228908 [12CD86C0] 0x02 -> updn_lid_matrices: disabling UPDN algorithm, no root nodes were found\n"
	updnFailed  = "Nov 26 14:30:53 228915 [12CD86C0] 0x01 -> ucast_mgr_route: updn: cannot build lid matrices\n"
	minhopLine  = "Nov 26 14:30:53 229049 [12CD86C0] 0x02 -> osm_ucast_mgr_process: minhop tables configured on all switches\n"
	updnLine    = "Nov 26 14:32:47 652899 [F2BAB6C0] 0x02 -> osm_ucast_mgr_process: updn tables configured on all switches\n"
	ftreeLine   = "Nov 26 14:31:53 271720 [58F7C6C0] 0x02 -> osm_ucast_mgr_process: ftree tables configured on all switches\n"
	subnetUp    = "Nov 26 14:32:47 700000 [F2BAB6C0] 0x02 -> SUBNET UP\n"
	discovering = "Nov 26 14:32:47 600000 [F2BAB6C0] 0x80 -> Entering DISCOVERING state\n"
)

func TestRoutedWith(t *testing.T) {
	for _, tc := range []struct {
		name, log    string
		engine       string
		updnFellBack bool
	}{
		{"updn", discovering + updnLine + subnetUp, "updn", false},
		{"updn-no-root", discovering + noRootLine + updnFailed + minhopLine + subnetUp, "minhop", true},
		{"ftree", ftreeLine + subnetUp, "ftree", false},
		{"last-sweep-counts", minhopLine + updnLine, "updn", false},
		{"none", discovering + subnetUp, "", false},
		{"empty", "", "", false},
		{"no-newline", updnLine[:len(updnLine)-1], "updn", false},
		{"not-the-line", "x -> osm_ucast_mgr_process: some engine tables configured on all switches\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.engine, opensmrun.RoutedWith(tc.log))
			require.Equal(t, tc.updnFellBack, opensmrun.UpdnFellBack(tc.log))
		})
	}
}

func TestWriteRootGUIDs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		guids []uint64
		want  string
	}{
		{"one", []uint64{0x02fab00000000100}, "0x02fab00000000100\n"},
		{"two", []uint64{0x1, 0xffffffffffffffff}, "0x0000000000000001\n0xffffffffffffffff\n"},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "roots")
			err := opensmrun.WriteRootGUIDs(path, tc.guids...)
			if tc.want == "" {
				require.ErrorContains(t, err, "no GUID")
				require.NoFileExists(t, path)
				return
			}
			require.NoError(t, err)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(b))
		})
	}
}
