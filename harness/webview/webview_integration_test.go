package webview_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/harness/webview"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

// ScreenshotEnv names the directory the test saves a PNG of the page to,
// when set.
const ScreenshotEnv = "IBFAB_SCREENSHOT_DIR"

// browser starts headless Chromium for t and returns its tab and the
// console's errors and uncaught exceptions so far.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	require.NoError(t, err)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path),
		chromedp.NoSandbox, // as root Chromium refuses its sandbox
		chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx) // waits for the browser to exit
		cancel()
		cancelAlloc()
	})
	// Start the browser and the tab before subscribing: Console needs it.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	var (
		mu   sync.Mutex
		errs []string
	)
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// Only the page's own console errors and exceptions: the
			// browser log's entries (a 503 once the fabric is gone)
			// have no arguments and no exception.
			if m.Type == chromedp.ConsoleException || (m.Type == chromedp.ConsoleError && len(m.Args) > 0) {
				mu.Lock()
				errs = append(errs, m.String())
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(errs)
	}
}

// eval evaluates expr in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// waitJS polls expr until it is true and returns how long that took.
func waitJS(t *testing.T, ctx context.Context, timeout time.Duration, what, expr string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not after %v (%s; last error %v)", what, timeout, expr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// screenshot saves the page as name.png in $IBFAB_SCREENSHOT_DIR, if set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(ScreenshotEnv)
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	file := filepath.Join(dir, name+".png")
	require.NoError(t, os.WriteFile(file, png, 0o644))
	t.Logf("screenshot %s", file)
}

// serveCommand runs ibfab serve on fabric name on a free port, reads
// /api/fabric from it and stops it with SIGINT, as Ctrl-C would: it must
// exit 0, soon.
func serveCommand(t *testing.T, name string) {
	t.Helper()
	cmd := exec.Command(fabrictest.Bin(t, "ibfab"), "serve", "--name", name, "--listen", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "stderr: %s", stderr.String())
	m := regexp.MustCompile(`at (http://\S+/);`).FindStringSubmatch(line)
	require.NotNil(t, m, "%q", line)
	r, err := http.Get(m[1] + "api/fabric")
	require.NoError(t, err)
	_ = r.Body.Close()
	assert.Equal(t, http.StatusOK, r.StatusCode)
	// The same server's /metrics is the Prometheus exporter's.
	r, err = http.Get(m[1] + "metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, r.StatusCode)
	assert.Contains(t, string(body), "node_infiniband_port_data_transmitted_bytes_total{")
	assert.Contains(t, string(body), `ibfab_node_up{`)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	start := time.Now()
	select {
	case err := <-exited:
		assert.NoError(t, err, "ibfab serve after SIGINT; stderr: %s", stderr.String())
		t.Logf("ibfab serve exited %v after SIGINT", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatal("ibfab serve still running 10 s after SIGINT")
	}
}

// TestServePage runs the page in headless Chromium on the default
// fabric: it draws every node and link without a console error, a cut
// link changes colour, a click on a node shows its counters, ibfab serve
// on an address in use fails clearly, and a teardown shows the banner.
func TestServePage(t *testing.T) {
	testenv.RequireProgram(t, "chromium", "chromium")
	topo := topologies.Default()
	f := fabrictest.Up(t, "wv", topo, harness.UpOptions{})
	sm := f.NewSM("ca4")
	require.NoError(t, sm.Configure())
	fabrictest.Wait(t, 15*time.Second, "every port Active", func() bool {
		for _, n := range f.Status().Nodes {
			for _, p := range n.Ports {
				if p.Peer != "" && p.State != "Active" {
					return false
				}
			}
		}
		return true
	})

	v, err := webview.New(webview.Config{Name: f.Name})
	require.NoError(t, err)
	ts := httptest.NewServer(v)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = v.Close() }) // first: it ends the page's event stream

	// ibfab serve on the address the test serves on: a clear error.
	out, err := exec.Command(fabrictest.Bin(t, "ibfab"), "serve", "--name", f.Name, "--listen", ts.Listener.Addr().String()).CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), "ibfab serve: cannot listen on "+ts.Listener.Addr().String())
	assert.Contains(t, string(out), "address already in use")

	serveCommand(t, f.Name)

	ctx, consoleErrors := browser(t)
	start := time.Now()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/")))
	waitJS(t, ctx, 15*time.Second, "the map", "!!(window.ibfab && ibfab.cy && ibfab.cy.nodes().length > 0)")
	t.Logf("page drawn in %v", time.Since(start).Round(time.Millisecond))

	// Every node and link of the topology, by name.
	var wantNodes, wantLinks []string
	for _, n := range topo.Nodes() {
		wantNodes = append(wantNodes, n.Name)
	}
	for _, l := range topo.Links() {
		wantLinks = append(wantLinks, fabrictest.PortName(topo, l.A)+"-"+fabrictest.PortName(topo, l.B))
	}
	gotNodes := eval[[]string](t, ctx, "ibfab.cy.nodes().map((n) => n.id())")
	gotLinks := eval[[]string](t, ctx, "ibfab.cy.edges().map((e) => e.id())")
	assert.ElementsMatch(t, wantNodes, gotNodes)
	assert.ElementsMatch(t, wantLinks, gotLinks)

	// Every link drawn Active (idle or busy: the SM's MADs are traffic).
	waitJS(t, ctx, 15*time.Second, "every link Active", "ibfab.cy.edges().every((e) => e.data('state') === 'Active')")

	// Cut one link; its edge turns the Down colour.
	cut := topo.Links()[0]
	id := wantLinks[0]
	edgeColor := fmt.Sprintf("ibfab.cy.getElementById(%q).style('line-color')", id)
	before := eval[string](t, ctx, edgeColor)
	require.NoError(t, harness.SetLink(f.Name, topo.Node(cut.A.Node).Name, cut.A.Port, false))
	took := waitJS(t, ctx, 15*time.Second, "the cut link's colour",
		fmt.Sprintf("%s === 'rgb(214,39,40)'", edgeColor))
	t.Logf("link %s cut: its edge went from %s to the Down colour in %v", id, before, took.Round(time.Millisecond))
	waitJS(t, ctx, 5*time.Second, "the cut in the timeline",
		fmt.Sprintf("document.getElementById('timeline').textContent.includes(%q)", fabrictest.PortName(topo, cut.A)))

	// Kill a host's process: the map draws it dead, the timeline says so.
	require.NoError(t, harness.Kill(f.Name, "ca7"))
	took = waitJS(t, ctx, 15*time.Second, "ca7 drawn dead",
		"ibfab.cy.getElementById('ca7').data('alive') === false && document.getElementById('timeline').textContent.includes('ca7 died')")
	t.Logf("ca7 killed: drawn dead in %v", took.Round(time.Millisecond))
	for _, l := range wantLinks {
		if strings.Contains(l, "ca7[1]") {
			// The switch's end went Down; the dead end's Unknown gives way.
			waitJS(t, ctx, 15*time.Second, "ca7's link Down", fmt.Sprintf(
				"ibfab.cy.getElementById(%q).style('line-color') === 'rgb(214,39,40)'", l))
		}
	}

	// A click on a switch shows its counters and each port's P_Key
	// table in the side panel: the default entry, full member, on every
	// port (the reset table's, which the SM leaves without partitions).
	const node = "sw1"
	xy := eval[[]float64](t, ctx, fmt.Sprintf(`(() => {
		const p = ibfab.cy.getElementById(%q).renderedPosition();
		const r = ibfab.cy.container().getBoundingClientRect();
		return [r.left + p.x, r.top + p.y];
	})()`, node))
	require.NoError(t, chromedp.Do(ctx, chromedp.MouseClickXY(xy[0], xy[1])))
	waitJS(t, ctx, 5*time.Second, "the panel",
		fmt.Sprintf("(() => { const s = document.getElementById('panel').textContent; return s.includes(%q) && s.includes('PortXmitPkts') && s.includes('PortRcvData'); })()", node))
	swIndex, ok := topo.Lookup(node)
	require.True(t, ok)
	pkeys := eval[[]string](t, ctx, `[...document.querySelectorAll('#panel tr')]
		.filter((r) => r.cells.length > 1 && r.cells[0].textContent === 'P_Keys').map((r) => r.cells[1].textContent)`)
	assert.Equal(t, slices.Repeat([]string{"0xffff"}, topo.Node(swIndex).NumPorts), pkeys, "%s's ports' P_Keys", node)
	screenshot(t, ctx, "webview")
	assert.Empty(t, consoleErrors(), "console errors and exceptions")

	// Tear the fabric down under the page: the banner, not a blank page.
	require.NoError(t, harness.Down(f.Name))
	took = waitJS(t, ctx, 15*time.Second, "the banner", fmt.Sprintf(
		"(() => { const b = document.getElementById('banner'); return !b.hidden && b.textContent.includes(%q); })()",
		"fabric "+f.Name+" is not running"))
	t.Logf("banner %v after the teardown", took.Round(time.Millisecond))
	assert.Equal(t, len(wantNodes), eval[int](t, ctx, "ibfab.cy.nodes().length"), "the last map stays")
	screenshot(t, ctx, "webview-down")
	assert.Empty(t, consoleErrors(), "console errors and exceptions")
}
