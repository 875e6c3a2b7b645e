package ibfabcli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"ibfab/capture"
	"ibfab/harness"
)

const (
	captureSynopsis = "capture N NODE[PORT] [-w FILE] [--duration D | --count K] | capture --convert IN... -w FILE"
	captureDesc     = `
Captures the frames crossing port PORT (default 1) of NODE of fabric N, in
both directions, and writes them to FILE as an ERF pcap (ERF type 21 data
packets, 25 link packets), the format of Mellanox ibdump, which tshark and
Wireshark decode with no options:
  ibfab capture default 'ca4[1]' -w ca4.pcap --duration 10s
  tshark -r ca4.pcap
It stops on Ctrl-C (SIGINT or SIGTERM), after --duration or after --count
frames, and prints how many frames it wrote. -w - writes to standard output.
Without -w the file is N-NODE-pPORT.pcap. Timestamps are the kernel's
receive times at the two ends of the link.

With --convert it reads plain Ethernet captures instead (pcap or pcapng, as
tcpdump -i pN or tshark -i pN write them in a node's namespace) and writes
the IBA frames in them in the same ERF format, merged in timestamp order;
frames of other EtherTypes are skipped and counted.`
)

// portArg matches "NODE" or "NODE[PORT]".
var portArg = regexp.MustCompile(`^([^\[\]]+)(?:\[([0-9]+)\])?$`)

func runCapture(env *Env, args []string) (err error) {
	const cmd = "capture"
	fs := flagSet(cmd)
	out := fs.String("w", "", "write the capture to `FILE` (- for standard output)")
	dur := fs.Duration("duration", 0, "stop after `D` (0: no limit)")
	count := fs.Int("count", 0, "stop after `K` frames (0: no limit)")
	convert := fs.Bool("convert", false, "convert Ethernet captures (tcpdump -i pN) given as arguments")
	pos, help, err := parseInterleaved(env, fs, cmd, captureSynopsis, captureDesc, args)
	if help || err != nil {
		return err
	}
	usage := func(e error) error { return &UsageError{Cmd: cmd, Usage: captureSynopsis, Err: e} }
	switch {
	case *dur < 0:
		return usage(fmt.Errorf("--duration %v: want a positive duration", *dur))
	case *count < 0:
		return usage(fmt.Errorf("--count %d: want a positive count", *count))
	case *dur > 0 && *count > 0:
		return usage(errors.New("--duration and --count exclude each other"))
	}
	defer func() {
		var ue *UsageError
		if err != nil && !errors.As(err, &ue) {
			err = &CommandError{Cmd: cmd, Err: err}
		}
	}()
	if *convert {
		switch {
		case len(pos) == 0:
			return usage(errors.New("--convert: missing input capture"))
		case *out == "":
			return usage(errors.New("--convert: missing -w FILE"))
		case *dur > 0 || *count > 0:
			return usage(errors.New("--convert takes no --duration or --count"))
		}
		return convertFiles(env, pos, *out)
	}
	if len(pos) != 2 {
		return usage(errors.New("want a fabric name and NODE[PORT]"))
	}
	node, port, err := capturePortArg(pos[1])
	if err != nil {
		return usage(err)
	}
	if *out == "" {
		*out = fmt.Sprintf("%s-%s-p%d.pcap", pos[0], node, port)
	}
	return capturePort(env, pos[0], node, port, *out, *dur, *count)
}

// capturePortArg parses capture's NODE[PORT]: the port is 1 unless given.
func capturePortArg(s string) (node string, port int, err error) {
	m := portArg.FindStringSubmatch(s)
	if m == nil {
		return "", 0, fmt.Errorf("%q: want NODE or NODE[PORT]", s)
	}
	node, port = m[1], 1
	if m[2] != "" {
		if port, err = strconv.Atoi(m[2]); err != nil || port < 1 || port > 254 {
			return "", 0, fmt.Errorf("%q: port %s out of 1..254", s, m[2])
		}
	}
	return node, port, nil
}

// capturePort captures port of node of fabric name to file out until
// Ctrl-C, dur (0: no limit) or count frames (0: no limit), and prints how
// many frames it wrote.
func capturePort(env *Env, name, node string, port int, out string, dur time.Duration, count int) error {
	c, err := harness.OpenCapture(name, node, port)
	if err != nil {
		return err
	}
	defer c.Close()
	w, done, msgs, err := createCapture(env, out)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dur)
		defer cancel()
	}
	fmt.Fprintf(env.Stderr, "capturing %s <-> %s of fabric %s to %s; Ctrl-C stops\n", c.Port, c.Peer, name, out)
	n, err := c.Run(ctx, w, count)
	if cerr := done(); err == nil {
		err = cerr
	}
	st := c.Stats()
	fmt.Fprintf(msgs, "wrote %d frames to %s", n, out)
	if st.KernelDrops > 0 {
		fmt.Fprintf(msgs, "; the kernel dropped %d", st.KernelDrops)
	}
	fmt.Fprintln(msgs)
	return err
}

// createCapture opens path ("-": env.Stdout) for a capture and returns its
// writer, a function that flushes and closes it, and where to print
// messages (stderr when the capture goes to stdout).
func createCapture(env *Env, path string) (*capture.Writer, func() error, io.Writer, error) {
	var (
		dst     io.Writer
		closeFn = func() error { return nil }
		msgs    = env.Stdout
	)
	if path == "-" {
		dst, msgs = env.Stdout, env.Stderr
	} else {
		f, err := os.Create(path)
		if err != nil {
			return nil, nil, nil, err
		}
		dst, closeFn = f, f.Close
	}
	bw := bufio.NewWriterSize(dst, 64<<10)
	w, err := capture.NewWriter(bw)
	if err != nil {
		closeFn()
		return nil, nil, nil, err
	}
	done := func() error {
		return errors.Join(bw.Flush(), closeFn())
	}
	return w, done, msgs, nil
}

// convertFiles is capture --convert.
func convertFiles(env *Env, inputs []string, out string) error {
	var rs []io.Reader
	for _, p := range inputs {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		rs = append(rs, f)
	}
	w, done, msgs, err := createCapture(env, out)
	if err != nil {
		return err
	}
	st, err := harness.ConvertEthernet(w, rs...)
	if derr := done(); err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(msgs, "wrote %d frames to %s (%d other frames skipped)\n", st.Frames, out, st.Skipped)
	return nil
}
