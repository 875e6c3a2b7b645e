package umadep

import (
	"fmt"
	"strings"

	"ibfab/ibsysfs"
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
	var desc string
	if d, err := p.LocalGet(1, mad.AttrNodeDescription, 0); err == nil && mad.NodeDescription(d).IsValid() {
		desc = mad.NodeDescription(d).Text()
	}
	files := func(dir string, fs []ibsysfs.File) {
		for _, f := range fs {
			out = append(out, umadproto.SysfsEntry{Path: dir + "/" + f.Name, Content: []byte(f.Content)})
		}
	}
	files(ca, ibsysfs.NodeFiles(ibsysfs.Node{GUID: nodeGUID, SysImageGUID: sysGUID, Desc: desc}))
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
		files(pd, ibsysfs.PortFiles(ibsysfs.Port{State: pi.PortState(), Phys: pi.PortPhysicalState(),
			Width: pi.LinkWidthActive(), Speed: pi.SpeedActive(), LID: pi.LID(), LMC: pi.LMC(),
			SMLID: pi.MasterSMLID(), SMSL: pi.MasterSMSL(), CapMask: pi.CapabilityMask(),
			GIDPrefix: pi.GIDPrefix(), GUID: portGUID}))
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
