package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"ibfab/sm"
)

// mkeyOptions are the M_Key flags of the SM (OpenSM's m_key,
// m_key_protection_level, m_key_lease_period and m_key_per_port).
type mkeyOptions struct {
	key     uint64
	protect uint
	lease   leasePeriod
	perPort bool
}

func addMKeyFlags(fs *flag.FlagSet, m *mkeyOptions) {
	fs.Uint64Var(&m.key, "m-key", 0, "M_Key `K` the SM gives every management port and carries in its SMPs (0: none; OpenSM's m_key)")
	fs.UintVar(&m.protect, "m-key-protect", 0, "M_Key protection `level` 0-3 (OpenSM's m_key_protection_level): at 1 a Get without the key reads M_Key as 0, at 2 and 3 it goes unanswered; Sets always need the key")
	fs.Var(&m.lease, "m-key-lease", "M_Key lease `period` (5s, or seconds; whole seconds up to 65535; 0: never runs out; OpenSM's m_key_lease_period): once an SMP fails a port's check and none with the key follows for this long, the port's protection falls back to 0")
	fs.BoolVar(&m.perPort, "m-key-per-port", false, "give each port a key of its own, derived from --m-key and its port GUID (FNV-1a; OpenSM's m_key_per_port)")
}

// apply checks the flags and puts them into cfg.
func (m *mkeyOptions) apply(cfg *sm.Config) error {
	switch {
	case m.protect > sm.MaxMKeyProtect:
		return fmt.Errorf("--m-key-protect is 0-%d, not %d", sm.MaxMKeyProtect, m.protect)
	case m.key == 0 && (m.protect != 0 || m.lease != 0 || m.perPort):
		return errors.New("--m-key-protect, --m-key-lease and --m-key-per-port need an --m-key other than 0")
	}
	cfg.MKey, cfg.MKeyProtect, cfg.MKeyLease, cfg.MKeyPerPort = m.key, uint8(m.protect), uint16(m.lease), m.perPort
	return nil
}

// leasePeriod is PortInfo's M_KeyLeasePeriod in seconds, given as a
// duration or a number of seconds.
type leasePeriod uint16

func (l *leasePeriod) String() string { return (time.Duration(*l) * time.Second).String() }

func (l *leasePeriod) Set(s string) error {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		if n > 0xffff {
			return fmt.Errorf("%d seconds is more than 65535", n)
		}
		*l = leasePeriod(n)
		return nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return errors.New("want a duration (5s) or a number of seconds")
	case d < 0 || d%time.Second != 0:
		return fmt.Errorf("%v is not a whole number of seconds", d)
	case d > 0xffff*time.Second:
		return fmt.Errorf("%v is more than 65535 seconds", d)
	}
	*l = leasePeriod(d / time.Second)
	return nil
}

// reportMKey prints one M_Key event, as one write.
func reportMKey(w io.Writer, e sm.MKeyEvent, asJSON bool) {
	if asJSON {
		printJSONLine(w, e)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mkey %s:", e.Action)
	for _, f := range []struct{ name, v string }{{"port", e.GUID}, {"path", e.Path}} {
		if f.v != "" {
			fmt.Fprintf(&b, " %s %s", f.name, f.v)
		}
	}
	if e.LID != 0 {
		fmt.Fprintf(&b, " lid %d", e.LID)
	}
	if e.RequesterLID != 0 {
		fmt.Fprintf(&b, " from lid %d (%s %s)", e.RequesterLID, e.Method, e.Attribute)
	}
	if e.MKey != "" {
		fmt.Fprintf(&b, " key %s", e.MKey)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, ": %s", e.Reason)
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}
