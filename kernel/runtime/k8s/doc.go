// Package k8s is the Kubernetes runtime (--runtime k8s): each session's
// kernel runs in its own pod, scheduled by the cluster, and any gateway
// replica of the namespace can find, adopt and serve it.
//
// A session is a pod and a Secret, both named glassroom-<session id> and
// labelled with the session, its tenant and the gateway instance that
// owns it. The Secret holds the kernel's connection file (its HMAC key),
// the pod agent's token and its TLS certificate and key (the session's
// own), and the kernel container's passwd and group files; each is
// mounted into one container only.
//
// The kernels listen on unix sockets in the pod (an ipc connection file,
// as in every runtime), which the agent's container mounts read-only. The
// gateway reaches them through the agent (channelRelay): its kernel
// client connects to unix sockets in a 0700 directory of the gateway, and
// each connection is carried through a TLS 1.3 tunnel to the agent (the
// session's certificate pinned, its token), which connects it to the
// kernel's socket. No kernel port exists on the pod network, whether or
// not a NetworkPolicy is enforced. Any kernel of the registry can be the
// pod's first.
//
// Contexts, commands, pause and usage go through the supervisor's spawn
// socket (supervisor.py), reached through the agent's /v1/spawn tunnel
// (spawn.go, contexts.go, commands.go): a context is one more kernel in
// the pod with an ipc directory of its own, a command the launcher's
// command mode; a pause stops every process of the kernel container.
//
// Fencing (fence.go): each adoption raises the pod's owner's epoch, which
// every request to the agent carries; the agent refuses the old owner's
// from the new owner's first request on, so a replica that lost its Lease
// but still runs never reaches the kernel again, and lets the session go
// (sandbox.Fenceable). A Lease's expiry is judged on the reader's clock
// alone (leaseAlive).
//
// The pod has two containers, both non-root with the session's own uid,
// a read-only root filesystem, no capabilities, no privilege escalation
// and the RuntimeDefault (or a localhost) seccomp profile; the pod mounts
// no service account token and gets no service links:
//
//   - kernel: the kernel image, tini, and a small supervisor (Python, run
//     like the shared launcher) that starts one kernel generation at a
//     time, kills every process of the sandbox between them and empties
//     /tmp, /dev/shm and the ipc and contexts directories before each, so
//     a generation starts clean;
//   - agent: the gateway image running `glassroom pod-agent` (TLS only),
//     which carries the kernel channels, serves the workspace
//     (workspace/remote: openat2, no symlinks, the quota, change
//     tracking) and writes the supervisor's control file.
//
// The workspace is an emptyDir with a sizeLimit, /tmp and /dev/shm are
// memory-backed emptyDirs, and the supervisor's control and status files
// live in tiny memory-backed emptyDirs (control read-only to the kernel).
//
// The gateway's calls to an agent never follow a redirect.
//
// The runtime builds on sandbox.Base through sandbox.Connector: a
// restart is a new generation in the same pod (the workspace survives),
// reached through the same relay. A pod is watched for its deletion, failure and
// the kernel container's end (OOMKilled named); a start fails fast on
// image pull errors and containers that cannot start, and names an
// unschedulable pod's reason at the timeout.
//
// Gateways keep a Lease each. Sessions whose gateway's Lease expired are
// listed by Adoptable and taken over by Adopt (an optimistic relabel:
// one adopter wins); Reconcile deletes pods past their lifetime, pods that
// ended, pods nobody adopted within OrphanGrace, and Secrets without a pod.
package k8s
