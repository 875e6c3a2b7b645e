package ibfabcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"ibfab/capture"
	"ibfab/harness"
	"ibfab/topologies"
)

const (
	pcapUsage       = "pcap sample [-f TOPO] -w FILE | pcap decode FILE"
	pcapSampleUsage = "pcap sample [-f TOPO] -w FILE"
	pcapDecodeUsage = "pcap decode FILE"
)

const (
	pcapSampleDesc = `
Writes an ERF pcap of the frames that train every link of TOPO (flow-control
Init packets, both directions) and of the directed-route NodeInfo Gets a
subnet manager on TOPO's first CA sends to discover it, breadth first. The
frames are built by ibfab's wire package, not captured: no fabric runs.
Without -f the built-in default fabric (the thesis's 8-switch network) is used.`
	pcapDecodeDesc = `
Prints every frame of an ERF pcap as ibfab's own decoder reads it, after
verifying its CRCs; exits 1 if any frame fails to decode or verify.`
)

func runPcap(env *Env, args []string) error {
	if len(args) == 0 {
		return &UsageError{Cmd: "pcap", Usage: pcapUsage, Err: errors.New("missing subcommand")}
	}
	switch args[0] {
	case "sample":
		return runPcapSample(env, args[1:])
	case "decode":
		return runPcapDecode(env, args[1:])
	case "-h", "-help", "--help":
		fmt.Fprintf(env.Stdout, "usage: ibfab %s\n", pcapUsage)
		return nil
	}
	return &UsageError{Cmd: "pcap", Usage: pcapUsage, Err: fmt.Errorf("unknown subcommand %q", args[0])}
}

func runPcapSample(env *Env, args []string) (err error) {
	const cmd = "pcap sample"
	fs := flagSet(cmd)
	topoFile := fs.String("f", "", "topology file (default: the built-in default fabric)")
	out := fs.String("w", "", "capture file to write")
	if help, err := parseFlags(env, fs, cmd, pcapSampleUsage, pcapSampleDesc, args, 0); help || err != nil {
		return err
	}
	if *out == "" {
		return &UsageError{Cmd: cmd, Usage: pcapSampleUsage, Err: errors.New("missing -w FILE")}
	}
	defer func() {
		if err != nil {
			err = &CommandError{Cmd: cmd, Err: err}
		}
	}()
	t := topologies.Default()
	if *topoFile != "" {
		if t, err = topologies.ParseFile(*topoFile); err != nil {
			return err
		}
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w, err := capture.NewWriter(f)
	if err != nil {
		return err
	}
	n, err := harness.WriteDiscoverySample(t, w, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %d frames to %s\n", n, *out)
	return nil
}

func runPcapDecode(env *Env, args []string) (err error) {
	const cmd = "pcap decode"
	fs := flagSet(cmd)
	if help, err := parseFlags(env, fs, cmd, pcapDecodeUsage, pcapDecodeDesc, args, 1); help || err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return &UsageError{Cmd: cmd, Usage: pcapDecodeUsage, Err: errors.New("missing capture file")}
	}
	defer func() {
		if err != nil {
			err = &CommandError{Cmd: cmd, Err: err}
		}
	}()
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := capture.NewReader(f)
	if err != nil {
		return err
	}
	d := harness.NewFrameDecoder()
	bad := 0
	for i := 1; ; i++ {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		line, ok := d.Describe(rec)
		if !ok {
			bad++
		}
		fmt.Fprintf(env.Stdout, "%5d %s %s\n", i, rec.Time.Format("15:04:05.000000"), line)
	}
	if bad > 0 {
		return fmt.Errorf("%d frames failed to decode or verify", bad)
	}
	return nil
}
