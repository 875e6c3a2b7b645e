package sm

import (
	"ibfab/sm/routing"
	"ibfab/wire/mad"
)

// ARPlan exposes the AR manager's plan to the external tests: per switch
// node its groups (0 empty) and per LID the group it adapts over.
func ARPlan(f *routing.Fabric) (groups [][]mad.PortMask, lids [][]uint16, err error) {
	p, err := newARPlan(f)
	if err != nil {
		return nil, nil, err
	}
	return p.groups, p.lids, nil
}

// ComeOut marks s as leaving standby, as a takeover or a handover does:
// its next sweep forgets what it wrote and reads the devices back.
func ComeOut(s *SM) { s.comingOut = true }
