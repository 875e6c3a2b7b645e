// Package promexport exports a running fabric's port counters and states
// to Prometheus: a collector that, on each scrape, reads harness.Status
// (every node's ports) and turns it into metric families, and the
// http.Handler that serves them (`ibfab metrics`, and `/metrics` of
// `ibfab serve`).
//
// Each port is exported under the names the real exporters use, so their
// dashboards and alerts work on a soft fabric unchanged:
//
//   - node_exporter's infiniband collector (collector/infiniband_linux.go
//     of prometheus/node_exporter, which reads /sys/class/infiniband through
//     prometheus/procfs): node_infiniband_* with the labels device and
//     port, for HCA ports only (a host's sysfs has no switch ports), and
//     node_infiniband_info with board_id, device, firmware_version and
//     hca_type; the names checked against Debian's node_exporter 1.5 on
//     the tree `ibfab sysfs` writes (a test does so). The
//     device is ibsysfs.DeviceName of the node, as `ibfab sysfs` names the
//     directory, so the exporter and node_exporter on that tree agree. The
//     data counters are in bytes: node_exporter multiplies the PMA's 4-byte
//     words by 4, and so does this package. rate_bytes_per_second is the
//     nominal signalling rate of the rate file (10 Gb/s for 4X SDR), in
//     bytes; state_id and physical_state_id are the PortInfo codes.
//   - treydock/infiniband_exporter (collectors/hca.go, switch.go,
//     perfquery.go): infiniband_hca_port_* and infiniband_switch_port_*
//     with the label guid (the port GUID it hands perfquery -G: an HCA
//     port's own, a switch's node GUID) and port; its newer releases add
//     hca (the HCA's name) and switch (the switch at the other end of an
//     HCA port, or the switch's own name), which are given too. Its data
//     counters are bytes as well (perfquery's words × 4).
//     infiniband_hca_info and infiniband_switch_info (value 1) carry guid,
//     the name and lid; rate_bytes_per_second, per port here, the nominal
//     rate.
//
// Every port metric of every family has the labels node, guid (as above),
// port and peer ("sw1[3]"); node and peer, which neither exporter has,
// cost a dashboard nothing and say where a port is cabled. What only the harness knows is
// under ibfab_: ibfab_node_up (the node's process answered the status
// query), ibfab_node_alive (its process exists), ibfab_port_drops_total by
// cause (port.DropCause: what silicon would lose without a counter),
// ibfab_port_data_rate_bits_per_second (the data rate after encoding),
// ibfab_port_lid, and per operational data VL and VL15 the packets and
// bytes sent (ibfab_port_vl_transmitted_*) and PortVLXmitWait
// (ibfab_port_vl_transmit_wait_total). ibfab_scrape_duration_seconds is
// how long the status query took.
//
// The names and labels were read from those projects' sources; no text of
// theirs is copied.
package promexport
