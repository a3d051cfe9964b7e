// Package sdk holds glassroom's client SDKs for other languages (the
// Python SDK in sdk/python) and the Go tests that run them against real
// gateways.
package sdk
