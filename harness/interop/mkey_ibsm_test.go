package interop_test

// M_Key between ibsm and unmodified OpenSM (issue 21, part 3): an SM
// without the key cannot take a subnet the other protected at level 2,
// and takes it once the lease has run out; Trap 256 reaches ibsm as
// master. On a row of three switches with a CA on each: the SMs on ca0
// and ca2, ca1 reads ports with smpquery.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/sm"
)

const (
	mkeyIbsmKey  = "0x00000000000a11ce"
	mkeyOSMKey   = "0x000000000000beef"
	mkeyWrongKey = "0x0000000000000bad"
	// mkeyLease is both SMs' M_Key lease period: short, so that the test
	// stays short.
	mkeyLease = 4 * time.Second
)

// mkeyPort is a management port as smpquery reads it with a key (which
// smpquery does not display: a port answering at protection 2 holds it).
type mkeyPort struct {
	lid, smLID, bits, lease string
}

// mkeyPorts reads the management port (a switch's port 0, a CA's port 1)
// of every node from ca1 with key, by the LIDs the nodes hold; a port
// that does not answer is missing.
func mkeyPorts(t *testing.T, f *fabrictest.Fabric, key string) map[string]mkeyPort {
	t.Helper()
	field := regexp.MustCompile(`^([A-Za-z]+):\.*(.*)$`)
	out := map[string]mkeyPort{}
	for _, n := range f.Status().Nodes {
		port := "1"
		if n.Type == "switch" {
			port = "0"
		}
		text, _, err := f.For(t).UMAD("ca1", "smpquery", "-y", key, "portinfo", strconv.Itoa(int(n.Ports[0].LID)), port)
		if err != nil {
			continue
		}
		var p mkeyPort
		sc := bufio.NewScanner(strings.NewReader(text))
		for sc.Scan() {
			m := field.FindStringSubmatch(strings.TrimSpace(sc.Text()))
			if m == nil {
				continue
			}
			switch {
			case m[1] == "Lid":
				p.lid = m[2]
			case m[1] == "SMLid":
				p.smLID = m[2]
			case strings.Contains(m[1], "Prot"):
				p.bits = m[2]
			case m[1] == "MkeyLeasePeriod":
				p.lease = m[2]
			}
		}
		out[n.Name] = p
	}
	return out
}

// mkeyEvents returns ibsm's mkey events so far.
func mkeyEvents(s *smhaIbsm) []sm.MKeyEvent {
	var out []sm.MKeyEvent
	sc := bufio.NewScanner(strings.NewReader(s.d.Output()))
	for sc.Scan() {
		var e sm.MKeyEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == "mkey" {
			out = append(out, e)
		}
	}
	return out
}

// mkeyOpenSM starts OpenSM at node with the polling options of the SM
// tests, and extra options.
func mkeyOpenSM(t *testing.T, f *fabrictest.Fabric, node string, prio int, extra string) *fabrictest.OpenSM {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "opensm.conf")
	require.NoError(t, os.WriteFile(conf, []byte(smhaOpenSMConf+extra), 0o644))
	return f.StartOpenSM(node, "-F", conf, "-p", strconv.Itoa(prio))
}

// samePorts checks that every port of before reads the same in after.
func samePorts(t *testing.T, before, after map[string]mkeyPort, what string) {
	t.Helper()
	for n, p := range before {
		assert.Equal(t, p, after[n], "%s: %s", what, n)
	}
}

// TestMKeyIBSM: (a) ibsm protects the subnet at level 2 and dies; OpenSM
// without the key starts and changes no port while the lease runs, then
// takes the subnet once it has run out. (b) The reverse: OpenSM protects
// it, dies, and ibsm without the key changes nothing until the lease runs
// out, then takes the subnet (its mkey events report the ports it could
// not read, then the keys it recovered). (c) As master with a key, ibsm
// hears of a wrong-key smpquery from another host by Trap 256.
func TestMKeyIBSM(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	f := fabrictest.Up(t, "mkeyib", madrouteTopo(t), harness.UpOptions{})
	lease := strconv.Itoa(int(mkeyLease / time.Second))
	ibsmMKey := []string{"--m-key", mkeyIbsmKey, "--m-key-protect", "2", "--m-key-lease", mkeyLease.String()}

	t.Run("ibsm protects, OpenSM waits for the lease", func(t *testing.T) {
		ib := startIbsm(t, f, "ca0", 1, ibsmMKey...)
		defer ib.d.Stop()
		fabrictest.Wait(t, madrouteWait, "ibsm brings the whole subnet up", func() bool { return mkeyWholeSubnet(ib) >= 0 })
		held := mkeyPorts(t, f, mkeyIbsmKey)
		require.Len(t, held, 6, "every port read with the key")
		for n, p := range held {
			assert.Equal(t, "2", p.bits, n)
			assert.Equal(t, lease, p.lease, n)
		}
		lid2 := strconv.Itoa(int(f.Node("ca2").Ports[0].LID))
		_, _, err := f.For(t).UMAD("ca1", "smpquery", "portinfo", lid2, "1")
		assert.Error(t, err, "a port does not answer without the key")

		require.NoError(t, ib.d.Stop())
		dead := time.Now()
		o := mkeyOpenSM(t, f, "ca2", 15, "")
		defer mkeyStop(t, o)
		time.Sleep(mkeyLease / 2)
		assert.NotContains(t, o.LogText(t, 0), "SUBNET UP", "OpenSM without the key, within the lease")
		samePorts(t, held, mkeyPorts(t, f, mkeyIbsmKey), "within the lease")
		// The read with the key stopped the countdowns; OpenSM's next
		// SMPs start them again.
		o.WaitLog(t, madrouteWait, 0, "SUBNET UP")
		took := time.Since(dead)
		t.Logf("OpenSM without the key: SUBNET UP %v after ibsm died (lease %v)", took.Round(100*time.Millisecond), mkeyLease)
		assert.Greater(t, took, mkeyLease, "not before the lease ran out")
		var now map[string]mkeyPort
		caLID := strconv.Itoa(int(f.Node("ca2").Ports[0].LID))
		fabrictest.Wait(t, madrouteWait, "OpenSM reprograms every port", func() bool {
			now = mkeyPorts(t, f, "0")
			for _, p := range now {
				if p.smLID != caLID {
					return false
				}
			}
			return len(now) == 6
		})
		t.Logf("OpenSM reprogrammed every port %v after ibsm died", time.Since(dead).Round(100*time.Millisecond))
		for n, p := range now {
			assert.Equal(t, "0", p.bits, "%s: OpenSM without a key protects nothing", n)
			assert.Equal(t, held[n].lid, p.lid, "%s keeps its LID", n)
		}
		require.NoError(t, o.D.Stop())
	})

	t.Run("OpenSM protects, ibsm waits for the lease", func(t *testing.T) {
		o := mkeyOpenSM(t, f, "ca2", 1, "m_key "+mkeyOSMKey+"\nm_key_protection_level 2\nm_key_lease_period "+lease+"\n")
		defer mkeyStop(t, o)
		o.WaitLog(t, madrouteWait, 0, "SUBNET UP")
		fabrictest.Wait(t, madrouteWait, "OpenSM's keys on every port", func() bool {
			ps := mkeyPorts(t, f, mkeyOSMKey)
			if len(ps) != 6 {
				return false
			}
			for _, p := range ps {
				if p.bits != "2" {
					return false
				}
			}
			return true
		})
		held := mkeyPorts(t, f, mkeyOSMKey)

		require.NoError(t, o.D.Stop())
		dead := time.Now()
		ib := startIbsm(t, f, "ca0", 15)
		defer ib.d.Stop()
		time.Sleep(mkeyLease / 2)
		assert.Equal(t, -1, mkeyWholeSubnet(ib), "ibsm without the key, within the lease, has no whole subnet up")
		samePorts(t, held, mkeyPorts(t, f, mkeyOSMKey), "within the lease")
		protected := 0
		for _, e := range mkeyEvents(ib) {
			if e.Action == sm.MKeyProtected {
				protected++
			}
		}
		assert.Positive(t, protected, "ibsm reports the ports it cannot read")

		fabrictest.Wait(t, madrouteWait, "ibsm brings the whole subnet up", func() bool { return mkeyWholeSubnet(ib) >= 0 })
		took := time.Since(dead)
		t.Logf("ibsm without the key: subnet up %v after OpenSM died (lease %v)", took.Round(100*time.Millisecond), mkeyLease)
		assert.Greater(t, took, mkeyLease, "not before the lease ran out")
		recovered := map[string]bool{}
		for _, e := range mkeyEvents(ib) {
			if e.Action == sm.MKeyRecovered {
				assert.Equal(t, fmt.Sprintf("%#x", mustHex(t, mkeyOSMKey)), e.MKey)
				recovered[e.GUID] = true
			}
		}
		assert.Len(t, recovered, 6, "every port's key taken back")
		now := mkeyPorts(t, f, "0")
		require.Len(t, now, 6, "ibsm without a key gave every port key 0")
		caLID := strconv.Itoa(int(f.Node("ca0").Ports[0].LID))
		for n, p := range now {
			assert.Equal(t, caLID, p.smLID, "%s: ibsm's port is its SM", n)
			assert.Equal(t, "0", p.bits, n)
			assert.Equal(t, held[n].lid, p.lid, "%s keeps its LID", n)
		}
		require.NoError(t, ib.d.Stop())
	})

	t.Run("Trap 256 reaches ibsm", func(t *testing.T) {
		ib := startIbsm(t, f, "ca0", 1, ibsmMKey...)
		defer ib.d.Stop()
		fabrictest.Wait(t, madrouteWait, "ibsm brings the whole subnet up", func() bool { return mkeyWholeSubnet(ib) >= 0 })
		lid := f.Node("ca2").Ports[0].LID
		req := f.Node("ca1").Ports[0].LID
		var got sm.MKeyEvent
		wrong := fmt.Sprintf("%#x", mustHex(t, mkeyWrongKey))
		found := func() bool {
			for _, e := range mkeyEvents(ib) {
				if e.Action == sm.MKeyTrap256 && e.MKey == wrong {
					got = e
					return true
				}
			}
			return false
		}
		// A Trap 256 an SMA still repeats (to the SM that was master when
		// the SMPs of an SM without the key failed its check) reaches
		// ibsm once it is master, and is repressed; while it is
		// outstanding the SMA counts new violations without a trap of
		// their own. So smpquery goes again until its own trap comes.
		tries := 0
		for ; tries < 4 && !found(); tries++ {
			out, _, err := f.For(t).UMAD("ca1", "smpquery", "-y", mkeyWrongKey, "portinfo", strconv.Itoa(int(lid)), "1")
			require.Error(t, err, "a wrong key at level 2 is answered: %s", out)
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) && !found() {
				time.Sleep(100 * time.Millisecond)
			}
		}
		require.True(t, found(), "no trap256 event for the wrong key:\n%s", fabrictest.Tail(ib.d.Output(), 30))
		assert.Equal(t, lid, got.LID, "the port")
		assert.Equal(t, req, got.RequesterLID, "the requester")
		assert.Equal(t, fmt.Sprintf("%#x", mustHex(t, mkeyWrongKey)), got.MKey)
		assert.Equal(t, fmt.Sprintf("%#016x", f.Topo.Node(f.Index("ca2")).Ports[1].GUID), got.GUID)
		t.Logf("trap256 event: %+v", got)
		// Repressed: each smpquery's three sends make at most three
		// traps, none repeated.
		time.Sleep(5 * time.Second)
		n := 0
		for _, e := range mkeyEvents(ib) {
			if e.Action == sm.MKeyTrap256 && e.MKey == wrong {
				n++
			}
		}
		assert.LessOrEqual(t, n, 3*tries, "traps repressed, not repeated (%d smpquery runs)", tries)
		require.NoError(t, ib.d.Stop())
	})
}

// mkeyWholeSubnet returns the line of ibsm's first sweep that brought
// the whole subnet up (three switches, three CAs), -1 before one.
func mkeyWholeSubnet(s *smhaIbsm) int {
	sc := bufio.NewScanner(strings.NewReader(s.d.Output()))
	for i := 0; sc.Scan(); i++ {
		var r sm.Result
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Event == "sweep" && r.SubnetUp && r.Switches == 3 && r.HCAs == 3 {
			return i
		}
	}
	return -1
}

// mkeyStop stops OpenSM, with the end of its log when the test failed.
func mkeyStop(t *testing.T, o *fabrictest.OpenSM) {
	if t.Failed() {
		t.Logf("OpenSM's log:\n%s", fabrictest.Tail(o.LogText(t, 0), 120))
	}
	o.D.Stop()
}

func mustHex(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 0, 64)
	require.NoError(t, err)
	return v
}
