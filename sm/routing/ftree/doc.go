// Package ftree holds the fat-tree routing engines, registered as
// "ftree" and "dmodk" (D-mod-K, seed 003), which read a fabric as a fat
// tree the same way (ranks from the leaves, links only between adjacent
// ranks, else refused) and share the per-destination search of minimal
// ports; and FatTreeUpPorts, the up ports adaptive routing may choose
// from at each switch, computed by the same rules.
package ftree
