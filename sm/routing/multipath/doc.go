// Package multipath routes the LMC aliases of a CA port apart (issue
// 19): Route takes an engine's route set, keeps its base LIDs, and gives
// each alias per destination a tree of shortest paths weighted to stay
// off the links its earlier aliases use, refined switch by switch, in VL
// layers that each stay acyclic by construction (up*/down* fallbacks,
// from package updn, held in each layer from the start).
package multipath
