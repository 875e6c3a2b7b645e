package mad

import (
	"errors"
	"fmt"
	"strings"
)

// LinkWidth is a set of link widths: LinkWidthSupported and
// LinkWidthEnabled may hold several bits, LinkWidthActive exactly one.
type LinkWidth uint8

// Link widths (IBA 14.2.5.6; 2X is IBA 1.3's, valid only on a port whose
// CapabilityMask2 has IsLinkWidth2xSupported). LinkWidthEnabled also
// takes the two special values LinkWidthNoChange and
// LinkWidthSetToSupported.
const (
	LinkWidth1X  LinkWidth = 1 << 0
	LinkWidth4X  LinkWidth = 1 << 1
	LinkWidth8X  LinkWidth = 1 << 2
	LinkWidth12X LinkWidth = 1 << 3
	LinkWidth2X  LinkWidth = 1 << 4

	LinkWidthNoChange       LinkWidth = 0
	LinkWidthSetToSupported LinkWidth = 0xff
)

// Lanes returns the number of physical lanes of a single width, or 0 when w
// is not exactly one known width.
func (w LinkWidth) Lanes() int {
	switch w {
	case LinkWidth1X:
		return 1
	case LinkWidth2X:
		return 2
	case LinkWidth4X:
		return 4
	case LinkWidth8X:
		return 8
	case LinkWidth12X:
		return 12
	}
	return 0
}

// String lists the widths in w, e.g. "1X|4X".
func (w LinkWidth) String() string {
	return bitNames(uint8(w), []string{"1X", "4X", "8X", "12X", "2X"}, "LinkWidth")
}

// LinkSpeed is a set of lane speeds, every generation in one mask: the
// low nibble is PortInfo's LinkSpeed fields (SDR, DDR, QDR), the next
// its LinkSpeedExt fields (FDR, EDR, HDR, NDR: IBA 1.3, 1.4), bit 8 its
// LinkSpeedExt2 fields (XDR: IBA 1.5). One mask is what training,
// pacing and the agents work with; PortInfo splits it (Legacy, Ext,
// Ext2) and JoinSpeeds puts it back together. Supported and enabled
// sets may hold several bits, an active speed exactly one.
type LinkSpeed uint16

// Lane speeds.
const (
	LinkSpeedSDR LinkSpeed = 1 << 0 // 2.5 Gbaud, 8b/10b
	LinkSpeedDDR LinkSpeed = 1 << 1 // 5 Gbaud, 8b/10b
	LinkSpeedQDR LinkSpeed = 1 << 2 // 10 Gbaud, 8b/10b
	LinkSpeedFDR LinkSpeed = 1 << 4 // 14.0625 Gb/s, 64b/66b
	LinkSpeedEDR LinkSpeed = 1 << 5 // 25.78125 Gb/s, 64b/66b
	LinkSpeedHDR LinkSpeed = 1 << 6 // 53.125 Gb/s PAM4, RS-FEC
	LinkSpeedNDR LinkSpeed = 1 << 7 // 106.25 Gb/s PAM4, RS-FEC
	LinkSpeedXDR LinkSpeed = 1 << 8 // 212.5 Gb/s PAM4, RS-FEC

	// LinkSpeedNoChange and LinkSpeedSetToSupported are the special
	// values of the 4-bit LinkSpeedEnabled field of a Set.
	LinkSpeedNoChange       LinkSpeed = 0
	LinkSpeedSetToSupported LinkSpeed = 0x0f

	legacySpeeds LinkSpeed = LinkSpeedSDR | LinkSpeedDDR | LinkSpeedQDR
	extShift               = 4
	ext2Shift              = 8
)

// Speeds lists every lane speed from slowest to fastest.
var Speeds = []LinkSpeed{LinkSpeedSDR, LinkSpeedDDR, LinkSpeedQDR, LinkSpeedFDR, LinkSpeedEDR,
	LinkSpeedHDR, LinkSpeedNDR, LinkSpeedXDR}

// speedNames are the names of LinkSpeed's bits, bit by bit ("" unused).
var speedNames = []string{"SDR", "DDR", "QDR", "", "FDR", "EDR", "HDR", "NDR", "XDR"}

// String lists the speeds in s, e.g. "SDR|DDR"; unknown bits print as
// "LinkSpeed(0x..)".
func (s LinkSpeed) String() string {
	if s == 0 {
		return "0"
	}
	var parts []string
	var rest LinkSpeed
	for i := 0; i < 16; i++ {
		b := LinkSpeed(1) << i
		switch {
		case s&b == 0:
		case i < len(speedNames) && speedNames[i] != "":
			parts = append(parts, speedNames[i])
		default:
			rest |= b
		}
	}
	if rest != 0 {
		parts = append(parts, fmt.Sprintf("LinkSpeed(%#x)", uint16(rest)))
	}
	return strings.Join(parts, "|")
}

// Legacy returns the bits of s that PortInfo's LinkSpeed fields carry.
func (s LinkSpeed) Legacy() LinkSpeed { return s & legacySpeeds }

// Ext returns the bits of s that PortInfo's LinkSpeedExt fields carry.
func (s LinkSpeed) Ext() LinkSpeedExt { return LinkSpeedExt(s >> extShift & 0x0f) }

// Ext2 returns the bits of s that PortInfo's LinkSpeedExt2 fields carry.
func (s LinkSpeed) Ext2() LinkSpeedExt2 { return LinkSpeedExt2(s >> ext2Shift & 0x03) }

// JoinSpeeds is the one mask of a legacy, an extended and an extended-2
// field (Legacy, Ext and Ext2 split it). Special values (NoChange,
// SetToSupported, Disabled) are not speeds: the caller handles them.
func JoinSpeeds(l LinkSpeed, e LinkSpeedExt, e2 LinkSpeedExt2) LinkSpeed {
	return l.Legacy() | LinkSpeed(e&0x0f)<<extShift | LinkSpeed(e2&0x03)<<ext2Shift
}

// Fastest returns the fastest speed of the set s, 0 for an empty set.
func (s LinkSpeed) Fastest() LinkSpeed {
	for i := len(Speeds) - 1; i >= 0; i-- {
		if s&Speeds[i] != 0 {
			return Speeds[i]
		}
	}
	return 0
}

// UpTo returns s and every slower speed: what silicon of speed s
// supports (an NDR port trains at HDR, EDR, … SDR too).
func (s LinkSpeed) UpTo() LinkSpeed {
	var m LinkSpeed
	for _, x := range Speeds {
		if x <= s {
			m |= x
		}
	}
	return m
}

// LinkSpeedExt is PortInfo's LinkSpeedExtSupported, Enabled and Active
// encoding (IBA 1.3 14.2.5.6; HDR 1.4, NDR 1.5). LinkSpeedExtEnabled is
// 5 bits and also takes NoChange (0), Disabled (30) and SetToSupported
// (31).
type LinkSpeedExt uint8

// Extended speeds.
const (
	LinkSpeedExtFDR LinkSpeedExt = 1 << 0 // 14.0625 Gb/s
	LinkSpeedExtEDR LinkSpeedExt = 1 << 1 // 25.78125 Gb/s
	LinkSpeedExtHDR LinkSpeedExt = 1 << 2 // 53.125 Gb/s
	LinkSpeedExtNDR LinkSpeedExt = 1 << 3 // 106.25 Gb/s

	LinkSpeedExtNoChange       LinkSpeedExt = 0
	LinkSpeedExtDisabled       LinkSpeedExt = 30
	LinkSpeedExtSetToSupported LinkSpeedExt = 31
)

// String names the speeds of e or its special value.
func (e LinkSpeedExt) String() string {
	switch e {
	case LinkSpeedExtDisabled:
		return "Disabled"
	case LinkSpeedExtSetToSupported:
		return "SetToSupported"
	}
	return JoinSpeeds(0, e, 0).String()
}

// LinkSpeedExt2 is PortInfo's LinkSpeedExtActive2, Supported2 and
// Enabled2 encoding (IBA 1.5: XDR, in the byte IBA 1.3 left reserved
// before LinkRoundTripLatency; valid only on a port whose CapabilityMask2
// has IsExtendedSpeeds2Supported). Enabled2 is 3 bits, 0 no change.
type LinkSpeedExt2 uint8

// Extended speeds 2.
const LinkSpeedExt2XDR LinkSpeedExt2 = 1 << 0 // 212.5 Gb/s

// String names the speeds of e.
func (e LinkSpeedExt2) String() string { return JoinSpeeds(0, 0, e).String() }

// laneRate is one lane's signalling rate and the fraction of it that is
// data: num/den.
type laneRate struct {
	signal   uint64 // bit/s (symbols/s for the 8b/10b speeds)
	num, den uint64
}

// laneRates gives each speed's data rate as the coding the pacer models:
//   - SDR, DDR, QDR: 8b/10b (IBA 1.2.1 §5.3), 80 % of the baud rate;
//   - FDR, EDR: 64b/66b (IBA 1.3 §5.3 extended speeds), so FDR carries
//     13.64 Gb/s and EDR 25.00 Gb/s per lane; EDR's optional RS-FEC is
//     not modelled;
//   - HDR, NDR, XDR: the lane signalling of IBA 1.4/1.5 (53.125,
//     106.25, 212.5 Gb/s) carries 256b/257b-transcoded data under
//     RS(544,514) FEC, the same lane coding as 50/100/200GBASE-R
//     (IEEE 802.3 clauses 134, 91), 514/544 × 256/257 = 16/17 of the
//     line: 50, 100 and 200 Gb/s of data per lane, FEC included.
var laneRates = map[LinkSpeed]laneRate{
	LinkSpeedSDR: {2_500_000_000, 8, 10},
	LinkSpeedDDR: {5_000_000_000, 8, 10},
	LinkSpeedQDR: {10_000_000_000, 8, 10},
	LinkSpeedFDR: {14_062_500_000, 64, 66},
	LinkSpeedEDR: {25_781_250_000, 64, 66},
	LinkSpeedHDR: {53_125_000_000, 16, 17},
	LinkSpeedNDR: {106_250_000_000, 16, 17},
	LinkSpeedXDR: {212_500_000_000, 16, 17},
}

// Signal returns one lane's signalling rate at a single speed in bit/s
// (symbols/s for SDR to QDR), 0 when s is not exactly one known speed.
func (s LinkSpeed) Signal() uint64 { return laneRates[s].signal }

// Baud returns the signalling rate of one lane of an 8b/10b speed (SDR,
// DDR, QDR) in symbols per second, 0 for any other value.
func (s LinkSpeed) Baud() uint64 {
	if s.Legacy() != s {
		return 0
	}
	return s.Signal()
}

// errNoRate is returned by DataRate for a width or speed that is not a
// single known value.
var errNoRate = errors.New("mad: data rate needs a single known width and speed")

// DataRate returns the data rate of a link of width w and speed s in bits
// per second: lanes × the lane's data rate under its coding (laneRates:
// 4X SDR = 8 Gb/s, 4X EDR = 100 Gb/s, 4X NDR = 400 Gb/s). Active width and
// speed are single values; a set of several, or a reserved one, is an
// error.
func DataRate(w LinkWidth, s LinkSpeed) (uint64, error) {
	lanes, r := w.Lanes(), laneRates[s]
	if lanes == 0 || r.signal == 0 {
		return 0, fmt.Errorf("%w: width %v, speed %v", errNoRate, w, s)
	}
	return uint64(lanes) * r.signal * r.num / r.den, nil // < 2^48: no overflow
}

// nominalTenths is each speed's nominal lane rate in 0.1 Gb/s, what rate
// codes and the kernel's sysfs rate count in (2.5, 5, 10, 14, 25, 50,
// 100, 200 Gb/s).
var nominalTenths = map[LinkSpeed]int{LinkSpeedSDR: 25, LinkSpeedDDR: 50, LinkSpeedQDR: 100,
	LinkSpeedFDR: 140, LinkSpeedEDR: 250, LinkSpeedHDR: 500, LinkSpeedNDR: 1000, LinkSpeedXDR: 2000}

// NominalRate returns a link's nominal rate in units of 0.1 Gb/s (4X NDR
// = 4000), what PathRecord rate codes and sysfs name; 0 when w or s is
// not a single known value.
func NominalRate(w LinkWidth, s LinkSpeed) int { return w.Lanes() * nominalTenths[s] }

// Rate codes of PathRecord, MultiPathRecord and MCMemberRecord (IBA
// 15.2.5.16, to 1.2 Tb/s of IBA 1.5) with their nominal rate in units of
// 0.5 Gb/s; the codes are not ordered by rate.
var rateHalfGbps = map[uint8]int{2: 5, 5: 10, 3: 20, 6: 40, 4: 60, 7: 80, 8: 120, 9: 160, 10: 240,
	11: 28, 12: 112, 13: 224, 14: 336, 15: 50, 16: 200, 17: 400, 18: 600, 19: 56, 20: 100, 21: 800, 22: 1200,
	23: 1600, 24: 2400}

// RateHalfGbps returns the nominal rate of a rate code in units of 0.5
// Gb/s, and false for a code that names none.
func RateHalfGbps(code uint8) (int, bool) { r, ok := rateHalfGbps[code]; return r, ok }

// RateCodes returns every rate code.
func RateCodes() []uint8 {
	out := make([]uint8, 0, len(rateHalfGbps))
	for c := range rateHalfGbps {
		out = append(out, c)
	}
	return out
}

// RateCode returns the rate code of a link of width w and speed s: the
// code of its nominal rate (4X NDR 21, 400 Gb/s; 4X XDR 23, 800 Gb/s),
// else the fastest code below it (12X XDR has none of its own); 0 when
// w or s is not a single known value.
func RateCode(w LinkWidth, s LinkSpeed) uint8 {
	v := NominalRate(w, s) / 5
	best := uint8(0)
	for c, r := range rateHalfGbps {
		if r <= v && (best == 0 || r > rateHalfGbps[best]) {
			best = c
		}
	}
	return best
}
