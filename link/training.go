package link

import (
	"encoding/binary"
	"errors"
	"fmt"

	"ibfab/wire/mad"
)

// Training is what a port tells its peer while the link trains: the link
// widths and speeds it has enabled (PortInfo LinkWidthEnabled and
// LinkSpeedEnabled). On InfiniBand silicon the two ends agree on width and
// speed in physical-layer training (TS1/TS2 ordered sets), below the
// packet layer; here a training frame carries the same information, and
// both ends pick the widest width and the fastest speed they have both
// enabled (Negotiate).
//
// On the wire, after the Ethernet header with EtherTypeTraining, a
// training frame is an OUI-extended EtherType payload:
//
//	offset 0: OUI 00-00-00      (3 bytes)
//	offset 3: protocol 0x4954   (2 bytes, "IT")
//	offset 5: version 2
//	offset 6: LinkWidthEnabled  (mad.LinkWidth bits)
//	offset 7: enabled speeds    (mad.LinkSpeed bits, 2 bytes big-endian:
//	          LinkSpeedEnabled, LinkSpeedExtEnabled, LinkSpeedExtEnabled2
//	          in one mask)
//	offset 9: flags: bit 0 Reply
//
// Version 1 had a one-byte speed (SDR to QDR only); a version-1 frame is
// refused, since both ends of a link are the same build.
//
// A training port sends its frame with every round of training signals; a
// port whose link is up answers a training peer's frame with a Reply,
// which is never answered, so that a peer that missed the first one still
// learns what it needs to come up.
type Training struct {
	Width mad.LinkWidth
	Speed mad.LinkSpeed
	Reply bool
}

// Training frame layout.
const (
	TrainingSize     = 10
	trainingProtocol = 0x4954
	trainingVersion  = 2
	trainingWidthOff = 6
	trainingSpeedOff = 7
	trainingFlagsOff = 9
	trainingReply    = 1 << 0
)

// ErrTraining is wrapped by ParseTraining's errors.
var ErrTraining = errors.New("link: bad training frame")

// AppendTraining appends t's training frame payload to dst.
func AppendTraining(dst []byte, t Training) []byte {
	var flags uint8
	if t.Reply {
		flags |= trainingReply
	}
	return append(dst, 0, 0, 0, trainingProtocol>>8, trainingProtocol&0xff, trainingVersion,
		uint8(t.Width), uint8(t.Speed>>8), uint8(t.Speed), flags)
}

// ParseTraining decodes a training frame payload. Bytes past TrainingSize
// (the medium's padding) are ignored.
func ParseTraining(b []byte) (Training, error) {
	switch {
	case len(b) < TrainingSize:
		return Training{}, fmt.Errorf("%w: %d bytes", ErrTraining, len(b))
	case b[0] != 0 || b[1] != 0 || b[2] != 0 || uint16(b[3])<<8|uint16(b[4]) != trainingProtocol:
		return Training{}, fmt.Errorf("%w: OUI/protocol % x", ErrTraining, b[:5])
	case b[5] != trainingVersion:
		return Training{}, fmt.Errorf("%w: version %d", ErrTraining, b[5])
	case b[trainingFlagsOff]&^trainingReply != 0:
		return Training{}, fmt.Errorf("%w: flags %#x", ErrTraining, b[trainingFlagsOff])
	}
	t := Training{Width: mad.LinkWidth(b[trainingWidthOff]), Speed: mad.LinkSpeed(binary.BigEndian.Uint16(b[trainingSpeedOff:])),
		Reply: b[trainingFlagsOff]&trainingReply != 0}
	if t.Width == 0 || t.Speed == 0 {
		return Training{}, fmt.Errorf("%w: nothing enabled (width %#x, speed %#x)", ErrTraining, uint8(t.Width), uint16(t.Speed))
	}
	return t, nil
}

// Widths from widest to narrowest, speeds from fastest to slowest: the
// order Negotiate prefers them in.
var (
	widthOrder = []mad.LinkWidth{mad.LinkWidth12X, mad.LinkWidth8X, mad.LinkWidth4X, mad.LinkWidth2X, mad.LinkWidth1X}
)

// Negotiate returns the width and speed a link trains at when its ends
// have enabled a and b: the widest width and the fastest speed both have
// enabled, and false when they share no width or no speed (the link does
// not come up).
func Negotiate(a, b Training) (mad.LinkWidth, mad.LinkSpeed, bool) {
	w, s := Highest(a.Width&b.Width, a.Speed&b.Speed)
	return w, s, w != 0 && s != 0
}

// Highest returns the widest width of the set w and the fastest speed of
// the set s, 0 for an empty set.
func Highest(w mad.LinkWidth, s mad.LinkSpeed) (mad.LinkWidth, mad.LinkSpeed) {
	var hw mad.LinkWidth
	for _, x := range widthOrder {
		if w&x != 0 {
			hw = x
			break
		}
	}
	return hw, s.Fastest()
}

// Supported returns the widths and speeds a port whose cable runs at
// width w and speed s supports: the narrower widths and slower speeds
// silicon of that width and speed trains at too (a 4X port 1X and 4X, a
// 12X port 1X, 4X and 12X, an 8X port 1X, 4X and 8X, a 2X port 1X and
// 2X; a port of HDR or faster 2X too, as IBA 1.3's 2X came with the
// silicon of HDR; a QDR port SDR, DDR and QDR, an NDR port every speed
// to NDR). (ibsim 0.12 gives every port 1X to 12X and FDR to NDR
// whatever its cable: docs/results.md, 2026-12-03.)
func Supported(w mad.LinkWidth, s mad.LinkSpeed) (mad.LinkWidth, mad.LinkSpeed) {
	var sw mad.LinkWidth
	switch w {
	case mad.LinkWidth1X:
		sw = mad.LinkWidth1X
	case mad.LinkWidth2X:
		sw = mad.LinkWidth1X | mad.LinkWidth2X
	case mad.LinkWidth4X:
		sw = mad.LinkWidth1X | mad.LinkWidth4X
	case mad.LinkWidth8X:
		sw = mad.LinkWidth1X | mad.LinkWidth4X | mad.LinkWidth8X
	case mad.LinkWidth12X:
		sw = mad.LinkWidth1X | mad.LinkWidth4X | mad.LinkWidth12X
	}
	if s >= mad.LinkSpeedHDR && sw&mad.LinkWidth4X != 0 {
		sw |= mad.LinkWidth2X
	}
	return sw, s.UpTo()
}
