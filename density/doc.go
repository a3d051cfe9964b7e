// Package density holds glassroom's density suite: hundreds of live
// sessions on one machine, every feature checked in the last one created
// and state checked in the first. Its files build only with the "heavy"
// tag; `make test` runs them after the rest, one package at a time
// (they need most of the machine's memory), and `make bench` reports
// BenchmarkDensity's figures.
package density
