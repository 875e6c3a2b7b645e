package port

import (
	"fmt"

	"ibfab/link"
	"ibfab/wire/mad"
)

// Link width and speed (IBA §5.6, PortInfo LinkWidth*/LinkSpeed*). A port
// supports what silicon of its cable's rate (Config.Width and Speed)
// trains at (link.Supported), enables all of it out of reset, and trains
// at the widest width and fastest speed both ends have enabled: each end
// sends its enabled sets in a training frame (link.Training, physical-layer
// signalling that is not part of the IBA packet stream) with its training
// signals, and the link comes up once a port has its peer's frame and its
// flow-control packets. The pacer runs at the rate negotiated. A change of
// the enabled sets takes effect the next time the link trains.

// LinkRate is a port's link widths and speeds as PortInfo reports them.
type LinkRate struct {
	WidthSupported, WidthEnabled, WidthActive mad.LinkWidth
	SpeedSupported, SpeedEnabled, SpeedActive mad.LinkSpeed
}

// ErrLinkEnabled is wrapped by SetLinkEnabled's error for sets the port
// does not support.
var ErrLinkEnabled = fmt.Errorf("port: link width or speed not supported")

// LinkRate returns the port's supported, enabled and active widths and
// speeds. Active is what the link last trained at; before it ever did,
// the rate its cable runs at.
func (p *Port) LinkRate() LinkRate {
	p.mu.Lock()
	defer p.mu.Unlock()
	return LinkRate{
		WidthSupported: p.supW, WidthEnabled: p.enW, WidthActive: p.actW,
		SpeedSupported: p.supS, SpeedEnabled: p.enS, SpeedActive: p.actS,
	}
}

// SetLinkEnabled sets the widths and speeds the port may train at from
// the next training on (PortInfo LinkWidthEnabled, LinkSpeedEnabled); 0
// leaves one unchanged. A set the port does not support, whole, is
// ErrLinkEnabled, and nothing changes.
func (p *Port) SetLinkEnabled(w mad.LinkWidth, s mad.LinkSpeed) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w&^p.supW != 0 || s&^p.supS != 0 {
		return fmt.Errorf("%w: width %v speed %v (supported %v, %v)", ErrLinkEnabled, w, s, p.supW, p.supS)
	}
	if w != 0 {
		p.enW = w
	}
	if s != 0 {
		p.enS = s
	}
	return nil
}

// trainingLocked returns the training frame the port sends.
func (p *Port) trainingLocked(reply bool) link.Training {
	return link.Training{Width: p.enW, Speed: p.enS, Reply: reply}
}

// deliverTraining handles the peer's training frame: the port learns what
// the peer has enabled. A port whose link is up while the peer trains
// answers with its own frame and its flow-control packets, so that a peer
// that missed the first ones comes up at once; if what the peer now
// enables does not give the rate the link runs at, the link retrains, so
// that both ends agree on it again.
func (p *Port) deliverTraining(b []byte) {
	t, err := link.ParseTraining(b)
	p.mu.Lock()
	defer p.unlock()
	if p.closed || !p.linkSendOKLocked() {
		return // a dark port hears nothing
	}
	if err != nil {
		p.dropLocked(DropMalformed, false)
		return
	}
	p.lc.TrainingReceived++
	p.peer, p.peerKnown = t, true
	if p.phys != physLinkUp {
		return
	}
	if w, s, ok := p.negotiateLocked(); !ok || w != p.actW || s != p.actS {
		if !p.retrainLocked() {
			p.downLocked(physPolling, true)
			p.startTrainingLocked()
		}
		return
	}
	if !t.Reply {
		p.tsDue, p.tsReply = true, true
		p.fcDue |= p.allVLsMask()
		p.kickLocked()
	}
}

// negotiateLocked returns the width and speed the link trains at with the
// peer's frame known, and false when there is none yet or the two ends
// share no width or speed: the link stays in training.
func (p *Port) negotiateLocked() (mad.LinkWidth, mad.LinkSpeed, bool) {
	if !p.peerKnown {
		return 0, 0, false
	}
	return link.Negotiate(p.trainingLocked(false), p.peer)
}

// setActiveLocked makes (w, s) the link's active width and speed and paces
// the transmitter at their data rate.
func (p *Port) setActiveLocked(w mad.LinkWidth, s mad.LinkSpeed) {
	rate, err := mad.DataRate(w, s)
	if err != nil {
		return // Negotiate gives single, known bits
	}
	p.actW, p.actS = w, s
	p.pace.rate = rate
	p.rate.Store(rate)
}
