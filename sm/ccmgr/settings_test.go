package ccmgr_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/ccmgr"
	"ibfab/wire/mad"
)

// TestParseCCSettings reads every option in OpenSM's syntax.
func TestParseCCSettings(t *testing.T) {
	c, err := ccmgr.ParseSettings(strings.NewReader(`# OpenSM's names
congestion_control TRUE
cc_key 0x00000000000000ab
cc_max_outstanding_mads 500
cc_sw_cong_setting_control_map 0x0000001f
cc_sw_cong_setting_victim_mask 0x0000000000000000000000000000000000000000000000000000001ffffffffe
cc_sw_cong_setting_credit_mask 0x0
cc_sw_cong_setting_threshold 0x0f
cc_sw_cong_setting_packet_size 010
cc_sw_cong_setting_credit_starvation_threshold 2
cc_sw_cong_setting_credit_starvation_return_delay 1:300
cc_sw_cong_setting_marking_rate 0x000a
cc_ca_cong_setting_port_control 0x0001
cc_ca_cong_setting_control_map 0x0003

	cc_ca_cong_setting_ccti_timer 0 150
cc_ca_cong_setting_ccti_timer	1	0x20
cc_ca_cong_setting_ccti_increase 1 2
cc_ca_cong_setting_trigger_threshold 15 4
cc_ca_cong_setting_ccti_min 1 3
cc_cct 0:0, 1:2 ,3:16383
`), "opensm.conf")
	require.NoError(t, err)
	assert.True(t, c.Enabled)
	assert.EqualValues(t, 0xab, c.Key)
	assert.EqualValues(t, 500, c.MaxOutstanding)
	assert.EqualValues(t, 0x1f, c.Switch.ControlMap)
	assert.Equal(t, [mad.PortMaskSize]byte{27: 0x1f, 28: 0xff, 29: 0xff, 30: 0xff, 31: 0xfe}, c.Switch.VictimMask)
	assert.Zero(t, c.Switch.CreditMask)
	assert.EqualValues(t, 15, c.Switch.Threshold)
	assert.EqualValues(t, 8, c.Switch.PacketSize, "a leading 0 is octal, as strtoul reads it")
	assert.EqualValues(t, 2, c.Switch.CSThreshold)
	assert.Equal(t, mad.CCTEntry(1, 300), c.Switch.CSReturnDelay)
	assert.EqualValues(t, 10, c.Switch.MarkingRate)
	assert.EqualValues(t, 1, c.CA.PortControl)
	assert.EqualValues(t, 3, c.CA.ControlMap)
	assert.Equal(t, mad.CACongestionEntry{CCTITimer: 150}, c.CA.Entries[0])
	assert.Equal(t, mad.CACongestionEntry{CCTITimer: 0x20, CCTIIncrease: 2, CCTIMin: 3}, c.CA.Entries[1])
	assert.Equal(t, mad.CACongestionEntry{TriggerThreshold: 4}, c.CA.Entries[15])
	assert.Equal(t, []uint16{mad.CCTEntry(0, 0), mad.CCTEntry(1, 2), mad.CCTEntry(3, 16383)}, c.CCT)
	assert.EqualValues(t, 2, c.CCTILimit())

	off, err := ccmgr.ParseSettings(strings.NewReader("congestion_control FALSE\n"), "f")
	require.NoError(t, err)
	assert.False(t, off.Enabled)
}

// TestParseCCSettingsErrors: every mistake is an error naming the line.
func TestParseCCSettingsErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"unknown option", "congestion_control TRUE\ncc_threshold 3\n", "f:2: cc_threshold: unknown option"},
		{"no value", "\n\ncc_key\n", "f:3: cc_key: no value"},
		{"not a number", "cc_key 12g\n", "f:1: cc_key: \"12g\" is not a number"},
		{"negative", "cc_sw_cong_setting_marking_rate -1\n", "f:1"},
		{"threshold past 4 bits", "# c\ncc_sw_cong_setting_threshold 16\n", "f:2: cc_sw_cong_setting_threshold: 16 does not fit in 4 bits"},
		{"marking rate past 16 bits", "cc_sw_cong_setting_marking_rate 0x10000\n", "does not fit in 16 bits"},
		{"boolean", "congestion_control yes\n", "f:1: congestion_control: \"yes\": want TRUE or FALSE"},
		{"mask digit", "cc_sw_cong_setting_victim_mask 0x12z4\n", "f:1: cc_sw_cong_setting_victim_mask: \"0x12z4\": \"z\" is not a hex digit"},
		{"mask too long", "cc_sw_cong_setting_credit_mask 0x" + strings.Repeat("f", 65) + "\n", "want 1 to 64 hex digits"},
		{"return delay", "cc_sw_cong_setting_credit_starvation_return_delay 5\n", "want shift:multiplier"},
		{"cct shift", "cc_cct 0:1,4:2\n", "f:1: cc_cct: entry 1: shift: 4 does not fit in 2 bits"},
		{"cct multiplier", "cc_cct 0:16384\n", "entry 0: multiplier: 16384 does not fit in 14 bits"},
		{"cct entry", "cc_cct 0:1,,0:2\n", "entry 1"},
		{"per-SL without SL", "cc_ca_cong_setting_ccti_timer 150\n", "f:1: cc_ca_cong_setting_ccti_timer: want \"SL value\""},
		{"SL 16", "cc_ca_cong_setting_ccti_min 16 1\n", "SL \"16\": want 0 to 15"},
		{"per-SL value", "cc_ca_cong_setting_ccti_increase 1 256\n", "256 does not fit in 8 bits"},
		{"twice", "cc_key 1\n\ncc_key 2\n", "f:3: cc_key: given twice (first on line 1)"},
		{"one SL twice", "cc_ca_cong_setting_ccti_timer 3 1\ncc_ca_cong_setting_ccti_timer 3 2\n", "f:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ccmgr.ParseSettings(strings.NewReader(tt.text), "f")
			require.Error(t, err)
			assert.True(t, errors.Is(err, ccmgr.ErrConfig))
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	// Two SLs of one option are two options.
	_, err := ccmgr.ParseSettings(strings.NewReader("cc_ca_cong_setting_ccti_timer 3 1\ncc_ca_cong_setting_ccti_timer 4 2\n"), "f")
	assert.NoError(t, err)
}
