// Package tenant is who a request of the gateway speaks for: the accepted
// API keys (each key is a tenant), checked in constant time, and the tenant
// an authenticated request carries in its echo context. The front ends
// (the native API, the Jupyter API, /mcp) read the key from the request
// each in its own way and ask Keys who it is.
package tenant
