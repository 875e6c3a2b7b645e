package opensmrun

import (
	"fmt"
	"strings"

	"ibfab/sm"
	"ibfab/sm/qos"
)

// QoSConf is the generic QoS section of an opensm.conf, the qos_* options.
// OpenSM builds each port type's tables from its own options (qos_ca_*,
// qos_sw0_*, qos_swe_*, qos_rtr_*) and, where a type has none, from these,
// so they alone put the same tables on every port. It takes effect with
// -Q (or "qos TRUE", which Lines writes too).
type QoSConf struct {
	MaxVLs    int // qos_max_vls
	HighLimit int // qos_high_limit: LimitOfHighPriority, in 4 KiB units
	// High and Low are the arbitration tables (qos_vlarb_high,
	// qos_vlarb_low). OpenSM reads 64 entries from each and zeroes what
	// the list lacks; an empty table is written as 0:0, since an empty
	// option would leave OpenSM's own default table in place.
	High, Low []ArbEntry
	SL2VL     [16]uint8 // qos_sl2vl: the VL of each SL
}

// ArbEntry is one VL arbitration table entry.
type ArbEntry struct{ VL, Weight int }

// Lines returns the options, one a line, as opensm.conf holds them.
func (q QoSConf) Lines() []string {
	table := func(es []ArbEntry) string {
		if len(es) == 0 {
			return "0:0"
		}
		s := make([]string, len(es))
		for i, e := range es {
			s[i] = fmt.Sprintf("%d:%d", e.VL, e.Weight)
		}
		return strings.Join(s, ",")
	}
	sl2vl := make([]string, len(q.SL2VL))
	for i, vl := range q.SL2VL {
		sl2vl[i] = fmt.Sprint(vl)
	}
	return []string{
		"qos TRUE",
		fmt.Sprintf("qos_max_vls %d", q.MaxVLs),
		fmt.Sprintf("qos_high_limit %d", q.HighLimit),
		"qos_vlarb_high " + table(q.High),
		"qos_vlarb_low " + table(q.Low),
		"qos_sl2vl " + strings.Join(sl2vl, ","),
	}
}

// String is Lines as the text of a file.
func (q QoSConf) String() string { return strings.Join(q.Lines(), "\n") + "\n" }

// IBSMQoS is the QoS configuration under which OpenSM writes what
// ibsm --qos writes on ports of 8 data VLs running mtu: SL n on VL n,
// best effort (VL0) alone in the low-priority table with ibsm's weight,
// ibsm's LimitOfHighPriority, and high, the reservations, as the
// high-priority table (none: an empty one, as ibsm's without flows).
func IBSMQoS(mtu int, high []ArbEntry) (QoSConf, error) {
	m, err := qos.NewManager(qos.Params{})
	if err != nil {
		return QoSConf{}, err
	}
	return QoSConf{MaxVLs: 8, HighLimit: int(m.HighLimit(mtu)), High: high,
		Low: []ArbEntry{{VL: 0, Weight: sm.DefaultVLArbWeight}}, SL2VL: qos.SLtoVL(8)}, nil
}
