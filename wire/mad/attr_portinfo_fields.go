package mad

// PortInfoFields holds every PortInfo field, for building and for reading
// a whole attribute at once. Narrow fields keep only their low bits when
// encoded.
type PortInfoFields struct {
	MKey                                uint64
	GIDPrefix                           uint64
	LID                                 uint16
	MasterSMLID                         uint16
	CapabilityMask                      uint32
	DiagCode                            uint16
	MKeyLeasePeriod                     uint16
	LocalPortNum                        uint8
	LinkWidthEnabled                    LinkWidth
	LinkWidthSupported                  LinkWidth
	LinkWidthActive                     LinkWidth
	LinkSpeedSupported                  LinkSpeed
	PortState                           PortState
	PortPhysicalState                   PhysState
	LinkDownDefaultState                PhysState
	MKeyProtectBits                     uint8
	LMC                                 uint8
	LinkSpeedActive                     LinkSpeed
	LinkSpeedEnabled                    LinkSpeed
	NeighborMTU                         MTU
	MasterSMSL                          uint8
	VLCap                               uint8
	InitType                            uint8
	VLHighLimit                         uint8
	VLArbitrationHighCap                uint8
	VLArbitrationLowCap                 uint8
	InitTypeReply                       uint8
	MTUCap                              MTU
	VLStallCount                        uint8
	HOQLife                             uint8
	OperationalVLs                      uint8
	PartitionEnforcementInbound         bool
	PartitionEnforcementOutbound        bool
	FilterRawInbound                    bool
	FilterRawOutbound                   bool
	MKeyViolations                      uint16
	PKeyViolations                      uint16
	QKeyViolations                      uint16
	GUIDCap                             uint8
	ClientReregister                    bool
	MulticastPKeyTrapSuppressionEnabled uint8
	SubnetTimeOut                       uint8
	RespTimeValue                       uint8
	LocalPhyErrors                      uint8
	OverrunErrors                       uint8
	MaxCreditHint                       uint16
	LinkRoundTripLatency                uint32
	CapabilityMask2                     uint16
	LinkSpeedExtActive                  LinkSpeedExt
	LinkSpeedExtSupported               LinkSpeedExt
	LinkSpeedExtEnabled                 LinkSpeedExt
	LinkSpeedExtActive2                 LinkSpeedExt2
	LinkSpeedExtSupported2              LinkSpeedExt2
	LinkSpeedExtEnabled2                LinkSpeedExt2
}

// SpeedActive returns the speed the link is active at, from the
// extended fields first (PortInfo.SpeedActive).
func (f *PortInfoFields) SpeedActive() LinkSpeed {
	return activeSpeed(f.LinkSpeedActive, f.LinkSpeedExtActive, f.LinkSpeedExtActive2)
}

// Encode writes f into p[:PortInfoSize], reserved bits zero. p must be
// valid.
func (p PortInfo) Encode(f *PortInfoFields) {
	clear(p[:PortInfoSize])
	p.SetMKey(f.MKey)
	p.SetGIDPrefix(f.GIDPrefix)
	p.SetLID(f.LID)
	p.SetMasterSMLID(f.MasterSMLID)
	p.SetCapabilityMask(f.CapabilityMask)
	p.SetDiagCode(f.DiagCode)
	p.SetMKeyLeasePeriod(f.MKeyLeasePeriod)
	p.SetLocalPortNum(f.LocalPortNum)
	p.SetLinkWidthEnabled(f.LinkWidthEnabled)
	p.SetLinkWidthSupported(f.LinkWidthSupported)
	p.SetLinkWidthActive(f.LinkWidthActive)
	p.SetLinkSpeedSupported(f.LinkSpeedSupported)
	p.SetPortState(f.PortState)
	p.SetPortPhysicalState(f.PortPhysicalState)
	p.SetLinkDownDefaultState(f.LinkDownDefaultState)
	p.SetMKeyProtectBits(f.MKeyProtectBits)
	p.SetLMC(f.LMC)
	p.SetLinkSpeedActive(f.LinkSpeedActive)
	p.SetLinkSpeedEnabled(f.LinkSpeedEnabled)
	p.SetNeighborMTU(f.NeighborMTU)
	p.SetMasterSMSL(f.MasterSMSL)
	p.SetVLCap(f.VLCap)
	p.SetInitType(f.InitType)
	p.SetVLHighLimit(f.VLHighLimit)
	p.SetVLArbitrationHighCap(f.VLArbitrationHighCap)
	p.SetVLArbitrationLowCap(f.VLArbitrationLowCap)
	p.SetInitTypeReply(f.InitTypeReply)
	p.SetMTUCap(f.MTUCap)
	p.SetVLStallCount(f.VLStallCount)
	p.SetHOQLife(f.HOQLife)
	p.SetOperationalVLs(f.OperationalVLs)
	p.SetPartitionEnforcementInbound(f.PartitionEnforcementInbound)
	p.SetPartitionEnforcementOutbound(f.PartitionEnforcementOutbound)
	p.SetFilterRawInbound(f.FilterRawInbound)
	p.SetFilterRawOutbound(f.FilterRawOutbound)
	p.SetMKeyViolations(f.MKeyViolations)
	p.SetPKeyViolations(f.PKeyViolations)
	p.SetQKeyViolations(f.QKeyViolations)
	p.SetGUIDCap(f.GUIDCap)
	p.SetClientReregister(f.ClientReregister)
	p.SetMulticastPKeyTrapSuppressionEnabled(f.MulticastPKeyTrapSuppressionEnabled)
	p.SetSubnetTimeOut(f.SubnetTimeOut)
	p.SetRespTimeValue(f.RespTimeValue)
	p.SetLocalPhyErrors(f.LocalPhyErrors)
	p.SetOverrunErrors(f.OverrunErrors)
	p.SetMaxCreditHint(f.MaxCreditHint)
	p.SetLinkRoundTripLatency(f.LinkRoundTripLatency)
	p.SetCapabilityMask2(f.CapabilityMask2)
	p.SetLinkSpeedExtActive(f.LinkSpeedExtActive)
	p.SetLinkSpeedExtSupported(f.LinkSpeedExtSupported)
	p.SetLinkSpeedExtEnabled(f.LinkSpeedExtEnabled)
	p.SetLinkSpeedExtActive2(f.LinkSpeedExtActive2)
	p.SetLinkSpeedExtSupported2(f.LinkSpeedExtSupported2)
	p.SetLinkSpeedExtEnabled2(f.LinkSpeedExtEnabled2)
}

// Fields returns every field of p. p must be valid.
func (p PortInfo) Fields() PortInfoFields {
	return PortInfoFields{
		MKey:                                p.MKey(),
		GIDPrefix:                           p.GIDPrefix(),
		LID:                                 p.LID(),
		MasterSMLID:                         p.MasterSMLID(),
		CapabilityMask:                      p.CapabilityMask(),
		DiagCode:                            p.DiagCode(),
		MKeyLeasePeriod:                     p.MKeyLeasePeriod(),
		LocalPortNum:                        p.LocalPortNum(),
		LinkWidthEnabled:                    p.LinkWidthEnabled(),
		LinkWidthSupported:                  p.LinkWidthSupported(),
		LinkWidthActive:                     p.LinkWidthActive(),
		LinkSpeedSupported:                  p.LinkSpeedSupported(),
		PortState:                           p.PortState(),
		PortPhysicalState:                   p.PortPhysicalState(),
		LinkDownDefaultState:                p.LinkDownDefaultState(),
		MKeyProtectBits:                     p.MKeyProtectBits(),
		LMC:                                 p.LMC(),
		LinkSpeedActive:                     p.LinkSpeedActive(),
		LinkSpeedEnabled:                    p.LinkSpeedEnabled(),
		NeighborMTU:                         p.NeighborMTU(),
		MasterSMSL:                          p.MasterSMSL(),
		VLCap:                               p.VLCap(),
		InitType:                            p.InitType(),
		VLHighLimit:                         p.VLHighLimit(),
		VLArbitrationHighCap:                p.VLArbitrationHighCap(),
		VLArbitrationLowCap:                 p.VLArbitrationLowCap(),
		InitTypeReply:                       p.InitTypeReply(),
		MTUCap:                              p.MTUCap(),
		VLStallCount:                        p.VLStallCount(),
		HOQLife:                             p.HOQLife(),
		OperationalVLs:                      p.OperationalVLs(),
		PartitionEnforcementInbound:         p.PartitionEnforcementInbound(),
		PartitionEnforcementOutbound:        p.PartitionEnforcementOutbound(),
		FilterRawInbound:                    p.FilterRawInbound(),
		FilterRawOutbound:                   p.FilterRawOutbound(),
		MKeyViolations:                      p.MKeyViolations(),
		PKeyViolations:                      p.PKeyViolations(),
		QKeyViolations:                      p.QKeyViolations(),
		GUIDCap:                             p.GUIDCap(),
		ClientReregister:                    p.ClientReregister(),
		MulticastPKeyTrapSuppressionEnabled: p.MulticastPKeyTrapSuppressionEnabled(),
		SubnetTimeOut:                       p.SubnetTimeOut(),
		RespTimeValue:                       p.RespTimeValue(),
		LocalPhyErrors:                      p.LocalPhyErrors(),
		OverrunErrors:                       p.OverrunErrors(),
		MaxCreditHint:                       p.MaxCreditHint(),
		LinkRoundTripLatency:                p.LinkRoundTripLatency(),
		CapabilityMask2:                     p.CapabilityMask2(),
		LinkSpeedExtActive:                  p.LinkSpeedExtActive(),
		LinkSpeedExtSupported:               p.LinkSpeedExtSupported(),
		LinkSpeedExtEnabled:                 p.LinkSpeedExtEnabled(),
		LinkSpeedExtActive2:                 p.LinkSpeedExtActive2(),
		LinkSpeedExtSupported2:              p.LinkSpeedExtSupported2(),
		LinkSpeedExtEnabled2:                p.LinkSpeedExtEnabled2(),
	}
}

// AppendPortInfo appends the encoding of f to dst.
func AppendPortInfo(dst []byte, f *PortInfoFields) []byte {
	dst, p := attrGrow(dst, PortInfoSize)
	PortInfo(p).Encode(f)
	return dst
}

// DecodePortInfo reads a PortInfo from the first PortInfoSize bytes of b.
func DecodePortInfo(b []byte) (PortInfoFields, error) {
	if !PortInfo(b).IsValid() {
		return PortInfoFields{}, truncated("PortInfo", len(b), PortInfoSize)
	}
	return PortInfo(b).Fields(), nil
}
