package sm

import (
	"ibfab/sm/routing"
	// The engines register themselves with routing's registry
	// (routing.NewEngine, routing.Engines): every SM has them all.
	_ "ibfab/sm/routing/ftree"
	_ "ibfab/sm/routing/minhop"
	_ "ibfab/sm/routing/updn"
)

// ErrConfig is an invalid configuration. It is routing's, so that an
// engine option out of range (routing.Parent, routing.Ties) is one too.
var ErrConfig = routing.ErrConfig
