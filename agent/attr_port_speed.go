package agent

import "ibfab/wire/mad"

// PortInfo's speed fields. The data plane keeps one mask of every speed
// (mad.LinkSpeed); PortInfo spreads it over LinkSpeed (SDR to QDR),
// LinkSpeedExt (FDR to NDR, IBA 1.3/1.4) and LinkSpeedExt2 (XDR, IBA 1.5),
// and CapabilityMask/CapabilityMask2 say which of them a port has.
//
// A link at an extended speed keeps a legacy LinkSpeedActive (the fastest
// legacy speed the port enables, QDR) as ibsim 0.12 and the silicon it
// models do; readers take LinkSpeedExtActive first (OpenSM's
// ib_port_info_compute_rate, libibnetdisc). LinkSpeedExtEnabled reads 30,
// Disabled, when a port with extended speeds has none enabled.
//
// Gets answer every field whatever bit 31 of the modifier says
// (infiniband-diags never sets it, and iblinkinfo prints extended speeds
// on real fabrics). A Set applies LinkSpeedExtEnabled and
// LinkSpeedExtEnabled2 only with bit 31 (SMSupportsExtendedSpeeds): an
// SM of IBA 1.2.1 sends the bytes as reserved zeros, and OpenSM sets the
// bit on its Sets to ports whose CapabilityMask has
// IsExtendedSpeedsSupported (osm_link_mgr.c), as ibportstate does for
// espeed. OpenSM 3.3.24 re-reads a port with the bit when its first Get
// lacked it, for switches that leave the extended fields out of such an
// answer (opensm pull request 39); ibfab's answers need no second read.

// setLinkRate writes the live widths and speeds ls into pi, and when caps
// the CapabilityMask and CapabilityMask2 bits of what the port supports.
func setLinkRate(pi mad.PortInfo, ls LinkState, caps bool) {
	pi.SetLinkWidthActive(ls.Width)
	if ls.WidthSupported != 0 {
		pi.SetLinkWidthSupported(ls.WidthSupported)
		pi.SetLinkWidthEnabled(ls.WidthEnabled)
	}
	act := ls.Speed.Legacy()
	if act == 0 {
		act = ls.SpeedEnabled.Legacy().Fastest()
	}
	pi.SetLinkSpeedActive(act)
	pi.SetLinkSpeedExtActive(ls.Speed.Ext())
	pi.SetLinkSpeedExtActive2(ls.Speed.Ext2())
	if ls.SpeedSupported == 0 {
		return
	}
	sup, en := ls.SpeedSupported, ls.SpeedEnabled
	pi.SetLinkSpeedSupported(sup.Legacy())
	pi.SetLinkSpeedEnabled(en.Legacy())
	pi.SetLinkSpeedExtSupported(sup.Ext())
	pi.SetLinkSpeedExtSupported2(sup.Ext2())
	pi.SetLinkSpeedExtEnabled(extEnabledField(sup, en))
	pi.SetLinkSpeedExtEnabled2(en.Ext2())
	if caps {
		c, c2 := mad.WithRateCapabilities(pi.CapabilityMask(), pi.CapabilityMask2(), pi.LinkWidthSupported(), sup)
		pi.SetCapabilityMask(c)
		pi.SetCapabilityMask2(c2)
	}
}

// extEnabledField is LinkSpeedExtEnabled of a port supporting sup with en
// enabled: its extended speeds, Disabled when it has some and enables
// none, 0 when it has none.
func extEnabledField(sup, en mad.LinkSpeed) mad.LinkSpeedExt {
	if e := en.Ext(); e != 0 || (sup.Ext() == 0 && sup.Ext2() == 0) {
		return e
	}
	if en.Ext2() != 0 {
		return 0 // XDR alone: nothing of Ext's four
	}
	return mad.LinkSpeedExtDisabled
}

// enabledSpeeds returns the whole set of speeds a Set(PortInfo) enables,
// legacy the LinkSpeedEnabled part enabledLink resolved (0: no change),
// or 0 when nothing changes; ok false for extended speeds the port does
// not support. The extended fields count only with bit 31 of the
// modifier, on a live port whose data plane keeps its speeds:
//
//	LinkSpeedExtEnabled  0       extended speeds unchanged (XDR as Enabled2 says, if non-zero)
//	                     1..15   exactly these, and XDR as Enabled2 says
//	                     30      none (XDR as Enabled2 says)
//	                     31      every one supported, XDR included
//	other values are invalid; Enabled2 counts on ports with XDR only.
func enabledSpeeds(c *smpCtx, req *mad.PortInfoFields, legacy mad.LinkSpeed, live bool) (mad.LinkSpeed, bool) {
	sup, cur := c.link.SpeedSupported, c.link.SpeedEnabled
	if !live || sup == 0 {
		return legacy, true
	}
	e, e2 := req.LinkSpeedExtEnabled, req.LinkSpeedExtEnabled2
	if c.mod&mad.PortInfoSMSupportsExtendedSpeeds == 0 {
		e, e2 = 0, 0 // an SM that does not know the fields
	}
	if sup.Ext2() == 0 {
		e2 = 0
	}
	ext, changed := cur&^legacySpeeds, legacy != 0
	switch {
	case e == mad.LinkSpeedExtNoChange:
	case e == mad.LinkSpeedExtSetToSupported:
		ext, changed = sup&^legacySpeeds, true
	case e == mad.LinkSpeedExtDisabled:
		ext, changed = 0, true
	case e <= mad.LinkSpeedExtFDR|mad.LinkSpeedExtEDR|mad.LinkSpeedExtHDR|mad.LinkSpeedExtNDR:
		ext, changed = mad.JoinSpeeds(0, e, 0), true // no XDR unless Enabled2 names it
	default:
		return 0, false
	}
	if e2 != 0 {
		ext, changed = ext&^mad.JoinSpeeds(0, 0, 3)|mad.JoinSpeeds(0, 0, e2), true
	}
	if !changed {
		return 0, true
	}
	if legacy == 0 {
		legacy = cur.Legacy()
	}
	if all := legacy | ext; all&^sup == 0 {
		return all, true
	}
	return 0, false
}

// legacySpeeds is the mask of the speeds PortInfo's LinkSpeed fields
// carry.
const legacySpeeds = mad.LinkSpeedSDR | mad.LinkSpeedDDR | mad.LinkSpeedQDR
