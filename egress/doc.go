// Package egress is the network a session may use: an HTTP and HTTPS
// (CONNECT) proxy per session that lets through only the destinations of
// the session's allowlist.
//
// A sandbox has no network interface but its own loopback. A session that
// asks for a network gets a Proxy listening on a unix socket in a
// directory of its own, which the runtime binds read-only into the
// sandbox; a forwarder inside (kernel/runtime/sandbox's launcher) listens on the
// sandbox's 127.0.0.1 and splices each connection to that socket, and
// HTTP_PROXY/HTTPS_PROXY point the kernel at it. The proxy, in the
// gateway, decides every connection:
//
//  1. the host and port must match the session's Policy (exact names,
//     "*.suffix" for subdomains, optional ports; no port means plain HTTP
//     to 80 and 443 and CONNECT to 443 only, since a CONNECT to 80 is a
//     raw tunnel whose Host header the proxy never sees); an IP literal
//     only when the policy names that address;
//  2. the proxy resolves the name itself (the sandbox has no DNS) with the
//     configured Resolver;
//  3. every resolved address must be dialable (addressRules): never a
//     cloud provider's service address (metadata and the like, some of
//     them public) nor an address of the gateway host itself (bound on
//     its interfaces, read again every few seconds), unless the operator
//     names it (Config.AllowAddress); and public: loopback, private,
//     link-local, CGNAT, unique-local, multicast, documentation and
//     IPv4-embedding IPv6 ranges are refused unless the operator allowed
//     the range (Config.AllowPrivate, which opens loopback but not the
//     host's other addresses);
//  4. it dials one of the checked addresses itself, never the name (no
//     second resolution, so no DNS rebinding), and the dialer checks the
//     address again at the socket.
//
// A refusal is an HTTP response with a reason in its status line and body
// (403 for the policy, 429 past the connection limit), logged with the
// session id and reported to the session through a callback. The reason
// says why, never which resolved address was refused (that would answer
// internal names for the code); the log has the address. Bytes are
// rate-limited per session in each direction, and connections are limited
// in number and in rate. A connection no byte crossed for
// Config.IdleTimeout, or open for Config.MaxConnDuration, is closed (a
// plain request still waiting for its response gets a 504), and
// Proxy.CloseConnections ends them all when the session's sandbox is
// frozen.
//
// A Service holds the operator's settings (the ceiling every session's
// list must stay within); Service.Start starts one session's Proxy, whose
// Close stops it and waits for its goroutines.
package egress
