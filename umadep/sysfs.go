package umadep

import (
	"fmt"
	"strings"

	"ibfab/umadproto"
	"ibfab/wire/mad"
)

// DefaultCAName is the device name the endpoint's sysfs tree gives the HCA.
const DefaultCAName = "ibfab0"

// abiVersion is the umad ABI the kernel reports; libibumad enables the
// pkey_index header with an ioctl at this version.
const abiVersion = 5

// sysfs renders the tree libibumad reads (under /sys/class): the CA with
// its node attributes and, per port, the attributes of get_port in
// rdma-core's umad.c, live from the SMA; and infiniband_mad with the ABI
// version and one umadN and issmN per port.
func (s *Server) sysfs() []umadproto.SysfsEntry {
	p := s.port()
	ca := "infiniband/" + s.caName
	var out []umadproto.SysfsEntry
	dir := func(path string) { out = append(out, umadproto.SysfsEntry{Dir: true, Path: path}) }
	file := func(path, format string, args ...any) {
		out = append(out, umadproto.SysfsEntry{Path: path, Content: []byte(fmt.Sprintf(format, args...) + "\n")})
	}
	dir("infiniband")
	dir("infiniband_mad")
	file("infiniband_mad/abi_version", "%d", abiVersion)
	if p == nil {
		return out
	}
	n := p.NumPorts()
	dir(ca)
	dir(ca + "/ports")
	var nodeGUID, sysGUID uint64
	if d, err := p.LocalGet(1, mad.AttrNodeInfo, 0); err == nil && mad.NodeInfo(d).IsValid() {
		nodeGUID, sysGUID = mad.NodeInfo(d).NodeGUID(), mad.NodeInfo(d).SystemImageGUID()
	}
	file(ca+"/node_type", "1: CA")
	file(ca+"/node_guid", "%s", guidText(nodeGUID))
	file(ca+"/sys_image_guid", "%s", guidText(sysGUID))
	file(ca+"/fw_ver", "1.0.0")
	file(ca+"/hw_rev", "0")
	file(ca+"/hca_type", "ibfab")
	file(ca+"/board_id", "ibfab")
	if d, err := p.LocalGet(1, mad.AttrNodeDescription, 0); err == nil && mad.NodeDescription(d).IsValid() {
		file(ca+"/node_desc", "%s", mad.NodeDescription(d).Text())
	}
	for num := uint8(1); num <= n; num++ {
		pd := fmt.Sprintf("%s/ports/%d", ca, num)
		dir(pd)
		dir(pd + "/gids")
		dir(pd + "/pkeys")
		var portGUID uint64
		if d, err := p.LocalGet(num, mad.AttrNodeInfo, 0); err == nil && mad.NodeInfo(d).IsValid() {
			portGUID = mad.NodeInfo(d).PortGUID()
		}
		d, err := p.LocalGet(num, mad.AttrPortInfo, uint32(num))
		pi := mad.PortInfo(d)
		if err != nil || !pi.IsValid() {
			pi = mad.PortInfo(make([]byte, 64))
		}
		file(pd+"/lid", "0x%x", pi.LID())
		file(pd+"/lid_mask_count", "%d", pi.LMC())
		file(pd+"/sm_lid", "0x%x", pi.MasterSMLID())
		file(pd+"/sm_sl", "%d", pi.MasterSMSL())
		file(pd+"/state", "%d: %s", uint8(pi.PortState()), stateName(uint8(pi.PortState())))
		file(pd+"/phys_state", "%d: %s", uint8(pi.PortPhysicalState()), physName(uint8(pi.PortPhysicalState())))
		file(pd+"/rate", "%s", rateText(pi.LinkWidthActive(), pi.SpeedActive()))
		file(pd+"/cap_mask", "0x%08x", pi.CapabilityMask())
		file(pd+"/link_layer", "InfiniBand")
		file(pd+"/gids/0", "%s", gidText(pi.GIDPrefix(), portGUID))
		keys := p.PKeys(num)
		if len(keys) == 0 {
			keys = []mad.PKey{mad.DefaultPKey}
		}
		for i, k := range keys {
			file(fmt.Sprintf("%s/pkeys/%d", pd, i), "0x%04x", uint16(k))
		}
		umad := fmt.Sprintf("infiniband_mad/umad%d", num-1)
		issm := fmt.Sprintf("infiniband_mad/issm%d", num-1)
		for _, d := range []string{umad, issm} {
			dir(d)
			file(d+"/ibdev", "%s", s.caName)
			file(d+"/port", "%d", num)
		}
	}
	return out
}

func guidText(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}

func gidText(prefix, guid uint64) string {
	return guidText(prefix) + ":" + guidText(guid)
}

func stateName(s uint8) string {
	if n := []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}; int(s) < len(n) {
		return n[s]
	}
	return "UNKNOWN"
}

func physName(s uint8) string {
	if n := []string{"NOP", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "Phy Test"}; int(s) < len(n) {
		return n[s]
	}
	return "UNKNOWN"
}

// rateText renders a port's rate as the kernel's sysfs rate file does
// (drivers/infiniband/core/sysfs.c): the nominal rate, lanes × 2.5, 5,
// 10, 14, 25, 50, 100 or 200 Gb/s, then width and speed, SDR unnamed:
// "10 Gb/sec (4X)", "56 Gb/sec (4X FDR)", "400 Gb/sec (4X NDR)"; the
// number first, which is what libibumad reads (ibstat's "Rate: 400").
func rateText(w mad.LinkWidth, sp mad.LinkSpeed) string {
	tenths := mad.NominalRate(w, sp)
	if tenths == 0 {
		return "0 Gb/sec"
	}
	half := ""
	if tenths%10 != 0 {
		half = ".5" // 1X SDR, 2.5 Gb/s, is the one
	}
	return fmt.Sprintf("%d%s Gb/sec (%dX%s)", tenths/10, half, w.Lanes(), speedSuffix(sp))
}

// speedSuffix is the kernel's name of a speed after the width, none for
// SDR.
func speedSuffix(sp mad.LinkSpeed) string {
	if sp == mad.LinkSpeedSDR {
		return ""
	}
	return " " + sp.String()
}

// sysfsFile returns the content of the file at path, with ok false when
// there is none (dir true when path is a directory).
func (s *Server) sysfsFile(path string) (content []byte, dir, ok bool) {
	path = strings.Trim(path, "/")
	for _, e := range s.sysfs() {
		if e.Path == path {
			return e.Content, e.Dir, true
		}
	}
	return nil, false, false
}
