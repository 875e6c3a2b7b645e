package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"ibfab/internal/cli"
	"ibfab/internal/ctl"
)

// controlClient is what ibsm's control-socket clients (ibsm qos, ibsm ar)
// share: a verb with its flags and --control and --json, usage errors, one
// call to the running SM, the answer as JSON or text.
type controlClient struct {
	name     string // "qos", "ar"
	synopsis string
	stdout   io.Writer
	stderr   io.Writer
	fs       *flag.FlagSet
	control  *string
	asJSON   *bool
}

// newControlClient sets up the flag set of `ibsm name verb`; the caller
// adds the verb's own flags to c.fs.
func newControlClient(name, synopsis, verb string, stdout, stderr io.Writer) *controlClient {
	c := &controlClient{name: name, synopsis: synopsis, stdout: stdout, stderr: stderr}
	c.fs = flag.NewFlagSet("ibsm "+name+" "+verb, flag.ContinueOnError)
	c.fs.SetOutput(stderr)
	c.fs.Usage = func() { fmt.Fprintln(stderr, synopsis); c.fs.PrintDefaults() }
	c.control = c.fs.String("control", DefaultControl, "the SM's control socket `path`")
	c.asJSON = c.fs.Bool("json", false, "print the SM's answer as JSON")
	return c
}

// parse parses the verb's arguments and returns the positional ones; on a
// flag error or -h it returns false and the exit code.
func (c *controlClient) parse(args []string) ([]string, int, bool) {
	pos, err := parseInterspersed(c.fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK, false
		}
		return nil, exitUsage, false
	}
	return pos, 0, true
}

// usage prints err and the synopsis and returns the usage exit code.
func (c *controlClient) usage(err error) int {
	return cli.BadArgs(c.stderr, "ibsm "+c.name, err, c.synopsis)
}

// call sends op with args to the SM and decodes its answer into rep; on
// failure it says why on stderr and returns false.
func (c *controlClient) call(ctx context.Context, op string, args, rep any) bool {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := ctl.Call(cctx, *c.control, op, args, rep); err != nil {
		fmt.Fprintf(c.stderr, "ibsm %s: %v\n", c.name, err)
		return false
	}
	return true
}

// print writes rep as indented JSON with --json, else calls text.
func (c *controlClient) print(rep any, text func(io.Writer)) {
	if *c.asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
		return
	}
	text(c.stdout)
}
