// Package gateway is glassroom's HTTP face: the native REST API (/v1), the
// WebSocket relay, API-key authentication, the embedded notebook UI, and
// the mapping from session errors to HTTP status codes. It is the only
// package that imports echo.
//
// Every request is authenticated with an API key (Authorization: Bearer, or
// ?token= on WebSocket upgrades and file downloads). Each key is a tenant:
// sessions made with one key do not exist for another.
package gateway
