// Package capture reads and writes fabric captures: pcap files with
// LINKTYPE_ERF (197) whose records carry one InfiniBand packet each, ERF type
// 21 for data packets and 25 for link packets, with nanosecond timestamps.
// This is the format Mellanox ibdump writes, so tshark and Wireshark decode
// the files with no options.
package capture
