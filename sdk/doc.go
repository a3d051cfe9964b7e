// Package sdk holds glassroom's client SDKs for other languages (the
// Python SDK in sdk/python, the TypeScript SDK in sdk/js with its
// framework examples) and the Go tests that run them against real
// gateways (sdk/js under Node, Deno and Bun).
package sdk
