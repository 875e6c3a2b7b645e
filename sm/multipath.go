package sm

import (
	"fmt"

	"ibfab/sm/routing"
	"ibfab/sm/routing/multipath"
	"ibfab/wire/mad"
)

// multipath routes the LMC aliases of rt apart when the subnet has any
// (Config.LMC > 0), in as many VL layers as every planned port runs data
// VLs (at most the aliases), and reports it on res. The layers hold until
// the next route set: distribution programs SLtoVL after them.
func (s *SM) multipath(res *Result, sn *Subnet, rt *routing.Routes) (*routing.Routes, error) {
	if s.cfg.LMC == 0 {
		s.layers = 0
		return rt, nil
	}
	layers := 0
	for _, p := range s.plan(sn) {
		if n := mad.NumDataVLs(p.vls); layers == 0 || n < layers {
			layers = n
		}
	}
	out, st, err := multipath.Route(&sn.Fabric, rt, max(layers, 1), s.cfg.Options)
	if err != nil {
		return nil, err
	}
	s.layers = out.Layers
	res.Multipath = st
	if st.Aliases > st.Layers {
		res.Warnings = append(res.Warnings, fmt.Sprintf(
			"%d LIDs per port on %d data VLs: aliases share layers (alias i on VL i mod %d)", st.Aliases, st.Layers, st.Layers))
	}
	return out, nil
}
