// Package sessions owns the lifecycle of sessions: one sandbox per
// session holding one kernel per context (the first, and those started
// since: Contexts), an execution queue per context, timeouts, output
// caps, idle expiry and pause, lifetime and count limits, durability
// across a gateway restart, and the event log that WebSocket clients
// replay after a reconnect.
//
// A Manager (manager.go) holds the sessions of every tenant: it creates
// them (from the warm pool, pool.go, or cold, at most MaxConcurrentStarts
// at once), finds, lists and deletes them, and shares the gateway-wide
// output Budget (budget.go) and the fair scheduler of execution slots
// (slots.go) among them. Its Run reaps: it deletes expired sessions and
// freezes idle ones (Config.PauseAfter), each in a goroutine of its own
// (Run waits for the freezes; Close and Detach for the closes and the
// freezes), so a sandbox slow to close or to freeze
// holds up neither the next tick nor any other session (one freeze at a
// time per session). With a Store it writes each session's record, and
// Restore and Detach (durable.go) bring sessions back after a restart or
// let them go, running, for the next gateway.
//
// A Session (session.go) is one sandbox and what lives in it: its
// workspace, egress proxy, lifetime and idle expiry, pause, event log,
// commands and kernels. A Kernel (kernel.go) is one kernel in it, the
// first (Session.First) or another context's: its methods check and
// queue requests and report its state, under the kernel's mutex. The
// lock order is Session → Contexts → Kernel. The work is done by the
// types they hold, each with its own lock or owned by one goroutine:
//
//   - worker (worker.go, run.go) owns a kernel. Its one goroutine runs
//     queued executions one at a time and performs every restart, so
//     kernel lifecycle transitions never race.
//   - output (output.go), one per execution, counts what the kernel sends
//     against the execution's caps and keeps a REST caller's outputs,
//     charged to the Budget; the execution's goroutine owns it.
//   - hub (event.go) is the event log: it numbers every event, keeps a
//     bounded backlog (charged to the Budget) for late subscribers and
//     fans events out to Subscriptions, dropping one that lags.
//   - Stream (stream.go) merges the event log with the first kernel's
//     side stream in the session's order, lag recovered inside: the one
//     merge both faces' writers range over.
//   - pauser (pause.go) freezes the sandbox while its kernels go unused;
//     whatever uses the kernel holds it awake. A client's Pause holds it
//     frozen until Resume: meanwhile every use fails with ErrPaused.
//
// Sessions are made from templates (templates.go: the built-in ones and
// Config.Templates), carry the client's metadata and a lifetime
// (SetLifetime moves its end), and are listed by page and filter
// (list.go); Metrics (metrics.go) reads the sandbox's cgroup
// (sandbox.UsageReader) and the workspace's use.
//   - direct (direct.go) sends the requests that bypass the queue
//     (completion, inspection, the Jupyter face's read-only
//     KernelRequests) and caches the kernel_info reply per kernel.
//   - side (side.go) is the kernel's side stream: the messages of no
//     pending request (comm_open, comm_msg, comm_close, debug_event, a
//     comm handler's output and status, a left-behind thread's output).
//     One owner goroutine per kernel incarnation, started by the worker,
//     reads it (KernelConn.Side) and fans it out to the subscribers of
//     SubscribeKernel, each bounded: a slow one loses its own messages,
//     counted, and holds up nothing. It is not in the event log (nothing
//     is replayed). The worker publishes an execution's output only once
//     the side messages the kernel sent before it are delivered (barrier),
//     and fans the execution's own comm messages out itself, between its
//     events (kernel.ExecuteOptions.CommEvents); each side message carries
//     the Seq of the newest event published before it (After), so a
//     client that merges the two channels by it (Stream, stream.go: the
//     one merge both faces range over) writes every side message
//     before the events the kernel sent after it (an Output widget's
//     msg_id set, the output it captures, the reset). The converse is
//     kept too: the side owner delivers a message only once the output
//     the kernel sent before it has been published (SideReady), so a comm
//     handler's output never overtakes the cell's last output. Each side
//     waits only for what the kernel sent before the message it holds
//     (the worker for kernel.Event.SideBefore side messages), so the two
//     never wait for each other.
//   - comms (comms.go) is the table of the kernel's open comms: the
//     kernel's are every client's, a client's are its owner's; SendComm
//     checks a client's comm message against it (ownership, Config's
//     MaxComms, CommRate, MaxCommBytes) and sends it beside the queue
//     (SendCommID: with the msg_id the client chose, when it is free);
//     CommInfo relays comm_info. A restart empties it.
//   - jupyterState (jupyter.go) keeps what the Jupyter face needs beyond
//     the /v1 view: the order of enqueued executions and stop_on_error's
//     aborts, the execution count and the random id of each kernel
//     incarnation.
//   - An execution's own envs and cwd (ExecRequest.Envs, Cwd;
//     execenv.go, execenvrun.go) are applied and put back by the worker
//     in the execution's turn: a silent execution of the kernel's
//     language before the code saves and sets them, another after it
//     restores them (after an error, an interrupt or an obeyed timeout
//     too; a kernel restarted instead comes back clean). The code of
//     every language is in one table (settingsCode); the snippets'
//     output is not the execution's and they are not counted.
//   - Commands (commands.go) are the session's shell commands
//     (sandbox.CommandRunner): each with a small pid, one goroutine that
//     reads its output into command events (the caps of an execution's
//     output) and its timeout; a bounded number run and are kept; the
//     terminals (a PTY each) are its too. Close kills them all.
//   - Contexts (contexts.go) is the table of the session's kernels: its
//     first and one more Kernel per context started in the same sandbox
//     (sandbox.ContextStarter), each with its own queue, worker, kernel
//     connection, Jupyter state, requests, side stream and comms (a
//     kernel's Comms), sharing the session's sandbox, files, event log,
//     idle pause and activity. Resolve finds where a request runs (a
//     context id, a language's default context started on first use, or
//     the first).
//
// The gateway's Jupyter face renders the same sessions for Jupyter
// clients; what it needs beyond the /v1 view (execute options and parent
// headers on the started event, the owner of an execution's input(),
// stop_on_error, the kernel's identity and a bounded pass-through of its
// read-only requests) is in jupyter.go and direct.go; the Jupyter Server
// sessions (/api/sessions) whose kernel a session is are held by it and
// kept in its store record (jupytersessions.go); comms, which both faces
// relay, are in side.go and comms.go.
//
// The package consumes a small Runtime interface (kernel/runtime/local,
// kernel/runtime/docker and kernel/runtime/k8s implement it), a KernelConn
// (kernelconn.go; *kernel.Client implements it), a Store and an Observer,
// re-exports what its callers need of the layers below (below.go), and
// maps nothing to HTTP: callers test errors against the sentinels in
// errors.go.
package sessions
