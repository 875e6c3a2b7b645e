package ccmgr

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"ibfab/wire/mad"
)

// The congestion control configuration, in OpenSM's option names and
// value syntax (opensm.conf's cc_* options): one "name value" per line,
// '#' starting a comment line, numbers in C's notation (0x… hex, a leading
// 0 octal, else decimal). The per-SL CA options take "SL value" and may be
// given once per SL; cc_cct is a comma-separated list of shift:multiplier
// entries, CCTI_Limit being the last entry's index. Unlike OpenSM, which
// logs and skips what it cannot take, the parser is strict: an unknown
// option, a value out of its field's range or an option given twice is an
// error naming the line.

// MaxCCTEntries is the most cc_cct entries: CCTI_Limit is 14 bits.
const MaxCCTEntries = 1 << 14

// ErrConfig is the error of a congestion control file that does not
// parse; the message names the file and line.
var ErrConfig = errors.New("sm: bad congestion control configuration")

// Settings is what the congestion control manager programs.
type Settings struct {
	// Enabled is congestion_control: FALSE (OpenSM's default) leaves the
	// devices' congestion control as it is.
	Enabled bool
	// Key is cc_key, carried in every CC MAD and set in every node's
	// CongestionKeyInfo when not zero.
	Key uint64
	// MaxOutstanding is cc_max_outstanding_mads: the most CC MADs in
	// flight at once (0: the SM's window).
	MaxOutstanding uint32
	// Switch is SwitchCongestionSetting (cc_sw_cong_setting_*): its
	// ControlMap says which components a Set changes.
	Switch mad.SwitchCongestionSettingFields
	// CA is CACongestionSetting (cc_ca_cong_setting_*): PortControl, and
	// the entries of the SLs ControlMap selects.
	CA mad.CACongestionSettingFields
	// CCT is cc_cct, the CongestionControlTable entries
	// (mad.CCTEntry); CCTI_Limit is len-1, 0 when empty.
	CCT []uint16
}

// LoadSettings reads a congestion control file.
func LoadSettings(path string) (*Settings, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseSettings(f, path)
}

// ParseSettings reads congestion control options from r; name names
// it in errors.
func ParseSettings(r io.Reader, name string) (*Settings, error) {
	p := ccParser{c: &Settings{}, seen: map[string]int{}}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		key, val, _ := strings.Cut(text, " ")
		if k, v, ok := strings.Cut(text, "\t"); ok && len(k) < len(key) {
			key, val = k, v
		}
		if err := p.option(key, strings.TrimSpace(val), line); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %s: %w", ErrConfig, name, line, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s:%d: %w", ErrConfig, name, line+1, err)
	}
	return p.c, nil
}

type ccParser struct {
	c    *Settings
	seen map[string]int // option (with its SL for the per-SL ones) -> line
}

// ccOption parses one option's value into c.
type ccOption func(c *Settings, val string) error

// ccSLOption parses a per-SL CA option's value into entry e.
type ccSLOption func(e *mad.CACongestionEntry, val string) error

var ccOptions = map[string]ccOption{
	"congestion_control": func(c *Settings, v string) error { return parseBool(v, &c.Enabled) },
	"cc_key":             func(c *Settings, v string) error { return parseUint(v, 64, &c.Key) },
	"cc_max_outstanding_mads": func(c *Settings, v string) error {
		return parseUint(v, 32, &c.MaxOutstanding)
	},
	"cc_sw_cong_setting_control_map": func(c *Settings, v string) error {
		return parseUint(v, 32, &c.Switch.ControlMap)
	},
	"cc_sw_cong_setting_victim_mask": func(c *Settings, v string) error { return parseMask(v, &c.Switch.VictimMask) },
	"cc_sw_cong_setting_credit_mask": func(c *Settings, v string) error { return parseMask(v, &c.Switch.CreditMask) },
	"cc_sw_cong_setting_threshold":   func(c *Settings, v string) error { return parseUint(v, 4, &c.Switch.Threshold) },
	"cc_sw_cong_setting_packet_size": func(c *Settings, v string) error { return parseUint(v, 8, &c.Switch.PacketSize) },
	"cc_sw_cong_setting_credit_starvation_threshold": func(c *Settings, v string) error {
		return parseUint(v, 4, &c.Switch.CSThreshold)
	},
	"cc_sw_cong_setting_credit_starvation_return_delay": func(c *Settings, v string) error {
		return parseCCTEntry(v, &c.Switch.CSReturnDelay)
	},
	"cc_sw_cong_setting_marking_rate": func(c *Settings, v string) error {
		return parseUint(v, 16, &c.Switch.MarkingRate)
	},
	"cc_ca_cong_setting_port_control": func(c *Settings, v string) error {
		return parseUint(v, 16, &c.CA.PortControl)
	},
	"cc_ca_cong_setting_control_map": func(c *Settings, v string) error {
		return parseUint(v, 16, &c.CA.ControlMap)
	},
	"cc_cct": parseCCT,
}

var ccSLOptions = map[string]ccSLOption{
	"cc_ca_cong_setting_ccti_timer": func(e *mad.CACongestionEntry, v string) error {
		return parseUint(v, 16, &e.CCTITimer)
	},
	"cc_ca_cong_setting_ccti_increase": func(e *mad.CACongestionEntry, v string) error {
		return parseUint(v, 8, &e.CCTIIncrease)
	},
	"cc_ca_cong_setting_trigger_threshold": func(e *mad.CACongestionEntry, v string) error {
		return parseUint(v, 8, &e.TriggerThreshold)
	},
	"cc_ca_cong_setting_ccti_min": func(e *mad.CACongestionEntry, v string) error {
		return parseUint(v, 8, &e.CCTIMin)
	},
}

// option takes one line's option.
func (p *ccParser) option(key, val string, line int) error {
	if val == "" {
		return errors.New("no value")
	}
	id := key
	if set, ok := ccSLOptions[key]; ok {
		slText, v, ok := strings.Cut(val, " ")
		if !ok {
			slText, v, ok = strings.Cut(val, "\t")
		}
		if !ok {
			return fmt.Errorf("want \"SL value\", have %q", val)
		}
		var sl uint8
		if err := parseUint(slText, 8, &sl); err != nil || sl >= mad.CACongestionSLs {
			return fmt.Errorf("SL %q: want 0 to %d", slText, mad.CACongestionSLs-1)
		}
		id = fmt.Sprintf("%s %d", key, sl)
		if err := p.once(id, line); err != nil {
			return err
		}
		return set(&p.c.CA.Entries[sl], strings.TrimSpace(v))
	}
	set, ok := ccOptions[key]
	if !ok {
		return errors.New("unknown option")
	}
	if err := p.once(id, line); err != nil {
		return err
	}
	return set(p.c, val)
}

// once refuses an option given before.
func (p *ccParser) once(id string, line int) error {
	if first, dup := p.seen[id]; dup {
		return fmt.Errorf("given twice (first on line %d)", first)
	}
	p.seen[id] = line
	return nil
}

func parseBool(v string, out *bool) error {
	switch strings.ToUpper(v) {
	case "TRUE":
		*out = true
	case "FALSE":
		*out = false
	default:
		return fmt.Errorf("%q: want TRUE or FALSE", v)
	}
	return nil
}

// parseUint parses a C-notation number of at most bits bits into out.
func parseUint[T uint8 | uint16 | uint32 | uint64](v string, bits int, out *T) error {
	n, err := strconv.ParseUint(v, 0, 64)
	if err != nil || strings.Contains(v, "_") {
		return fmt.Errorf("%q is not a number", v)
	}
	if bits < 64 && n >= 1<<bits {
		return fmt.Errorf("%s does not fit in %d bits", v, bits)
	}
	*out = T(n)
	return nil
}

// parseMask parses a 256-bit port mask: up to 64 hex digits, with or
// without 0x, the last digit for ports 0 to 3 (bit n is port n).
func parseMask(v string, out *[mad.PortMaskSize]byte) error {
	digits := strings.TrimPrefix(strings.TrimPrefix(v, "0x"), "0X")
	if digits == "" || len(digits) > 2*mad.PortMaskSize {
		return fmt.Errorf("%q: want 1 to %d hex digits", v, 2*mad.PortMaskSize)
	}
	var m [mad.PortMaskSize]byte
	for i := range len(digits) {
		d, err := strconv.ParseUint(digits[len(digits)-1-i:len(digits)-i], 16, 8)
		if err != nil {
			return fmt.Errorf("%q: %q is not a hex digit", v, digits[len(digits)-1-i:len(digits)-i])
		}
		m[mad.PortMaskSize-1-i/2] |= byte(d) << (4 * (i % 2))
	}
	*out = m
	return nil
}

// parseCCTEntry parses "shift:multiplier" (shift 0-3, multiplier 14 bits)
// into a table entry.
func parseCCTEntry(v string, out *uint16) error {
	sh, mul, ok := strings.Cut(v, ":")
	if !ok {
		return fmt.Errorf("%q: want shift:multiplier", v)
	}
	var shift uint8
	var m uint16
	if err := parseUint(strings.TrimSpace(sh), 2, &shift); err != nil {
		return fmt.Errorf("shift: %w", err)
	}
	if err := parseUint(strings.TrimSpace(mul), 14, &m); err != nil {
		return fmt.Errorf("multiplier: %w", err)
	}
	*out = mad.CCTEntry(shift, m)
	return nil
}

// parseCCT parses cc_cct: shift:multiplier entries separated by commas.
func parseCCT(c *Settings, v string) error {
	parts := strings.Split(v, ",")
	if len(parts) > MaxCCTEntries {
		return fmt.Errorf("%d entries, at most %d", len(parts), MaxCCTEntries)
	}
	c.CCT = make([]uint16, len(parts))
	for i, e := range parts {
		if err := parseCCTEntry(strings.TrimSpace(e), &c.CCT[i]); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return nil
}

// CCTILimit returns the CCTI_Limit the table gives: its last index.
func (c *Settings) CCTILimit() uint16 {
	if len(c.CCT) == 0 {
		return 0
	}
	return uint16(len(c.CCT) - 1)
}

// cctBlocks returns the CongestionControlTable blocks c programs: those
// up to CCTI_Limit, at least one (an empty table sets CCTI_Limit 0).
func (c *Settings) cctBlocks() []mad.CongestionControlTableFields {
	n := max(1, (len(c.CCT)+mad.CCTEntriesPerBlock-1)/mad.CCTEntriesPerBlock)
	out := make([]mad.CongestionControlTableFields, n)
	for b := range out {
		out[b].CCTILimit = c.CCTILimit()
		copy(out[b].Entries[:], c.CCT[min(len(c.CCT), b*mad.CCTEntriesPerBlock):])
	}
	return out
}
