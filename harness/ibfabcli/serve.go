package ibfabcli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness/promexport"
	"ibfab/harness/webview"
)

const (
	serveSynopsis = "serve [--name N] [--listen ADDR]"
	serveDesc     = `
Serves a live web page of a running fabric at http://ADDR/ until Ctrl-C:
a map of its nodes and links, each link coloured by its ports' state
(Down, Init, Armed, Active) and, when Active, by its utilization over the
last second; links and nodes whose drops or errors rose in the last
second are marked. Clicking a node shows its ports, P_Keys, counters
(drops and errors since the port started) and per-VL credits; a timeline
under the map lists every port state change, node death and drop increase
as the server's poll (every 500 ms) sees it. The JSON behind the page is
at /api/fabric, /api/node/NODE and /api/events (server-sent events); the
port counters and states for Prometheus at /metrics, as ibfab metrics
serves them. The page needs no network beyond ADDR.`
)

func runServe(env *Env, args []string) error {
	const cmd = "serve"
	fs := flagSet(cmd)
	name := fs.String("name", defaultName, "fabric `N`ame")
	listen := fs.String("listen", "127.0.0.1:8080", "`ADDR` to listen on, host:port (port 0 picks a free one)")
	if help, err := parseFlags(env, fs, cmd, serveSynopsis, serveDesc, args, 0); help || err != nil {
		return err
	}
	if err := fabricnet.CheckFabricName(*name); err != nil {
		return &UsageError{Cmd: cmd, Usage: serveSynopsis, Err: err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, env, *name, *listen); err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	return nil
}

// serve serves fabric name's web view on addr until ctx ends. The fabric
// is read first, so that a fabric that is not up fails as ibfab status
// does, before anything listens.
func serve(ctx context.Context, env *Env, name, addr string) error {
	v, err := webview.New(webview.Config{Name: name, Metrics: promexport.Handler(name)})
	if err != nil {
		return err
	}
	defer v.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: v, ReadHeaderTimeout: 10 * time.Second}
	// The event streams last as long as a page is open: end them before
	// Shutdown, which waits for every request.
	srv.RegisterOnShutdown(func() { _ = v.Close() })
	fmt.Fprintf(env.Stdout, "serving fabric %s at http://%s/; Ctrl-C stops\n", name, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
