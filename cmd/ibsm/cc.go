package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"ibfab/sm"
)

// ccOptions are the congestion control flags of the SM.
type ccOptions struct {
	file        string
	logInterval time.Duration
}

func addCCFlags(fs *flag.FlagSet, c *ccOptions) {
	fs.StringVar(&c.file, "cc", "", "manage congestion control (IBA A10) from `file`, in OpenSM's cc_* option syntax; CongestionLog entries are printed as cc_log events")
	fs.DurationVar(&c.logInterval, "cc-log-interval", 0, "with --cc, also read every node's CongestionLog this often while watching (0: once per sweep)")
}

// config reads the file into the SM's congestion control configuration;
// nil without --cc.
func (c *ccOptions) config() (*sm.CCConfig, error) {
	if c.file == "" {
		if c.logInterval != 0 {
			return nil, errors.New("--cc-log-interval reads congestion logs: say --cc")
		}
		return nil, nil
	}
	if c.logInterval < 0 {
		return nil, fmt.Errorf("--cc-log-interval %v", c.logInterval)
	}
	s, err := sm.LoadCCSettings(c.file)
	if err != nil {
		return nil, err
	}
	return &sm.CCConfig{Settings: *s, LogInterval: c.logInterval}, nil
}

// reportCC prints one CongestionLog entry.
func reportCC(w io.Writer, e sm.CCLogEvent, asJSON bool) {
	if asJSON {
		printJSONLine(w, e)
		return
	}
	fmt.Fprintf(w, "cc_log %s %s (LID %d) at %d: SL %d", e.Type, e.Node, e.LID, e.TimeStamp, e.SL)
	if e.Type == "switch" {
		fmt.Fprintf(w, ", LID %d to %d, ports %v\n", e.SLID, e.DLID, e.Ports)
		return
	}
	fmt.Fprintf(w, ", QP %#x to LID %d QP %#x\n", e.LocalQP, e.RemoteLID, e.RemoteQP)
}
