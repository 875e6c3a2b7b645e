package main

import (
	"context"
	"time"

	"ibfab/madport"
	"ibfab/simclient"
	"ibfab/simproto"
	"ibfab/sm"
)

func init() {
	sm.RegisterPort("sim", openSim)
}

// openSim connects to an ibsim-protocol server: Debian's ibsim, or the
// attach point every soft HCA serves in its namespace (ibfab exec N HCA --
// ibsm --port sim). name is the socket base name, "" for $IBSIM_SOCKNAME
// or the default, as libumad2sim takes it.
func openSim(name string) (madport.Port, error) {
	if name == "" {
		name = simproto.BaseFromEnv()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return simclient.Dial(ctx, simclient.Config{Name: name, IsSM: true, Wait: true})
}
