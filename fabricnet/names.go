package fabricnet

import (
	"fmt"
	"strings"
)

// NSPrefix starts the name of every namespace ibfab creates.
const NSPrefix = "ibf-"

// maxNameLen bounds fabric names so that namespace names stay readable and
// well under the file-name limit of /run/netns.
const maxNameLen = 32

// CheckFabricName reports whether name can name a fabric: 1 to 32 of
// [a-z0-9_], so that "ibf-<fabric>-" prefixes never overlap.
func CheckFabricName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("fabric name %q: want 1 to %d characters", name, maxNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return fmt.Errorf("fabric name %q: only a-z, 0-9 and _ are allowed", name)
		}
	}
	return nil
}

// Namespace returns the namespace name of node in fabric. Characters a file
// name should not hold are replaced by '_'.
func Namespace(fabric, node string) string {
	return NSPrefix + fabric + "-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, node)
}

// PortIface returns the interface name of port p inside a node's namespace.
func PortIface(p int) string { return fmt.Sprintf("p%d", p) }

// fabricPrefix is the namespace prefix of every node of fabric.
func fabricPrefix(fabric string) string { return NSPrefix + fabric + "-" }
