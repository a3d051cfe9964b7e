// Package gateway is glassroom's HTTP face: the native REST API (/v1), the
// WebSocket relay, the Jupyter Server kernels API (/api, jupyter*.go: a
// second view of the same sessions for Jupyter front ends), API-key
// authentication, the embedded notebook UI, and the mapping from session
// errors to HTTP status codes. It is the only package that imports echo.
//
// Every request is authenticated with an API key (Authorization: Bearer, or
// ?token= on WebSocket upgrades and file downloads; on /api also
// Authorization: token, as Jupyter clients send it). Each key is a tenant:
// sessions made with one key do not exist for another.
package gateway
