package interop_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/topologies"
)

// TestMKeyTrap runs OpenSM with an M_Key at protection level 2 and has a
// diagnostic on another host query a switch and a CA port with the wrong
// M_Key (smpquery -y): the SMA drops the Get, sends Trap 256 (Bad M_Key)
// to the SM, which logs it and represses it (so it is not repeated), and
// the port's M_KeyViolations, read with the right key, counts it.
func TestMKeyTrap(t *testing.T) {
	const key, wrong = "0x00000000000a11ce", "0x0000000000000bad"
	topo, err := topologies.Irregular(2, 4, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := fabrictest.Up(t, "mkey", topo, harness.UpOptions{})
	conf := filepath.Join(t.TempDir(), "opensm.conf")
	text := "force_log_flush TRUE\nm_key " + key + "\nm_key_protection_level 2\nm_key_lease_period 60\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	osm := f.StartOpenSM("ca1-1", "-F", conf)
	at := osm.WaitLog(t, 60*time.Second, 0, "SUBNET UP")

	for _, tc := range []struct {
		name, target, producer string
		port                   int // PortInfo of the SMA: a switch's port 0, the CA's port 1
	}{
		{"switch", "sw2", "2 (Switch)", 0},
		{"CA", "ca2-2", "1 (Channel Adapter)", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lid := strconv.Itoa(int(f.For(t).Node(tc.target).Ports[0].LID))
			port := strconv.Itoa(tc.port)
			violations := func() int {
				out := f.For(t).MustUMAD("ca2-1", "smpquery", "-y", key, "portinfo", lid, port)
				m := regexp.MustCompile(`MkeyViolations:\.*(\d+)`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("no MkeyViolations in smpquery portinfo:\n%s", out)
				}
				n, _ := strconv.Atoi(m[1])
				return n
			}
			before, from := violations(), at
			out, errOut, err := f.For(t).UMAD("ca2-1", "smpquery", "-y", wrong, "portinfo", lid, port)
			if err == nil {
				t.Fatalf("smpquery with the wrong M_Key at level 2 was answered:\n%s", out)
			}
			t.Logf("smpquery -y %s portinfo %s %s: %v %s", wrong, lid, port, err, strings.TrimSpace(errOut))
			at = osm.WaitLog(t, 20*time.Second, from, "num:256 (Bad M_Key) Producer:"+tc.producer+" from LID:"+lid+" ")
			// smpquery sends its request three times (libibmad's
			// retries): each is a violation, and each reaches the SMA
			// after OpenSM repressed the trap of the one before, so
			// it raises a trap of its own. A trap not repressed would
			// come again, same TID, after a repeat interval (~2 s with
			// OpenSM's SubnetTimeOut).
			time.Sleep(5 * time.Second)
			after := violations()
			if after <= before {
				t.Errorf("M_KeyViolations %d → %d, want more", before, after)
			}
			re := regexp.MustCompile(`num:256 \(Bad M_Key\) Producer:` + regexp.QuoteMeta(tc.producer) + ` from LID:` + lid + ` TID:(0x[0-9a-f]+)`)
			tids := map[string]int{}
			for _, m := range re.FindAllStringSubmatch(osm.LogText(t, from), -1) {
				tids[m[1]]++
			}
			for tid, n := range tids {
				if n > 1 {
					t.Errorf("trap 256 TID %s logged %d times: not repressed", tid, n)
				}
			}
			t.Logf("M_KeyViolations %d → %d; OpenSM logged %d Bad M_Key traps from LID %s, each once", before, after, len(tids), lid)
			if len(tids) > after-before {
				t.Errorf("%d traps for %d violations", len(tids), after-before)
			}
			at = len(osm.LogText(t, 0))
		})
	}
}
