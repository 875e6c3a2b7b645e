package cc

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// CCTEntry is one entry of the congestion control table: the
// inter-packet delay is (the packet's time at the link rate >> Shift) ×
// Multiplier.
type CCTEntry struct {
	Shift      uint8  `json:"shift"`
	Multiplier uint16 `json:"multiplier"`
}

// CCConfig is the congestion control ibsm programs (--cc), in OpenSM's
// terms (its cc_* options), the same for IBA_CC and DRB: the schemes
// differ only in what the CAs do with a notification.
type CCConfig struct {
	Key uint64 `json:"cc_key"`
	// Switches: a port's VL counts as congested when its queue holds
	// (16 - Threshold)/16 of the VL's buffer; one eligible packet in
	// MarkingRate+1 is marked; packets under PacketSize 64-byte blocks
	// never are. Only roots are marked (no victim mask).
	Threshold   uint8  `json:"threshold"`
	MarkingRate uint16 `json:"marking_rate"`
	PacketSize  uint8  `json:"packet_size"`
	// CAs, per SL of SLs (0 to SLs-1: the flows' SL 0 and DRB's aliases
	// on SLs 1 to 3): CCTI += CCTIIncrease per BECN, -1 per CCTITimer
	// (1.024 µs units) down to CCTIMin; a CCTI reaching TriggerThreshold
	// is logged. DRB closes one alias per CCTITimer without notification.
	SLs              int    `json:"sls"`
	CCTITimer        uint16 `json:"ccti_timer"`
	CCTIIncrease     uint8  `json:"ccti_increase"`
	TriggerThreshold uint8  `json:"trigger_threshold"`
	CCTIMin          uint8  `json:"ccti_min"`
	// CCT is the table; its last index is CCTI_Limit.
	CCT []CCTEntry `json:"cct"`
}

// ccDefaultConfig is the experiments' congestion control. The VL buffers
// are 1024 blocks (port.DefaultRxBlocks, 31 packets of 2 KB): threshold
// 14 marks from 128 blocks, four packets queued, early enough that a
// hot link's queue is caught before it backs up into the switches before
// it. One packet in two is marked. The timer, 100 × 1.024 µs, is about
// fifty packet times at 8 Gb/s: a throttled source recovers one table
// step per fifty packets, and DRB keeps an alias open that long after
// the last notification (at another rate CCConfig.at keeps it fifty
// packet times). With 20 (ten packet times) DRB closed an alias
// before the traffic it carried had left the hot link and the hot spot's
// link stayed as loaded as without CC; with 300 the throttled sources of
// the load sweeps were still held back in the next point's window. The
// table is linear with shift 2: index i delays each packet by i/4 of its
// own time, so CCTI 4 halves a source's rate and the limit, 127, cuts it
// to 3 %.
func ccDefaultConfig() CCConfig {
	c := CCConfig{Threshold: 14, MarkingRate: 1, PacketSize: 1, SLs: 4,
		CCTITimer: 100, CCTIIncrease: 1, TriggerThreshold: 8, CCTIMin: 0}
	for i := range 128 {
		c.CCT = append(c.CCT, CCTEntry{Shift: 2, Multiplier: uint16(i)})
	}
	return c
}

// at is c at k times 4x SDR's rate: the CCTI timer, tuned in packet
// times, k times shorter (at least one unit). The table needs nothing: its
// delays are in the packet's own time at the link rate.
func (c CCConfig) at(k float64) CCConfig {
	c.CCTITimer = uint16(max(1, math.Round(float64(c.CCTITimer)/k)))
	return c
}

// ccConf is c as an OpenSM options file: what ibsm --cc reads (OpenSM's
// option names and syntax, so the same file configures OpenSM's CC
// manager).
func ccConf(c CCConfig) string {
	var b strings.Builder
	b.WriteString("# ibfab run cc: congestion control (OpenSM's cc_* options; ibsm --cc)\n")
	b.WriteString("congestion_control TRUE\n")
	fmt.Fprintf(&b, "cc_key 0x%016x\n", c.Key)
	b.WriteString("cc_max_outstanding_mads 500\n")
	// Every field of SwitchCongestionSetting is valid (Control_Map
	// bits 0-4): the masks, threshold and packet size, credit
	// starvation, marking rate.
	b.WriteString("cc_sw_cong_setting_control_map 0x0000001f\n")
	zero256 := "0x" + strings.Repeat("0", 64)
	fmt.Fprintf(&b, "cc_sw_cong_setting_victim_mask %s\n", zero256)
	fmt.Fprintf(&b, "cc_sw_cong_setting_credit_mask %s\n", zero256)
	fmt.Fprintf(&b, "cc_sw_cong_setting_threshold 0x%x\n", c.Threshold)
	fmt.Fprintf(&b, "cc_sw_cong_setting_packet_size %d\n", c.PacketSize)
	b.WriteString("cc_sw_cong_setting_credit_starvation_threshold 0x0\n")
	b.WriteString("cc_sw_cong_setting_credit_starvation_return_delay 0:0\n")
	fmt.Fprintf(&b, "cc_sw_cong_setting_marking_rate 0x%04x\n", c.MarkingRate)
	// Port_Control bit 0: congestion control per SL, not per QP.
	b.WriteString("cc_ca_cong_setting_port_control 0x0001\n")
	fmt.Fprintf(&b, "cc_ca_cong_setting_control_map 0x%04x\n", uint16(1)<<c.SLs-1)
	for sl := range c.SLs {
		fmt.Fprintf(&b, "cc_ca_cong_setting_ccti_timer %d %d\n", sl, c.CCTITimer)
		fmt.Fprintf(&b, "cc_ca_cong_setting_ccti_increase %d %d\n", sl, c.CCTIIncrease)
		fmt.Fprintf(&b, "cc_ca_cong_setting_trigger_threshold %d %d\n", sl, c.TriggerThreshold)
		fmt.Fprintf(&b, "cc_ca_cong_setting_ccti_min %d %d\n", sl, c.CCTIMin)
	}
	cct := make([]string, len(c.CCT))
	for i, e := range c.CCT {
		cct[i] = fmt.Sprintf("%d:%d", e.Shift, e.Multiplier)
	}
	fmt.Fprintf(&b, "cc_cct %s\n", strings.Join(cct, ","))
	return b.String()
}

// writeCCConf writes c's file to dir, or to a temporary directory that
// release removes when dir is "".
func writeCCConf(dir string, c CCConfig) (path string, release func(), err error) {
	release = func() {}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ibfab-cc-"); err != nil {
			return "", nil, err
		}
		d := dir
		release = func() { os.RemoveAll(d) }
	}
	path = filepath.Join(dir, "cc.conf")
	if err := os.WriteFile(path, []byte(ccConf(c)), 0o644); err != nil {
		release()
		return "", nil, err
	}
	return path, release, nil
}
