package promexport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/harness/promexport"
	"ibfab/harness/sysfstree"
	"ibfab/ibsysfs"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/nodeproc"
	"ibfab/wire/mad"
)

// TestRealPrograms runs Debian's prometheus against the exporter, and
// node_exporter and ibstatus against the sysfs tree, on one fabric whose
// ports an SM made Active.
func TestRealPrograms(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "prometheus", "prometheus")
	testenv.RequireProgram(t, "prometheus-node-exporter", "prometheus-node-exporter")
	testenv.RequireProgram(t, "ibstatus", "infiniband-diags")
	testenv.RequireProgram(t, "unshare", "util-linux")
	f := fabrictest.Up(t, "prom", fabrictest.Star(t), harness.UpOptions{})
	sm := f.NewSM("ca1")
	require.NoError(t, sm.Configure())
	fabrictest.Wait(t, 20*time.Second, "every HCA port Active", func() bool {
		for _, h := range []string{"ca1", "ca2"} {
			if f.Node(h).Ports[0].State != mad.PortStateActive.String() {
				return false
			}
		}
		return true
	})
	// ibfab status gives an HCA port its port GUID (the topology gives
	// none here: NodeGUID+port, ibsim's rule) and a switch's ports none.
	ca1, sw1 := f.Node("ca1"), f.Node("sw1")
	require.Equal(t, "0x0000000000002001", ca1.Ports[0].GUID)
	require.Equal(t, "0x0000000000002000", ca1.SysImageGUID)
	require.Equal(t, ca1.Ports[0].LID, ca1.Ports[0].SMLID, "the SM runs on ca1")
	require.NotZero(t, ca1.Ports[0].CapMask)
	for _, p := range sw1.Ports {
		require.Empty(t, p.GUID, "sw1[%d]", p.Port)
	}
	t.Run("prometheus", func(t *testing.T) { testPrometheus(t, f) })
	t.Run("node_exporter", func(t *testing.T) { testNodeExporter(t, f) })
	t.Run("ibstatus", func(t *testing.T) { testIbstatus(t, f) })
	t.Run("commands", func(t *testing.T) { testCommands(t, f) })
}

// freePort returns a loopback address no one listens on now.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// start runs argv until the test ends, its output kept for a failure.
func start(t *testing.T, argv ...string) *bytes.Buffer {
	var out bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", argv[0], fabrictest.Tail(out.String(), 40))
		}
	})
	return &out
}

func get(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), err
}

// query asks prometheus at addr for expr's one sample, false when it has
// none (yet).
func query(t *testing.T, addr, expr string) (float64, bool) {
	body, err := get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return 0, false
	}
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &r), body)
	if r.Status != "success" || len(r.Data.Result) != 1 {
		return 0, false
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v, true
}

// testPrometheus: prometheus scrapes the handler every second; traffic
// from ca1 to ca2 makes ca1's transmit-data counter rise in its TSDB.
func testPrometheus(t *testing.T, f *fabrictest.Fabric) {
	srv := httptest.NewServer(promexport.Handler(f.Name))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ibfab
    static_configs:
      - targets: ['%s']
`, strings.TrimPrefix(srv.URL, "http://")), 0o644))
	addr := freePort(t)
	start(t, "prometheus", "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr)
	const sent = `node_infiniband_port_data_transmitted_bytes_total{device="ca1",port="1"}`
	var v0 float64
	fabrictest.Wait(t, 30*time.Second, "prometheus has scraped ca1's counter", func() bool {
		up, ok := query(t, addr, `up{job="ibfab"}`)
		if !ok || up != 1 {
			return false
		}
		var have bool
		v0, have = query(t, addr, sent)
		return have
	})
	dlid := f.Node("ca2").Ports[0].LID
	f.MustCall("ca1", "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 5, Payload: 256, Dests: []uint16{dlid}, Seed: 1}, nil)
	t.Cleanup(func() { _ = f.Call("ca1", "traffic-stop", map[string]int{"port": 1}, nil) })
	var v1 float64
	fabrictest.Wait(t, 20*time.Second, "ca1's transmit data rises in prometheus", func() bool {
		v1, _ = query(t, addr, sent)
		return v1 > v0+64*1024
	})
	// The other names see the same port: the switch's receive side and
	// infiniband_exporter's family of ca1.
	for _, expr := range []string{
		`infiniband_hca_port_transmit_data_bytes_total{hca="ca1",port="1"}`,
		`infiniband_switch_port_receive_data_bytes_total{switch="sw1",port="1"}`,
		`ibfab_node_up{node="sw1"}`,
	} {
		v, ok := query(t, addr, expr)
		require.True(t, ok, "%s: no sample", expr)
		require.Positive(t, v, expr)
	}
	t.Logf("ca1[1] transmit data in prometheus: %.0f -> %.0f bytes", v0, v1)
}

// parse reads an exposition in the text format.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err)
	return mfs
}

// sample returns the value of family name's sample whose labels include
// want, false when none.
func sample(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		if mf.GetType() == dto.MetricType_COUNTER {
			return m.Counter.GetValue(), true
		}
		return m.Gauge.GetValue(), true
	}
	return 0, false
}

// testNodeExporter: node_exporter's infiniband collector reads the tree
// ibfab sysfs writes once and exports each HCA port's counters equal to
// the status of that snapshot; our exporter has each of its families.
func testNodeExporter(t *testing.T, f *fabrictest.Fabric) {
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := sysfstree.Write(ctx, f.Name, root)
	require.NoError(t, err)
	addr := freePort(t)
	start(t, "prometheus-node-exporter", "--path.sysfs="+filepath.Join(root), "--collector.disable-defaults",
		"--collector.infiniband", "--web.listen-address="+addr)
	var text string
	fabrictest.Wait(t, 20*time.Second, "node_exporter answers", func() bool {
		text, err = get("http://" + addr + "/metrics")
		return err == nil && strings.Contains(text, "node_infiniband_")
	})
	mfs := parse(t, text)
	checked := 0
	for _, n := range s.Nodes {
		if n.Type != nodeproc.KindHCA.String() {
			continue
		}
		for _, p := range n.Ports {
			labels := map[string]string{"device": ibsysfs.DeviceName(n.Name), "port": strconv.Itoa(p.Port)}
			st, _ := ibsysfs.ParsePortState(p.State)
			ph, _ := ibsysfs.ParsePhysState(p.Phys)
			w, _ := ibsysfs.ParseWidth(p.Width)
			sp, _ := ibsysfs.ParseSpeed(p.Speed)
			c := p.Counters
			for name, want := range map[string]float64{
				"node_infiniband_port_data_transmitted_bytes_total":   4 * float64(c.PortXmitData),
				"node_infiniband_port_data_received_bytes_total":      4 * float64(c.PortRcvData),
				"node_infiniband_port_packets_transmitted_total":      float64(c.PortXmitPkts),
				"node_infiniband_port_packets_received_total":         float64(c.PortRcvPkts),
				"node_infiniband_legacy_data_transmitted_bytes_total": 4 * float64(c.PortXmitData),
				"node_infiniband_port_transmit_wait_total":            float64(c.PortXmitWait),
				"node_infiniband_link_downed_total":                   float64(c.LinkDownedCounter),
				"node_infiniband_port_errors_received_total":          float64(c.PortRcvErrors),
				"node_infiniband_state_id":                            float64(st),
				"node_infiniband_physical_state_id":                   float64(ph),
				"node_infiniband_rate_bytes_per_second":               float64(mad.NominalRate(w, sp)) * 1e8 / 8,
			} {
				got, ok := sample(mfs, name, labels)
				if !ok {
					t.Errorf("node_exporter has no %s%v", name, labels)
					continue
				}
				if got != want {
					t.Errorf("%s%v = %v, status says %v", name, labels, got, want)
				}
				checked++
			}
			require.NotZero(t, c.PortXmitData, "%s[%d] sent nothing: the comparison would prove little", n.Name, p.Port)
		}
	}
	require.Positive(t, checked)
	// Every node_infiniband_ family node_exporter exports for the tree,
	// ours exports too, with its labels: a dashboard over one works over
	// the other.
	rec := httptest.NewRecorder()
	promexport.Handler(f.Name).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	ours := parse(t, rec.Body.String())
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "node_infiniband_") {
			continue
		}
		o := ours[name]
		if o == nil {
			t.Errorf("node_exporter exports %s, our exporter does not", name)
			continue
		}
		if o.GetType() != mf.GetType() {
			t.Errorf("%s: ours is a %v, node_exporter's a %v", name, o.GetType(), mf.GetType())
		}
		for _, l := range mf.Metric[0].Label {
			if _, ok := sample(ours, name, map[string]string{l.GetName(): l.GetValue()}); !ok {
				t.Errorf("%s: ours has no sample with %s=%q", name, l.GetName(), l.GetValue())
			}
		}
	}
	families := 0
	for name := range mfs {
		if strings.HasPrefix(name, "node_infiniband_") {
			families++
		}
	}
	t.Logf("node_exporter: %d values equal to the status snapshot, %d node_infiniband families", checked, families)
}

// testIbstatus: infiniband-diags' ibstatus reads the tree where it reads
// a host's HCAs, bind-mounted there in a private mount namespace only.
func testIbstatus(t *testing.T, f *fabrictest.Fabric) {
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := sysfstree.Write(ctx, f.Name, root)
	require.NoError(t, err)
	// /sys/class may have no infiniband directory to mount over: a tmpfs
	// over /sys/class, in the private namespace, gives it one.
	script := `set -e
mount -t tmpfs ibfab-sysfs /sys/class
mkdir /sys/class/infiniband
mount --bind "$1" /sys/class/infiniband
exec ibstatus`
	out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", sysfstree.Dir(root)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	text := string(out)
	for _, n := range s.Nodes {
		if n.Type != nodeproc.KindHCA.String() {
			continue
		}
		p := n.Ports[0]
		w, _ := ibsysfs.ParseWidth(p.Width)
		sp, _ := ibsysfs.ParseSpeed(p.Speed)
		pg, err := strconv.ParseUint(strings.TrimPrefix(p.GUID, "0x"), 16, 64)
		require.NoError(t, err)
		for _, want := range []string{
			fmt.Sprintf("Infiniband device '%s' port 1 status:", ibsysfs.DeviceName(n.Name)),
			"default gid:\t fe80:0000:0000:0000:" + ibsysfs.GUID(pg),
			"base lid:\t " + ibsysfs.LID(p.LID),
			"state:\t\t 4: ACTIVE",
			"phys state:\t 5: LinkUp",
			"rate:\t\t " + ibsysfs.Rate(w, sp),
			"link_layer:\t InfiniBand",
		} {
			require.Contains(t, text, want, "ibstatus output:\n%s", text)
		}
	}
	if _, err := os.Stat("/sys/class/infiniband/ca1"); err == nil {
		t.Error("the bind mount leaked out of the private namespace")
	}
}

// ibfab runs the ibfab binary to its end and returns its exit code and
// stderr.
func ibfab(t *testing.T, args ...string) (int, string) {
	var stderr bytes.Buffer
	cmd := exec.Command(fabrictest.Bin(t, "ibfab"), args...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	}
	require.NoError(t, err)
	return 0, stderr.String()
}

// stopped sends cmd SIGTERM and requires it to exit 0.
func stopped(t *testing.T, cmd *exec.Cmd) {
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "exit on SIGTERM")
}

// testCommands: ibfab metrics serves /metrics and says when its address
// is taken; ibfab sysfs refreshes its tree until SIGTERM, and both say
// when the fabric is not up or the directory cannot be written.
func testCommands(t *testing.T, f *fabrictest.Fabric) {
	addr := freePort(t)
	var out bytes.Buffer
	m := exec.Command(fabrictest.Bin(t, "ibfab"), "metrics", "--name", f.Name, "--listen", addr)
	m.Stderr = &out
	require.NoError(t, m.Start())
	t.Cleanup(func() { _ = m.Process.Kill(); _, _ = m.Process.Wait() })
	fabrictest.Wait(t, 10*time.Second, "ibfab metrics serves", func() bool {
		text, err := get("http://" + addr + "/metrics")
		return err == nil && strings.Contains(text, `node_infiniband_port_data_transmitted_bytes_total{device="ca1"`)
	})
	code, stderr := ibfab(t, "metrics", "--name", f.Name, "--listen", addr)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, addr+" is in use")
	stopped(t, m)

	code, stderr = ibfab(t, "metrics", "--name", "pmnosuch", "--listen", freePort(t))
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, `fabric "pmnosuch" is not up`)

	root := t.TempDir()
	s := exec.Command(fabrictest.Bin(t, "ibfab"), "sysfs", "--name", f.Name, "--dir", root, "--interval", "100ms")
	require.NoError(t, s.Start())
	t.Cleanup(func() { _ = s.Process.Kill(); _, _ = s.Process.Wait() })
	data := filepath.Join(sysfstree.Dir(root), "ca2", "ports", "1", "counters", "port_rcv_packets")
	var first string
	fabrictest.Wait(t, 10*time.Second, "ibfab sysfs writes ca2's counters", func() bool {
		b, err := os.ReadFile(data)
		first = string(b)
		return err == nil
	})
	// Traffic to ca2 shows in the tree as it refreshes.
	dlid := f.Node("ca2").Ports[0].LID
	f.MustCall("ca1", "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 5, Payload: 256, Dests: []uint16{dlid}, Seed: 1}, nil)
	t.Cleanup(func() { _ = f.Call("ca1", "traffic-stop", map[string]int{"port": 1}, nil) })
	fabrictest.Wait(t, 10*time.Second, "ca2's port_rcv_packets rises in the tree", func() bool {
		b, _ := os.ReadFile(data)
		return len(b) > 0 && string(b) != first
	})
	stopped(t, s)

	code, stderr = ibfab(t, "sysfs", "--name", "pmnosuch", "--dir", root, "--once")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, `fabric "pmnosuch" is not up`)
	file := filepath.Join(root, "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	code, stderr = ibfab(t, "sysfs", "--name", f.Name, "--dir", file, "--once")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "cannot write the tree under "+file)
}
