package promexport

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"ibfab/harness"
	"ibfab/ibsysfs"
	"ibfab/nodeproc"
	"ibfab/wire/mad"
)

// ScrapeTimeout bounds the status query of one scrape: Prometheus gives
// up on a target after 10 s by default, and a slow node must not make
// the whole scrape fail later than that.
const ScrapeTimeout = 8 * time.Second

// wordBytes is the size of the PMA's data unit: PortXmitData and
// PortRcvData count 4-byte words, both exporters export bytes.
const wordBytes = 4

// family is which exporter's names a metric follows.
type family uint8

const (
	nodeExporter   family = iota // node_infiniband_*: device, port (HCAs)
	treydockHCA                  // infiniband_hca_*: guid, port, hca, switch
	treydockSwitch               // infiniband_switch_*: guid, port, switch
	ibfabOwn                     // ibfab_*: what only the harness knows
)

// baseLabels are on every port metric: where the port is.
var baseLabels = []string{"node", "guid", "port", "peer"}

// familyLabels are the labels a family adds to baseLabels.
var familyLabels = map[family][]string{
	nodeExporter:   {"device"},
	treydockHCA:    {"hca", "switch"},
	treydockSwitch: {"switch"},
	ibfabOwn:       nil,
}

// counterDef is one PMA counter and its names in each family ("" where
// the family has none).
type counterDef struct {
	ne, trey string
	value    func(nodeproc.Counters) uint64
	// words: a data counter, in 4-byte words, exported in bytes.
	words bool
}

// counterDefs are the PMA counters a port's status has.
var counterDefs = []counterDef{
	{"port_data_transmitted_bytes_total", "port_transmit_data_bytes_total", func(c nodeproc.Counters) uint64 { return c.PortXmitData }, true},
	{"port_data_received_bytes_total", "port_receive_data_bytes_total", func(c nodeproc.Counters) uint64 { return c.PortRcvData }, true},
	{"port_packets_transmitted_total", "port_transmit_packets_total", func(c nodeproc.Counters) uint64 { return c.PortXmitPkts }, false},
	{"port_packets_received_total", "port_receive_packets_total", func(c nodeproc.Counters) uint64 { return c.PortRcvPkts }, false},
	// node_exporter exports counters_ext's 64-bit counts again as legacy_*.
	{"legacy_data_transmitted_bytes_total", "", func(c nodeproc.Counters) uint64 { return c.PortXmitData }, true},
	{"legacy_data_received_bytes_total", "", func(c nodeproc.Counters) uint64 { return c.PortRcvData }, true},
	{"legacy_packets_transmitted_total", "", func(c nodeproc.Counters) uint64 { return c.PortXmitPkts }, false},
	{"legacy_packets_received_total", "", func(c nodeproc.Counters) uint64 { return c.PortRcvPkts }, false},
	{"symbol_error_total", "port_symbol_error_total", func(c nodeproc.Counters) uint64 { return uint64(c.SymbolErrorCounter) }, false},
	{"link_error_recovery_total", "port_link_error_recovery_total", func(c nodeproc.Counters) uint64 { return uint64(c.LinkErrorRecoveryCounter) }, false},
	{"link_downed_total", "port_link_downed_total", func(c nodeproc.Counters) uint64 { return uint64(c.LinkDownedCounter) }, false},
	{"port_errors_received_total", "port_receive_errors_total", func(c nodeproc.Counters) uint64 { return uint64(c.PortRcvErrors) }, false},
	{"port_receive_remote_physical_errors_total", "port_receive_remote_physical_errors_total", func(c nodeproc.Counters) uint64 { return uint64(c.PortRcvRemotePhysicalErrors) }, false},
	{"port_receive_switch_relay_errors_total", "port_receive_switch_relay_errors_total", func(c nodeproc.Counters) uint64 { return uint64(c.PortRcvSwitchRelayErrors) }, false},
	{"port_discards_transmitted_total", "port_transmit_discards_total", func(c nodeproc.Counters) uint64 { return uint64(c.PortXmitDiscards) }, false},
	{"port_constraint_errors_transmitted_total", "port_transmit_constraint_errors_total", func(c nodeproc.Counters) uint64 { return uint64(c.PortXmitConstraintErrors) }, false},
	{"port_constraint_errors_received_total", "port_receive_constraint_errors_total", func(c nodeproc.Counters) uint64 { return uint64(c.PortRcvConstraintErrors) }, false},
	{"local_link_integrity_errors_total", "port_local_link_integrity_errors_total", func(c nodeproc.Counters) uint64 { return uint64(c.LocalLinkIntegrityErrors) }, false},
	{"excessive_buffer_overrun_errors_total", "port_excessive_buffer_overrun_errors_total", func(c nodeproc.Counters) uint64 { return uint64(c.ExcessiveBufferOverrunErrors) }, false},
	{"vl15_dropped_total", "port_vl15_dropped_total", func(c nodeproc.Counters) uint64 { return uint64(c.VL15Dropped) }, false},
	{"port_transmit_wait_total", "port_transmit_wait_total", func(c nodeproc.Counters) uint64 { return uint64(c.PortXmitWait) }, false},
}

// portDesc is one per-port metric of one family.
type portDesc struct {
	desc  *prometheus.Desc
	def   *counterDef
	fam   family
	gauge func(p *nodeproc.PortStatus) (float64, bool) // a gauge instead of a counter
}

// Collector is a prometheus.Collector of one fabric's ports.
type Collector struct {
	status func(ctx context.Context) (*harness.FabricStatus, error)
	ports  []portDesc

	nodeUp, nodeAlive, scrapeDuration *prometheus.Desc
	hcaInfo, switchInfo, neInfo       *prometheus.Desc
	drops                             *prometheus.Desc
	vlPackets, vlBytes, vlWait        *prometheus.Desc
}

// NewCollector returns the collector of fabric name: each scrape asks its
// nodes for their status (harness.Status).
func NewCollector(name string) *Collector {
	return newCollector(func(ctx context.Context) (*harness.FabricStatus, error) { return harness.Status(ctx, name) })
}

func labels(f family, extra ...string) []string {
	l := append(append([]string(nil), baseLabels...), familyLabels[f]...)
	return append(l, extra...)
}

func newCollector(status func(ctx context.Context) (*harness.FabricStatus, error)) *Collector {
	c := &Collector{status: status}
	add := func(f family, name, help string, def *counterDef, gauge func(*nodeproc.PortStatus) (float64, bool)) {
		c.ports = append(c.ports, portDesc{desc: prometheus.NewDesc(name, help, labels(f), nil), def: def, fam: f, gauge: gauge})
	}
	for i := range counterDefs {
		d := &counterDefs[i]
		help := "PMA counter of the port"
		if d.words {
			help += ", in bytes (the PMA's 4-byte words × 4)"
		}
		if d.ne != "" {
			add(nodeExporter, "node_infiniband_"+d.ne, help, d, nil)
		}
		if d.trey != "" {
			add(treydockHCA, "infiniband_hca_"+d.trey, help, d, nil)
			add(treydockSwitch, "infiniband_switch_"+d.trey, help, d, nil)
		}
	}
	stateID := func(p *nodeproc.PortStatus) (float64, bool) {
		s, ok := ibsysfs.ParsePortState(p.State)
		return float64(s), ok
	}
	physID := func(p *nodeproc.PortStatus) (float64, bool) {
		s, ok := ibsysfs.ParsePhysState(p.Phys)
		return float64(s), ok
	}
	add(nodeExporter, "node_infiniband_state_id", "Logical state of the port (PortInfo:PortState: 1 Down, 2 Init, 3 Armed, 4 Active)", nil, stateID)
	add(nodeExporter, "node_infiniband_physical_state_id", "Physical state of the port (PortInfo:PortPhysicalState: 2 Polling, 3 Disabled, 5 LinkUp, …)", nil, physID)
	add(nodeExporter, "node_infiniband_rate_bytes_per_second", "Nominal signalling rate of the port, as its sysfs rate file gives it, in bytes/s", nil, nominalRate)
	add(treydockHCA, "infiniband_hca_rate_bytes_per_second", "Nominal signalling rate of the port, in bytes/s", nil, nominalRate)
	add(treydockSwitch, "infiniband_switch_rate_bytes_per_second", "Nominal signalling rate of the port, in bytes/s", nil, nominalRate)
	add(ibfabOwn, "ibfab_port_state_id", "Logical state of the port (PortInfo:PortState code)", nil, stateID)
	add(ibfabOwn, "ibfab_port_physical_state_id", "Physical state of the port (PortInfo:PortPhysicalState code)", nil, physID)
	add(ibfabOwn, "ibfab_port_data_rate_bits_per_second", "Data rate of the port after encoding, at the width and speed it trained at", nil,
		func(p *nodeproc.PortStatus) (float64, bool) { return float64(p.Rate), true })
	add(ibfabOwn, "ibfab_port_lid", "LID of the port (a switch's: port 0's)", nil,
		func(p *nodeproc.PortStatus) (float64, bool) { return float64(p.LID), true })
	c.drops = prometheus.NewDesc("ibfab_port_drops_total", "Packets the port dropped, by cause (what silicon loses without a PMA counter)", labels(ibfabOwn, "cause"), nil)
	c.vlPackets = prometheus.NewDesc("ibfab_port_vl_transmitted_packets_total", "Packets the port sent on the VL since its node started", labels(ibfabOwn, "vl"), nil)
	c.vlBytes = prometheus.NewDesc("ibfab_port_vl_transmitted_bytes_total", "Bytes, LRH through VCRC, the port sent on the VL since its node started", labels(ibfabOwn, "vl"), nil)
	c.vlWait = prometheus.NewDesc("ibfab_port_vl_transmit_wait_total", "PortVLXmitWait of the VL, in PortXmitWait ticks", labels(ibfabOwn, "vl"), nil)
	c.nodeUp = prometheus.NewDesc("ibfab_node_up", "1 if the node's process answered the status query", []string{"node", "type", "guid"}, nil)
	c.nodeAlive = prometheus.NewDesc("ibfab_node_alive", "1 if the node's process exists", []string{"node", "type", "guid"}, nil)
	c.scrapeDuration = prometheus.NewDesc("ibfab_scrape_duration_seconds", "How long the fabric's status query took", nil, nil)
	c.hcaInfo = prometheus.NewDesc("infiniband_hca_info", "The HCA port: its GUID, name and LID", []string{"guid", "hca", "lid", "port"}, nil)
	c.neInfo = prometheus.NewDesc("node_infiniband_info", "The HCA device: its board, firmware and type, as its sysfs files give them",
		[]string{"board_id", "device", "firmware_version", "hca_type"}, nil)
	c.switchInfo = prometheus.NewDesc("infiniband_switch_info", "The switch: its GUID, name and LID", []string{"guid", "switch", "lid"}, nil)
	return c
}

// nominalRate is the rate the sysfs rate file and ibnetdiscover give (4X
// SDR 10 Gb/s), in bytes/s, as the exporters export it.
func nominalRate(p *nodeproc.PortStatus) (float64, bool) {
	w, ok1 := ibsysfs.ParseWidth(p.Width)
	s, ok2 := ibsysfs.ParseSpeed(p.Speed)
	if !ok1 || !ok2 {
		return 0, false
	}
	return float64(mad.NominalRate(w, s)) * 1e8 / 8, true
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, p := range c.ports {
		ch <- p.desc
	}
	for _, d := range []*prometheus.Desc{c.nodeUp, c.nodeAlive, c.scrapeDuration, c.hcaInfo, c.switchInfo, c.neInfo, c.drops, c.vlPackets, c.vlBytes, c.vlWait} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one status query, then every
// node's metrics from it. A fabric that is not up makes the scrape fail
// (an invalid metric), which Prometheus shows as the target down with the
// reason.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	start := time.Now()
	s, err := c.status(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.nodeUp, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.scrapeDuration, prometheus.GaugeValue, time.Since(start).Seconds())
	for i := range s.Nodes {
		c.collectNode(ch, &s.Nodes[i])
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// collectNode sends one node's metrics. A node that did not answer has
// only its up and alive gauges: its ports' counters are not known, and a
// counter that vanishes is what Prometheus expects of a target that
// restarted.
func (c *Collector) collectNode(ch chan<- prometheus.Metric, n *harness.NodeStatus) {
	up := n.Error == ""
	ch <- prometheus.MustNewConstMetric(c.nodeUp, prometheus.GaugeValue, boolValue(up), n.Name, n.Type, n.GUID)
	ch <- prometheus.MustNewConstMetric(c.nodeAlive, prometheus.GaugeValue, boolValue(n.Alive), n.Name, n.Type, n.GUID)
	if !up {
		return
	}
	isHCA := n.Type == nodeproc.KindHCA.String()
	if isHCA {
		ch <- prometheus.MustNewConstMetric(c.neInfo, prometheus.GaugeValue, 1, ibsysfs.BoardID, ibsysfs.DeviceName(n.Name), ibsysfs.FWVer, ibsysfs.HCAType)
	}
	if !isHCA && len(n.Ports) > 0 {
		ch <- prometheus.MustNewConstMetric(c.switchInfo, prometheus.GaugeValue, 1, n.GUID, n.Name, strconv.Itoa(int(n.Ports[0].LID)))
	}
	for i := range n.Ports {
		p := &n.Ports[i]
		guid := p.GUID
		if !isHCA {
			guid = n.GUID // a switch's one port GUID, on port 0, is its node GUID
		}
		portNum := strconv.Itoa(p.Port)
		peerNode := peerNodeName(p.Peer)
		values := func(f family) []string {
			l := []string{n.Name, guid, portNum, p.Peer}
			switch f {
			case nodeExporter:
				l = append(l, ibsysfs.DeviceName(n.Name))
			case treydockHCA:
				l = append(l, n.Name, peerNode)
			case treydockSwitch:
				l = append(l, n.Name)
			}
			return l
		}
		if isHCA {
			ch <- prometheus.MustNewConstMetric(c.hcaInfo, prometheus.GaugeValue, 1, guid, n.Name, strconv.Itoa(int(p.LID)), portNum)
		}
		for _, d := range c.ports {
			if (d.fam == nodeExporter || d.fam == treydockHCA) && !isHCA || d.fam == treydockSwitch && isHCA {
				continue
			}
			if d.gauge != nil {
				if v, ok := d.gauge(p); ok {
					ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, v, values(d.fam)...)
				}
				continue
			}
			v := float64(d.def.value(p.Counters))
			if d.def.words {
				v *= wordBytes
			}
			ch <- prometheus.MustNewConstMetric(d.desc, prometheus.CounterValue, v, values(d.fam)...)
		}
		own := values(ibfabOwn)
		for cause, v := range p.Drops {
			ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(v), append(own, cause)...)
		}
		for _, x := range p.VLXmit {
			vl := strconv.Itoa(x.VL)
			ch <- prometheus.MustNewConstMetric(c.vlPackets, prometheus.CounterValue, float64(x.Packets), append(own, vl)...)
			ch <- prometheus.MustNewConstMetric(c.vlBytes, prometheus.CounterValue, float64(x.Bytes), append(own, vl)...)
		}
		for _, cr := range p.Credits {
			ch <- prometheus.MustNewConstMetric(c.vlWait, prometheus.CounterValue, float64(cr.XmitWait), append(own, strconv.Itoa(cr.VL))...)
		}
	}
}

// peerNodeName is the node of a peer "sw1[3]": "sw1"; "" for none.
func peerNodeName(peer string) string {
	for i := len(peer) - 1; i >= 0; i-- {
		if peer[i] == '[' {
			return peer[:i]
		}
	}
	return peer
}

// Handler serves fabric name's metrics in the Prometheus exposition
// formats (text, or OpenMetrics when asked), with Go's and the process's
// own metrics left out: they are the harness's, not the fabric's.
func Handler(name string) http.Handler {
	return handlerFor(NewCollector(name))
}

func handlerFor(c *Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError, EnableOpenMetrics: true})
}

// CheckFabric returns an error when fabric name is not up, for a command
// to fail at its start rather than on every scrape.
func CheckFabric(ctx context.Context, name string) error {
	if _, err := harness.Status(ctx, name); err != nil {
		return fmt.Errorf("fabric %s: %w", name, err)
	}
	return nil
}
