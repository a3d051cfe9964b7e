/** Bundle is a Jupyter MIME bundle exactly as the gateway sent it (a raw JSON object; nil when absent): MIME type → value. Text types are strings, binary types (image/png) base64 strings, application/json any JSON value. */
export type MIMEBundle = {
    [mime: string]: unknown;
};
/** An output event of an execution (file events also appear in files) */
export type OutputEvent = StreamEvent | DisplayEvent | UpdateDisplayEvent | ClearOutputEvent | ResultEvent | ErrorEvent | FileEvent | PageEvent | SetNextInputEvent | AskExitEvent;
/** A WebSocket text frame from the server (JSON) */
export type ServerFrame = KernelEvent | QueuedEvent | StartedEvent | StreamEvent | DisplayEvent | UpdateDisplayEvent | ClearOutputEvent | ResultEvent | ErrorEvent | InputRequestEvent | FileEvent | DoneEvent | GapEvent | NetworkEvent | ContextEvent | CommandEvent | PageEvent | SetNextInputEvent | AskExitEvent | RejectedFrame | CompleteReplyFrame | InspectReplyFrame | CommEvent | CommSentFrame | CommInfoReplyFrame;
/** A WebSocket text frame from the client (JSON) */
export type ClientFrame = ExecuteFrame | InterruptFrame | InputReplyFrame | ResumeFrame | CompleteFrame | InspectFrame | CommFrame | CommInfoFrame;
/** A frame of the session's event log (with seq; an Envelope's fields first) */
export type LogEvent = KernelEvent | QueuedEvent | StartedEvent | StreamEvent | DisplayEvent | UpdateDisplayEvent | ClearOutputEvent | ResultEvent | ErrorEvent | InputRequestEvent | FileEvent | DoneEvent | GapEvent | NetworkEvent | ContextEvent | CommandEvent | PageEvent | SetNextInputEvent | AskExitEvent;
/** Limits are a session's resource limits. In CreateOptions a zero field means the gateway's default. */
export interface Limits {
    memory_mb?: number;
    cpus?: number;
    pids?: number;
    workspace_mb?: number;
}
/** Network is what a session's kernel may reach through the gateway's egress proxy: host patterns ("pypi.org", "*.pythonhosted.org", "api.example.com:443"), within what the gateway's operator allows. */
export interface Network {
    allow: string[] | null;
    /** Deny lists destinations refused even when Allow has them (names, literals, CIDR blocks; without a port, every port). */
    deny?: string[];
}
/** CreateSessionRequest is the body of POST /v1/sessions. */
export interface CreateSession {
    /** Language is the language of the session's first context (a kernel name such as "r", or an alias such as "js"); "" is Python. */
    language?: string;
    env?: {
        [key: string]: string;
    };
    idle_timeout_s?: number;
    /** zero fields: the gateway's defaults */
    limits?: Limits;
    /** nil: no network */
    network?: Network;
    /** Template names an operator preset (GET /v1/templates) whose fields fill those left unset; "" is "default". */
    template?: string;
    /** Metadata is stored with the session (at most 64 keys of 1..64 bytes, values of at most 512 bytes) and filters GET /v1/sessions. */
    metadata?: {
        [key: string]: string;
    };
    /** LifetimeS: the session is deleted this long after creation (at most the gateway's --max-lifetime, its default). */
    lifetime_s?: number;
    /** Volumes are the tenant's volumes to mount (POST /v1/volumes): name → a directory under /home/user (absolute, or relative to it), made if missing. At most 8; the paths must not overlap. */
    volumes?: {
        [key: string]: string;
    };
    /** PrivatePreviews makes the session's previews private (E2B's network allow_public_traffic=False): its preview host carries no grant, and a preview needs a link's token or the session's traffic access token (Session.TrafficAccessToken) in a header. */
    private_previews?: boolean;
    /** Lifecycle says what the session does when its lifetime or idle timeout ends (E2B's lifecycle): end it (the default), or pause it. */
    lifecycle?: Lifecycle;
    /** Snapshot starts the session from a snapshot of the tenant's (POST /v1/sessions/{id}/snapshots): its workspace and its contexts' variables are restored before the answer, which says what came back (Session.Restore). Language defaults to the snapshot's. */
    snapshot?: string;
}
/** UpdateSessionRequest is the body of PATCH /v1/sessions/{id}. */
export interface UpdateSession {
    idle_timeout_s?: number;
    /** LifetimeS: the session now ends this long from now (at most the gateway's --max-lifetime); 0 is now (E2B's set_timeout(0)): it ends, or pauses when its Lifecycle says so. */
    lifetime_s?: number;
    /** Network replaces the session's network rules while it runs (E2B's update_network): checked as at creation; new connections follow it at once and the open ones it refuses are closed. Only a session created with a network has one to change (409 no_network). */
    network?: Network;
}
/** Session is a session as the gateway reports it. */
export interface Session {
    id: string;
    /** idle, busy, restarting, dead or hibernated */
    state: string;
    runtime: string;
    created_at: string;
    expires_at: string;
    idle_timeout_s: number;
    queued: number;
    limits: Limits;
    /** nil: no network */
    network?: Network;
    /** frozen: by the idle pause (the next request thaws it) or by a client (PauseSession; until ResumeSession) */
    paused: boolean;
    /** the first context's kernel: python3, r, javascript, typescript or bash */
    language: string;
    /** the template it was created from */
    template: string;
    /** the client's, as given at creation */
    metadata: {
        [key: string]: string;
    } | null;
    /** when its lifetime ends (ExpiresAt: the earlier of this and idle expiry) */
    end_at: string;
    /** PausedByClient: a client paused it (PauseSession): frozen until ResumeSession. Paused without it is the idle freeze, which the next request thaws: to E2B's SDKs such a session is running. */
    paused_by_client: boolean;
    /** PreviewHost, on a gateway that serves previews: the preview of port P is at {P}-{PreviewHost} (E2B's get_host), a host that carries its grant and works until the session ends, unless its previews are private (PrivatePreviews: then the host carries none). */
    preview_host?: string;
    /** Volumes are the tenant's volumes it mounts: name → path. */
    volumes?: {
        [key: string]: string;
    };
    /** AccessToken, in the answers of POST /v1/sessions and GET /v1/sessions/{id} (E2B's envd access token): sent as the X-Access-Token header instead of the API key, it grants what runs inside this session (its code, files, commands, terminals and previews), not its lifecycle nor any other session, until the session ends. */
    access_token?: string;
    /** PrivatePreviews: its previews need a grant besides their host (CreateSessionRequest.PrivatePreviews). TrafficAccessToken, then, in the answers that carry AccessToken (E2B's traffic access token): sent in the E2b-Traffic-Access-Token (or Glassroom-Preview-Token) header, it grants the previews of every port of this session until it ends. */
    private_previews?: boolean;
    traffic_access_token?: string;
    /** Lifecycle is the session's (CreateSessionRequest.Lifecycle), when it pauses at its timeout; PausedAtTimeout: it is paused so now (PausedByClient is set too). */
    lifecycle?: Lifecycle;
    paused_at_timeout?: boolean;
    /** Restore is, in the answer that creates a session from a snapshot (or a fork), what it got of it. */
    restore?: RestoreReport;
    /** Hibernated: the session is hibernated (its sandbox freed, its state in a snapshot; state "hibernated"): its next use wakes it, or with its lifecycle's auto_resume false a resume does. */
    hibernated?: boolean;
}
/** SessionList is the body of GET /v1/sessions: a page of sessions and the token of the next (nil on the last). */
export interface SessionList {
    sessions: Session[] | null;
    next_token: string | null;
}
/** ExecuteRequest is the body of POST /v1/sessions/{id}/execute. Code is required. Context names the context to run in; Language, a language whose default context to run in (started on first use); neither: the session's first context. Both must agree. Envs and Cwd apply to this execution only: the variables are set (the session env's name policy) and the working directory entered (a path in the workspace, relative to /home/user or absolute under it; it must exist) before the code runs, and put back as they were after it, even when it fails, is interrupted or times out. */
export interface ExecuteRequest {
    code: string | null;
    timeout_s?: number;
    id?: string;
    context?: string;
    language?: string;
    envs?: {
        [key: string]: string;
    };
    cwd?: string;
    /** UserExpressions names expressions the kernel evaluates after the code (ipykernel: only when the code succeeded); Execution.UserExpressions has their results. */
    user_expressions?: {
        [key: string]: string;
    };
}
/** Execution is the outcome of one execution, from Execute or Run. */
export interface Execution {
    id: string;
    /** ok, error, timeout, interrupted or died */
    status: string;
    execution_count: number;
    stdout: string;
    stderr: string;
    /** Outputs are the execution's output events in order: stream, display, update_display, clear_output, result, error and file, then what the code asked of its front end (page, set_next_input, ask_exit). */
    outputs: OutputEvent[] | null;
    /** Result is the value of the last expression (nil when there is none). */
    result: MIMEBundle | null;
    /** Error is the exception the code raised, if any. */
    error: ExecError | null;
    /** Truncated says output was dropped past the gateway's caps. */
    truncated: boolean;
    /** StateLost says the variables did not survive (the kernel restarted or died). */
    state_lost: boolean;
    reason?: string;
    duration_ms: number;
    files: FileChange[] | null;
    /** UserExpressions answers ExecuteRequest.UserExpressions: per name, {"status": "ok", "data": MIME bundle} or the error ({"status": "error", "ename", "evalue", "traceback"}). */
    user_expressions?: unknown;
}
/** IntrospectRequest is the body of POST /v1/sessions/{id}/complete and /inspect: the code and a cursor position in Unicode code points (both required); DetailLevel (0 or 1) is inspection's. */
export interface CompleteRequest {
    code: string | null;
    cursor_pos: number | null;
    detail_level?: number;
    /** as in ExecuteRequest */
    context?: string;
    /** as in ExecuteRequest */
    language?: string;
}
/** IntrospectRequest is the body of POST /v1/sessions/{id}/complete and /inspect: the code and a cursor position in Unicode code points (both required); DetailLevel (0 or 1) is inspection's. */
export interface InspectRequest {
    code: string | null;
    cursor_pos: number | null;
    detail_level?: number;
    /** as in ExecuteRequest */
    context?: string;
    /** as in ExecuteRequest */
    language?: string;
}
/** Completion is the kernel's answer to a completion request: the matches replace code[CursorStart:CursorEnd] (positions in Unicode code points). */
export interface Completion {
    matches: string[] | null;
    cursor_start: number;
    cursor_end: number;
    /** when the kernel tells the kinds of its matches */
    types?: CompletionType[];
}
/** Inspection is the kernel's answer to an inspection request (the help for the name at the cursor); Data's text/plain carries ANSI colours. */
export interface Inspection {
    found: boolean;
    data: MIMEBundle | null;
    metadata?: unknown;
}
/** FileInfo is the answer to a file upload or directory creation. */
export interface FileInfo {
    path: string;
    size: number;
    /** "dir" for MakeDir */
    type?: string;
}
/** UploadedFile is what a signed upload URL's multipart form stored, in E2B's shape exactly (its envd answers a form with a list of these, and its users compare the whole answer): Path is the file's absolute path in the sandbox. */
export interface UploadedFile {
    name: string;
    path: string;
    /** "file" */
    type: string;
}
/** Listing is a directory listing; Truncated says it was cut at the gateway's limit. */
export interface Listing {
    entries: FileEntry[] | null;
    truncated: boolean;
}
/** Health is the answer of GET /healthz. */
export interface Health {
    status: string;
    runtime: string;
    pool: Pool;
}
/** Context is one kernel of a session: its own language, working directory and variables, sharing the session's workspace and limits. */
export interface Context {
    /** "default" for the session's first */
    id: string;
    /** the kernel's name: python3, r, javascript, typescript, bash */
    language: string;
    cwd: string;
    /** idle, busy, restarting or dead */
    state: string;
    /** requests naming only its language run here */
    default: boolean;
}
/** CreateContextRequest is the body of POST /v1/sessions/{id}/contexts. Language is required; Cwd is the kernel's working directory (relative to /home/user, or absolute under it; "" is /home/user). */
export interface CreateContext {
    language: string;
    cwd?: string;
}
/** Kernel is a language the gateway can run (GET /v1/kernels). */
export interface Kernel {
    name: string;
    language: string;
    display_name: string;
    aliases?: string[];
    /** Label is the notebook prompt's short label ("Python", "JS"). */
    label?: string;
    /** Mode is the notebook editor's syntax mode ("" for plain text). */
    mode?: string;
    /** LanguageInfo is the kernel's language_info without its version (name, mimetype, file_extension, codemirror_mode, pygments_lexer, nbconvert_exporter): what a saved notebook records. */
    language_info?: {
        [key: string]: unknown;
    };
}
/** EditRequest is the body of PATCH /v1/sessions/{id}/files/{path}: one command on a UTF-8 text file of the workspace. A nil pointer is an absent argument; an argument the command does not take is refused. - view: the file with numbered lines; ViewRange [start, end] (lines from 1, both included; end -1 for the end of the file) narrows it. - create: FileText becomes the file (parents created, an existing file replaced). - str_replace: OldStr, which must occur exactly once, becomes NewStr (absent: deleted). Zero or several matches fail (409) and change nothing. - insert: NewStr goes after line InsertLine (0: the top of the file; the number of lines: its end). */
export interface EditRequest {
    command: string;
    view_range?: number[];
    file_text?: string;
    old_str?: string;
    new_str?: string;
    insert_line?: number;
}
/** EditResult is the answer to an EditRequest (200; 201 when create made a new file). */
export interface EditResult {
    /** relative to the workspace */
    path: string;
    command: string;
    /** create made a new file */
    created?: boolean;
    /** bytes of the file after the command */
    size: number;
    /** lines of the file after the command */
    lines: number;
    /** Text is, for view, the lines asked for; for str_replace and insert, a snippet of the file around the change; each line as "%6d\t<line>\n" (its number right-aligned, a tab, the line without its line ending). Empty for create and for an empty file. */
    text?: string;
    /** StartLine and EndLine are the first and last line in Text. */
    start_line?: number;
    end_line?: number;
}
/** RunCommandRequest is the body of POST /v1/sessions/{id}/commands: Cmd (required, at most 64 KiB) runs as `bash -lc Cmd` in the session's sandbox, in Cwd (a workspace path; "" is /home/user) with Envs added to the session's environment (the same name policy). TimeoutS: the foreground default is the gateway's execution timeout; a background command has none unless given. Stdin is written first; a foreground command's stdin is then closed, a background one's stays open. */
export interface RunCommand {
    cmd: string;
    cwd?: string;
    envs?: {
        [key: string]: string;
    };
    timeout_s?: number;
    background?: boolean;
    stdin?: string;
    /** Login runs the command in a login shell (bash -lc), which reads /etc/profile and the workspace's ~/.bash_profile or ~/.profile; by default no start-up file runs. */
    login?: boolean;
    /** PTY runs the command on a pseudo-terminal of this size (E2B's pty): its output is stdout only, its stdin the terminal's keys (\x03 is Ctrl-C), .../resize changes its size. With PTY, cmd may be empty: an interactive bash. */
    pty?: TerminalSize;
}
/** CommandStdinRequest is the body of POST /v1/sessions/{id}/commands/{pid}/stdin: Data is written to the command's stdin, then it is closed if EOF. */
export interface CommandStdin {
    data?: string;
    eof?: boolean;
}
/** CommandInfo describes one shell command of a session (GET /v1/sessions/{id}/commands). PID is its process id in the sandbox where the sandbox's commands share a pid namespace (docker, k8s), else the session's own number for it (sessions.OwnPIDBase and up). ExitCode and DurationMS are set once it has ended: bash's status, 128+n when it died of signal n, -1 when it was killed before it had one (TimedOut: at its timeout). */
export interface CommandInfo {
    pid: number;
    cmd: string;
    cwd: string;
    running: boolean;
    exit_code?: number;
    started_at: string;
    duration_ms?: number;
    timed_out?: boolean;
    /** it runs on a pseudo-terminal */
    pty?: boolean;
}
/** Command is a command with its output so far (GET /v1/sessions/{id}/commands/{pid}), or a foreground command's result (POST /v1/sessions/{id}/commands). Stdout and Stderr together keep at most the gateway's per-execution stream cap; Truncated says some was not kept. */
export interface Command {
    pid: number;
    cmd: string;
    cwd: string;
    running: boolean;
    exit_code?: number;
    started_at: string;
    duration_ms?: number;
    timed_out?: boolean;
    /** it runs on a pseudo-terminal */
    pty?: boolean;
    stdout: string;
    stderr: string;
    truncated: boolean;
}
/** CommandStarted is the answer to a background command's start (201). */
export interface CommandStarted {
    pid: number;
}
/** TerminalControl is a text frame of the terminal WebSocket: from the client, {"type":"resize","cols":N,"rows":N}; from the server, once the shell has ended, {"type":"exit","exit_code":N}. */
export interface TerminalControl {
    type: string;
    cols?: number;
    rows?: number;
    exit_code?: number;
}
/** Template is an operator's session preset (GET /v1/templates). */
export interface Template {
    name: string;
    description?: string;
    language: string;
    limits: Limits;
    network: Network;
    idle_timeout_s?: number;
    env?: {
        [key: string]: string;
    };
}
/** Metrics is a session's resource use (GET /v1/sessions/{id}/metrics, E2B's names): CPU and memory from its sandbox's cgroup, disk from its workspace; bytes. Fields the runtime cannot see are zero. */
export interface Metrics {
    timestamp: string;
    cpu_count: number;
    cpu_used_pct: number;
    mem_used: number;
    mem_total: number;
    disk_used: number;
    disk_total: number;
}
/** MetricsHistory is a session's samples within a time range (GET /v1/sessions/{id}/metrics/history), oldest first: one every collection interval (5 s) while it runs, the last ten minutes or so. */
export interface MetricsHistory {
    samples: Metrics[] | null;
}
/** MoveFileRequest is the body of POST /v1/sessions/{id}/files-move. */
export interface MoveFile {
    from: string;
    to: string;
}
/** FileEvent is a frame of the files-watch WebSocket (E2B's FilesystemEvent): Type create, write, remove, rename, chmod, or overflow (events were dropped); Name relative to the watched directory. Entry, with ?entry=true, describes the path as it is when the event is sent (best effort: none once it is gone, and none for remove, rename and overflow). Type synced, with ID, answers the client's WatchSyncRequest of that ID: every event of a change made before the request was sent came before it. */
export interface FileWatchEvent {
    type: string;
    name?: string;
    entry?: FileEntry;
    id?: string;
}
/** WatchSyncRequest is the one frame a client sends on the files-watch WebSocket: {"type": "sync", "id": ...} (an ID of at most MaxWatchSyncID bytes) asks for a FileEvent of type synced with that ID, a barrier: a client that wrote a file and then syncs has its events once the answer comes. */
export interface WatchSyncRequest {
    type: string;
    id: string;
}
/** FileURLRequest is the body of POST /v1/sessions/{id}/files-url: a signed URL that grants Operation ("read": GET and HEAD; "write": PUT of the body, or POST of a multipart form's "file" part) on the one file Path, without the API key, for ExpiresS seconds (default 3600; at most a day; zero or less: already expired). */
export interface FileURLRequest {
    path: string;
    operation: string;
    expires_s?: number;
}
/** FileURL is a signed file URL (POST /v1/sessions/{id}/files-url). URL is the gateway's path and query (/v1/signed-files/{token}): the client puts its own base URL before it. It works until ExpiresAt or the session's end, whichever is first. */
export interface FileURL {
    url: string;
    path: string;
    operation: string;
    expires_at: string;
}
/** PreviewRequest is the body of POST /v1/sessions/{id}/previews: a URL of the preview of Port (a server in the sandbox, 1..65535) that a browser opens without the API key, for ExpiresS seconds (default 3600; at most a day). */
export interface PreviewRequest {
    port: number;
    expires_s?: number;
}
/** Preview is a preview of a server in the sandbox (POST /v1/sessions/{id}/previews), on the gateway's preview origin, one origin per session and port. URL is an expiring link to {port}-{session}.{preview domain}: its token becomes an HttpOnly cookie of that host; Token, sent in the Glassroom-Preview-Token header, lets a program in; both work until ExpiresAt or the session's end. Host ({port}-{session}-{tag}.{preview domain}, E2B's get_host) carries its own grant: whoever has it reaches the server until the session ends. */
export interface Preview {
    port: number;
    host: string;
    url: string;
    token: string;
    expires_at: string;
}
/** Port is a TCP port a process of the sandbox listens on (GET /v1/sessions/{id}/ports): Address is where (0.0.0.0, 127.0.0.1, ::, ::1). The kernels' own listeners are among them. */
export interface Port {
    port: number;
    address: string;
}
/** PortList is the answer of GET /v1/sessions/{id}/ports, lowest first. */
export interface PortList {
    ports: Port[] | null;
}
/** CreateVolumeRequest is the body of POST /v1/volumes: Name is 1 to 63 lower-case letters, digits, - and _; SizeMB is its quota (default the gateway's, usually 1024). */
export interface CreateVolumeRequest {
    name: string;
    size_mb?: number;
}
/** Volume is a tenant's named volume (GET /v1/volumes/{name}): SizeMB is its quota, UsedBytes what it holds, Mounts how many live sessions mount it. */
export interface Volume {
    name: string;
    size_mb: number;
    used_bytes: number;
    created_at: string;
    mounts: number;
}
/** VolumeList is the answer of GET /v1/volumes, by name. */
export interface VolumeList {
    volumes: Volume[] | null;
}
/** TerminalSize is a pseudo-terminal's size (each 1..1000; 0: 80 × 24), and the body of POST /v1/sessions/{id}/commands/{pid}/resize. */
export interface TerminalSize {
    cols: number;
    rows: number;
}
/** Snapshot is a captured session (POST /v1/sessions/{id}/snapshots, GET /v1/snapshots/{id}): its workspace and, for each context, its kernel's variables; Contexts says what was captured and what could not be. POST /v1/sessions {"snapshot": id} starts a session from it. */
export interface Snapshot {
    id: string;
    name?: string;
    session_id: string;
    created_at: string;
    size_bytes: number;
    contexts: SnapshotContext[] | null;
}
/** SnapshotList is the answer of GET /v1/snapshots, newest first. */
export interface SnapshotList {
    snapshots: Snapshot[] | null;
}
/** ForkRequest is the body of POST /v1/sessions/{id}/fork: Count new sessions (1 when absent) start from a capture of the session. */
export interface ForkRequest {
    count?: number;
}
/** ForkResult is the answer of POST /v1/sessions/{id}/fork: one entry per fork, each a session (with its restore) or the error that one met. */
export interface ForkResult {
    forks: Fork[] | null;
}
/** PauseRequest is the optional body of POST /v1/sessions/{id}/pause: KeepMemory false hibernates the session (Lifecycle) instead of freezing it. */
export interface PauseRequest {
    keep_memory?: boolean;
}
/** CreateSnapshotRequest is the optional body of POST /v1/sessions/{id}/snapshots: Name (1 to 128 of A-Z a-z 0-9 . _ -) labels the snapshot, and GET /v1/snapshots?name= finds it; names need not be unique. */
export interface CreateSnapshotRequest {
    name?: string;
}
/** KernelEvent is the session's kernel state (idle, busy, restarting or dead); the first frame of every connection. */
export interface KernelEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "kernel";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    state?: string;
    /** why it changed (a restart, a death) */
    reason?: string;
}
/** QueuedEvent says an execution waits in the session's queue. */
export interface QueuedEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "queued";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    /** executions ahead of it */
    position?: number;
}
/** StartedEvent says an execution started running. */
export interface StartedEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "started";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
}
/** StreamEvent is output the code wrote to stdout or stderr. */
export interface StreamEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "stream";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    /** stdout or stderr */
    name?: string;
    text?: string;
}
/** DisplayEvent is a rich output (display_data). */
export interface DisplayEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "display";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    data?: MIMEBundle;
    metadata?: unknown;
    display_id?: string;
}
/** UpdateDisplayEvent replaces the output shown under DisplayID. */
export interface UpdateDisplayEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "update_display";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    data?: MIMEBundle;
    metadata?: unknown;
    display_id?: string;
}
/** ClearOutputEvent clears the execution's output (Wait: at the next output). */
export interface ClearOutputEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "clear_output";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    wait?: boolean;
}
/** ResultEvent is the value of the execution's last expression. */
export interface ResultEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "result";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    data?: MIMEBundle;
    metadata?: unknown;
    display_id?: string;
    execution_count?: number;
}
/** ErrorEvent is the exception the code raised. */
export interface ErrorEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "error";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    /** the exception's name */
    name?: string;
    value?: string;
    /** with ANSI colours */
    traceback?: string[];
}
/** InputRequestEvent asks the client for a line of input (an input_reply frame answers it). */
export interface InputRequestEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "input_request";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    prompt?: string;
    password?: boolean;
}
/** FileChangeEvent is a workspace change the execution made (the schema FileEvent; not the files-watch FileEvent). */
export interface FileEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "file";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    path?: string;
    size?: number;
    /** created, modified or deleted */
    change?: string;
}
/** DoneEvent ends an execution. */
export interface DoneEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "done";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    execution_count?: number;
    /** ok, error, timeout, interrupted, died or unknown */
    status?: string;
    duration_ms?: number;
    /** output was dropped past the gateway's caps */
    truncated?: boolean;
    /** the variables did not survive */
    state_lost?: boolean;
    reason?: string;
    /** UserExpressions answers the execute frame's user_expressions. */
    user_expressions?: unknown;
}
/** GapEvent says events after the client's position have left the backlog: Seq is the last one lost. */
export interface GapEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "gap";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    reason?: string;
}
/** NetworkEvent is a connection the session's egress proxy refused. */
export interface NetworkEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "network";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    reason?: string;
    host?: string;
    port?: number;
    /** false: a refusal */
    allowed?: boolean;
}
/** ContextEvent says a context (Envelope.Context) was created or deleted (State); Name is its kernel. */
export interface ContextEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "context";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    name?: string;
    /** created or deleted */
    state?: string;
    reason?: string;
}
/** CommandEvent is a shell command's start (State "started", Text: the command), output (Name stdout or stderr, Text) or exit (State "exited"). */
export interface CommandEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "command";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    name?: string;
    text?: string;
    /** exited */
    duration_ms?: number;
    state?: string;
    /** exited: why it was killed */
    reason?: string;
    pid?: number;
    /** exited */
    exit_code?: number;
    /** exited */
    timed_out?: boolean;
}
/** PageEvent is help to show (obj?, obj??). */
export interface PageEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "page";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    data?: MIMEBundle;
}
/** SetNextInputEvent is the next cell's text (%load); Replace: it replaces the current cell. */
export interface SetNextInputEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "set_next_input";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    text?: string;
    replace?: boolean;
}
/** AskExitEvent says the code called exit(); KeepKernel: with keep_kernel=True, the kernel goes on. */
export interface AskExitEvent {
    /** Seq increases by one for every event of a session; a client resumes after the last one it saw. */
    seq: number;
    type: "ask_exit";
    /** ID is the client-chosen id of the execution the event belongs to. */
    id?: string;
    /** Context is the context whose kernel the event comes from; absent for the session's first context and for events of the whole session. */
    context?: string;
    keep_kernel?: boolean;
}
/** RejectedFrame answers a frame the gateway cannot act on (to its client only). */
export interface RejectedFrame {
    type: "rejected";
    id?: string;
    /** bad_frame, unknown_type, rate_limited, queue_full, bad_comm, ... */
    code: string;
    message: string;
}
/** CompleteReplyFrame answers a complete frame. */
export interface CompleteReplyFrame {
    type: "complete_reply";
    id: string;
    matches: string[] | null;
    cursor_start: number;
    cursor_end: number;
    /** when the kernel tells the kinds of its matches */
    types?: CompletionType[];
}
/** InspectReplyFrame answers an inspect frame. */
export interface InspectReplyFrame {
    type: "inspect_reply";
    id: string;
    found: boolean;
    data: MIMEBundle | null;
    metadata: unknown;
}
/** CommEvent is a message of the kernel's side stream, to every client of the session (not in the event log: no seq, never replayed). */
export interface CommEvent {
    type: "comm";
    /** Context is the context whose kernel sent it; absent for the session's first. */
    context?: string;
    msg: CommMessage;
}
/** CommSentFrame answers a client's comm frame: MsgID is the msg_id it went to the kernel as. */
export interface CommSentFrame {
    type: "comm_sent";
    id: string;
    msg_id: string;
}
/** CommInfoReplyFrame answers a comm_info frame: comm id → its target. */
export interface CommInfoReplyFrame {
    type: "comm_info_reply";
    id: string;
    comms: {
        [key: string]: CommTarget;
    } | null;
}
/** ExecuteFrame runs code, as ExecuteRequest does (ID is required; the execution's events carry it). */
export interface ExecuteFrame {
    type: "execute";
    id: string;
    code: string;
    timeout_s?: number;
    context?: string;
    language?: string;
    envs?: {
        [key: string]: string;
    };
    cwd?: string;
    user_expressions?: {
        [key: string]: string;
    };
}
/** InterruptFrame interrupts the running execution of Context, or of every context when absent. */
export interface InterruptFrame {
    type: "interrupt";
    context?: string;
}
/** InputReplyFrame answers the input_request of execution ID. */
export interface InputReplyFrame {
    type: "input_reply";
    id: string;
    value: string;
}
/** ResumeFrame asks for every event after Since to be replayed. */
export interface ResumeFrame {
    type: "resume";
    since: number;
}
/** CompleteFrame asks for completions (a complete_reply with its ID answers). */
export interface CompleteFrame {
    type: "complete";
    id: string;
    code: string;
    /** in Unicode code points */
    cursor_pos: number;
    context?: string;
    language?: string;
}
/** InspectFrame asks for help on the name at the cursor (an inspect_reply with its ID answers). */
export interface InspectFrame {
    type: "inspect";
    id: string;
    code: string;
    cursor_pos: number;
    /** 0 or 1 */
    detail_level: number;
    context?: string;
    language?: string;
}
/** CommFrame sends a comm message (comm_open, comm_msg or comm_close) to the session's first kernel; comm_sent or rejected answers. */
export interface CommFrame {
    type: "comm";
    id: string;
    /** Context is where a comm_open goes ("" or absent: the session's first context); a comm_msg or comm_close goes to the kernel whose comm it names. */
    context?: string;
    msg_type: string;
    /** a JSON object */
    content: unknown;
    /** a JSON object */
    metadata?: unknown;
    /** base64 */
    buffers?: string[];
}
/** CommInfoFrame asks for the open comms of TargetName ("": all). */
export interface CommInfoFrame {
    type: "comm_info";
    id: string;
    target_name?: string;
    /** Context is whose comms are listed ("" or absent: the session's first context's). */
    context?: string;
}
/** Lifecycle is what a session does at its timeout. OnTimeout "kill" (or empty) ends it; "pause" freezes its whole sandbox instead, memory and variables kept, until it is resumed (POST .../resume, or with AutoResume its next execution, command or preview connection), when its lifetime starts again. A paused session still ends at the gateway's maximum lifetime after its creation. KeepMemory false (with OnTimeout "pause") hibernates the session instead (E2B's keep_memory=False): it is snapshotted, its sandbox freed, and it keeps its id; its next use wakes it from the snapshot (with AutoResume), else uses answer 409 session_hibernated until a resume. */
export interface Lifecycle {
    on_timeout?: string;
    auto_resume?: boolean;
    keep_memory?: boolean;
}
/** RestoreReport is what a session started from a snapshot got of it (Session.Restore): Error when its workspace could not be restored. */
export interface RestoreReport {
    snapshot_id: string;
    error?: string;
    contexts: RestoredContext[] | null;
}
/** ExecError is an exception raised by executed code. Traceback lines are as the kernel sent them (with ANSI colour codes). */
export interface ExecError {
    name: string;
    value: string;
    traceback: string[] | null;
}
/** FileChange is a workspace change an execution made. */
export interface FileChange {
    path: string;
    size: number;
    /** created, modified or deleted */
    change: string;
}
/** CompletionType describes one match: its text, kind (function, module, ...), the span it replaces and, for callables, its signature. */
export interface CompletionType {
    text: string;
    type: string;
    start: number;
    end: number;
    signature?: string;
}
/** FileEntry is one entry of a directory listing. */
export interface FileEntry {
    name: string;
    path: string;
    size: number;
    mtime: string;
    /** file, dir, symlink or other */
    type: string;
    /** permission bits, at most 0o7777 */
    mode: number;
    /** SymlinkTarget (a symlink's): where it points, an absolute sandbox path when in the workspace; TargetType: what that is, when known. */
    symlink_target?: string;
    target_type?: string;
    /** Metadata is a regular file's (uploaded with the Glassroom-File-Metadata header, or set by its code as user.e2b. attributes). */
    metadata?: {
        [key: string]: string;
    };
}
/** Pool is the gateway's warm pool of pre-started kernels: how many it keeps (Target), has ready and is starting. */
export interface Pool {
    target: number;
    ready: number;
    starting: number;
}
/** SnapshotContext is one context of a snapshot: Captured are the names its kernel's state holds, Uncaptured those it does not, with why ("*": none of the kernel's variables, as for JavaScript). */
export interface SnapshotContext {
    context: string;
    language: string;
    cwd: string;
    default: boolean;
    state?: string;
    captured: string[] | null;
    uncaptured: Uncaptured[] | null;
}
/** Fork is one fork's outcome. */
export interface Fork {
    session?: Session;
    error?: ForkError;
}
/** CommMessage is a kernel message of no pending request, as a comm frame carries it: comm_open, comm_msg and comm_close (widgets, whenever the kernel sends them), the output and status of a comm message's handler (stream, display_data, status, ...), debug_event, and the output of a thread a cell left running. ParentHeader.MsgID is the msg_id of the message that caused it: a comm frame's (its comm_sent MsgID), an execution's (its id), or "" for none. */
export interface CommMessage {
    header: CommHeader;
    parent_header: CommParent;
    content: unknown;
    metadata: unknown;
    /** Buffers are the message's binary buffers (base64 strings on the wire; [] when none). */
    buffers: string[] | null;
}
/** CommTarget describes one open comm in a comm_info_reply. */
export interface CommTarget {
    target_name: string;
}
/** RestoredContext is one context's restore: Context is its id in the new session, From in the snapshot; Error says why none of its variables came back (its kernel runs, empty). */
export interface RestoredContext {
    context: string;
    from: string;
    language: string;
    restored: string[] | null;
    failed: Uncaptured[] | null;
    error?: string;
}
/** Uncaptured is a name a snapshot (or a restore) lacks, and why. */
export interface Uncaptured {
    name: string;
    reason: string;
}
/** ForkError is why one fork failed: the code and message an error response of the same cause carries. */
export interface ForkError {
    code: string;
    message: string;
}
/** CommHeader is a CommMessage's header: the kernel's msg_id and msg_type. */
export interface CommHeader {
    msg_id: string;
    msg_type: string;
}
/** CommParent names a CommMessage's parent message ("" for none). */
export interface CommParent {
    msg_id: string;
}
