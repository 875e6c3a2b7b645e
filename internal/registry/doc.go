// Package registry is a set of named things that packages add to at init
// (routing engines, port schemes): a duplicate name is a programming
// error and panics, as the standard library's registries do; lookups and
// the sorted list of names are safe for concurrent use.
package registry
