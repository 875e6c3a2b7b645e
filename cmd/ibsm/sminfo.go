package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"ibfab/sm"
)

// addSMInfoFlags adds the flags of the SM's dealings with other SMs:
// priority, SM_Key, and how a standby polls the master (OpenSM's
// sm_priority, sm_key, sminfo_polling_timeout, polling_retry_number).
func addSMInfoFlags(fs *flag.FlagSet, o *options) {
	fs.UintVar(&o.priority, "priority", sm.DefaultPriority, "SM priority, 0-15: the highest is master (then the lowest port GUID)")
	fs.Uint64Var(&o.cfg.SMKey, "sm-key", sm.DefaultSMKey,
		"SM_Key: SMs cooperate (election, handover) only with the same key, or with key 0, which trusts every SM; OpenSM's default is 1")
	fs.DurationVar(&o.cfg.PollInterval, "polling-interval", sm.DefaultPollInterval,
		"how often a standby asks the master for its SMInfo (OpenSM's sminfo_polling_timeout)")
	fs.IntVar(&o.pollRetries, "polling-retries", sm.DefaultPollRetries,
		"polls in a row that may go unanswered: the standby takes over when the N+1-th times out (OpenSM's polling_retry_number)")
}

// reportSM prints one SM state event, as one write.
func reportSM(w io.Writer, e sm.SMEvent, asJSON bool) {
	if asJSON {
		printJSONLine(w, e)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sm %s: %s", e.Action, e.State)
	if e.Previous != "" {
		fmt.Fprintf(&b, " (was %s)", e.Previous)
	}
	if p := e.Peer; p != nil {
		fmt.Fprintf(&b, ", peer %s", p.GUID)
		if p.LID != 0 {
			fmt.Fprintf(&b, " at LID %d", p.LID)
		}
		if p.State != "" {
			fmt.Fprintf(&b, " priority %d %s", p.Priority, p.State)
		}
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, ": %s", e.Reason)
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}
