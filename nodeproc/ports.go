package nodeproc

import (
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"

	"ibfab/link/veth"
)

// DefaultPortNames is the prefix of the ports' interfaces under ibfab up:
// port N is pN.
const DefaultPortNames = "p"

// portWaitPoll is how often openWait looks again for an interface.
const portWaitPoll = 50 * time.Millisecond

// validPortNames reports whether prefix and a port number make an
// interface name (15 bytes at most, 255 ports).
func validPortNames(prefix string) bool {
	if prefix == "" || len(prefix) > 12 {
		return false
	}
	for _, r := range prefix {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// openWait opens the endpoint on interface name, waiting up to wait for
// it to exist: what wires a container (containerlab) may create it after
// the process started, or create it and make it again at once.
func openWait(name string, wait time.Duration) (*veth.Endpoint, error) {
	deadline := time.Now().Add(wait)
	for {
		_, err := netlink.LinkByName(name)
		if err == nil {
			var ep *veth.Endpoint
			if ep, err = veth.Open(name); err == nil {
				return ep, nil
			}
		} else {
			err = fmt.Errorf("interface %s: %w", name, err)
		}
		// Only an interface missing is waited out; any other failure is
		// the node's to report.
		var missing netlink.LinkNotFoundError
		if !errors.As(err, &missing) || !time.Now().Before(deadline) {
			return nil, err
		}
		time.Sleep(portWaitPoll)
	}
}
