// Package api holds glassroom's wire types: the JSON bodies of the REST
// API and the frames of the native WebSocket, as the gateway writes them
// and clients read them, and the request bodies (requests.go; a file edit's in edit.go), which the
// gateway decodes and the Go client sends. The Go SDK (package client) re-exports them; the
// gateway's contract test decodes what it really answers into them with
// unknown fields refused, so server and SDK cannot drift apart.
//
// It depends on nothing of glassroom's: a client can import it alone.
package api
