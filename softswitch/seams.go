package softswitch

import "ibfab/port"

// syncArbitration pushes the agent's VL arbitration tables of port n to
// the port once the SM has programmed them. Until then (every weight 0,
// the agent's state after reset) the port keeps its default round robin,
// which serves what an empty table would starve.
func (s *Switch) syncArbitration(n uint8) {
	p := s.Port(n)
	if p == nil {
		return
	}
	cfg := s.agent.VLArbitration(n)
	a := port.Arbitration{HighLimit: cfg.VLHighLimit}
	programmed := false
	for i := range cfg.High {
		if i < int(cfg.HighCap) {
			a.High[i] = cfg.High[i]
			programmed = programmed || cfg.High[i].Weight != 0
		}
		if i < int(cfg.LowCap) {
			a.Low[i] = cfg.Low[i]
			programmed = programmed || cfg.Low[i].Weight != 0
		}
	}
	if programmed && a != p.VLArbitration() {
		p.SetVLArbitration(a)
	}
}
