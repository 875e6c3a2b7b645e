// Package layering holds one test: that every package sits in the layer
// docs/DESIGN.md gives it, imports nothing from a layer above, and that no
// package a binary links imports test support.
package layering
