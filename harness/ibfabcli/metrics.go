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
)

const (
	metricsSynopsis = "metrics [--name N] [--listen ADDR]"
	metricsDesc     = `
Serves the fabric's port counters and states to Prometheus at /metrics
of ADDR (127.0.0.1:9315 by default) until Ctrl-C or SIGTERM: each scrape
asks every node for its status. The names are those of node_exporter's
infiniband collector (node_infiniband_*, HCA ports, label device as
ibfab sysfs names the device) and of infiniband_exporter
(infiniband_hca_port_*, infiniband_switch_port_*, label guid), data in
bytes; what only the harness knows (drops by cause, per-VL counts, node
up) is under ibfab_. Every port metric has the labels node, guid, port
and peer.`
)

// defaultMetricsListen is loopback: the exporter serves anyone who can
// connect, and a fabric's figures are for this machine unless asked.
const defaultMetricsListen = "127.0.0.1:9315"

func runMetrics(env *Env, args []string) error {
	const cmd = "metrics"
	fs := flagSet(cmd)
	name := fs.String("name", defaultName, "fabric `N`ame")
	listen := fs.String("listen", defaultMetricsListen, "`ADDR`ess to serve /metrics on")
	if help, err := parseFlags(env, fs, cmd, metricsSynopsis, metricsDesc, args, 0); help || err != nil {
		return err
	}
	if err := fabricnet.CheckFabricName(*name); err != nil {
		return &UsageError{Cmd: cmd, Usage: metricsSynopsis, Err: err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := promexport.CheckFabric(ctx, *name); err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			err = fmt.Errorf("%s is in use (another exporter?): choose another with --listen", *listen)
		}
		return &CommandError{Cmd: cmd, Err: err}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promexport.Handler(*name))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.Stderr, "serving fabric %s's metrics at http://%s/metrics; Ctrl-C stops\n", *name, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
		return &CommandError{Cmd: cmd, Err: err}
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shut)
}
