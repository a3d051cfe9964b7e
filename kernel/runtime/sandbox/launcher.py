# glassroom's kernel launcher, run as
# `python3 -I -B -c <this file> --kernel NAME -f <connection file>`.
#
# For python3 it starts ipykernel like ipykernel_launcher does, with these
# changes:
#  - stdout/stderr are sent in messages of at most CHUNK characters: a
#    writer that gets ahead of the kernel's I/O thread waits for it, so a
#    print loop never builds one giant message;
#  - the working directory (the workspace) joins sys.path only after the
#    kernel has loaded, so files there cannot replace the kernel's modules;
#  - the user site directory (in the workspace, where pip installs) joins
#    sys.path, and its .pth files run, only at the first execution; after
#    each cell and each ! or %pip command, what pip installed meanwhile
#    imports at once (UserSite);
#  - IPython's history is kept in memory: no SQLite file, and no saving
#    thread woken after every cell (40 busy sessions on 2 cores: 488
#    instead of 440 exec/s); %history and Jupyter's history_request still
#    answer;
#  - given --rich CODE (richoutput.py), it runs CODE's register(shell)
#    before the workspace joins sys.path: a matplotlib figure and a pandas
#    DataFrame then also carry glassroom's structured JSON.
#  - matplotlib's inline plots fall back to a CJK font (CJK_FONT) for the
#    glyphs DejaVu Sans lacks, when that font is installed.
#  - its kernel_info_reply says whether the Jupyter debugger is there
#    ("debugger": true when debugpy imports), which ipykernel 6 leaves to
#    its kernelspec; debugpy, once a client starts the debugger, listens
#    on the sandbox's own 127.0.0.1 only (ipykernel's choice), and the
#    cells it debugs are written to the sandbox's /tmp.
#
# For r (IRkernel) and javascript/typescript (Deno's `deno jupyter
# --kernel`) it starts that kernel as its child and stays as a bridge
# between the sockets the gateway expects (the connection file's unix
# sockets, transport "ipc") and the kernel's own:
#  - Deno listens on TCP only: the launcher reserves five free ports on
#    127.0.0.1 of the sandbox's own network namespace (bound with
#    SO_REUSEADDR and never listening, so no other kernel's launcher can
#    pick them while Deno binds them), writes a TCP connection file with the
#    same key in a private directory, and splices every connection the
#    gateway makes to a new TCP connection to Deno (ZMTP is the same byte
#    stream over both, PUB/SUB included). Nothing listens outside the
#    sandbox.
#  - IRkernel speaks ipc itself: it binds the gateway's shell, iopub and
#    stdin sockets directly. Its control socket is its own, next to them,
#    reached through the launcher; the gateway's heartbeat is answered by
#    the launcher (IRkernel answers only between cells, and a cell may run
#    longer than the gateway waits for a heartbeat).
#  - Control is read message by message (the rest is a plain splice): a
#    kernel_info_request there is answered through the kernel's shell
#    channel, where both kernels publish the busy/idle status the gateway
#    waits for (neither does on control); an interrupt_request to IRkernel
#    (which ignores it) becomes a SIGINT to R and a signed interrupt_reply.
#    Deno interrupts itself on interrupt_request.
#  - Deno publishes a cell's console output from another task than its
#    idle status, so the tail of the output used to follow the idle (and
#    was lost, or went to the next cell): the launcher queues a silent
#    sync execution behind each cell and holds the cell's idle until the
#    sync's marker, published through the same queue as the output, has
#    passed (IOPubFilter). When Deno's socket buffer is full, the two
#    tasks' writes can also interleave (a status inside a stream frame):
#    the reader of Deno's iopub then skips to the next message and ends
#    the broken one, so the gateway's stream stays in step (FrameReader).
#  - Each direction of a spliced connection buffers one read at most, like
#    the egress forwarder; a message held to be read is at most HOLD bytes.
#  - The kernel runs in its own process group and dies with the launcher
#    (PR_SET_PDEATHSIG). The launcher exits when the kernel does, with its
#    exit status, or killed by the same signal. SIGINT to the launcher
#    interrupts the kernel (SIGINT to R, interrupt_request to Deno);
#    SIGTERM and SIGHUP are passed on.
#  - Nothing in the working directory or the environment steers the
#    kernel's start: R runs without site or user profiles and environ
#    files, without the saved workspace and without a user library; Deno
#    starts in / (it has no --no-config: deno.json, package.json, import
#    maps and node_modules are discovered from its working directory, and /
#    is read-only and holds none), with DENO_DIR in a fresh private
#    directory, no update check, no prompts, and enters the working
#    directory with a silent Deno.chdir before the gateway can connect.
#    The launcher drops every R_* and DENO_* variable it is given.
#
# When glassroom sets GLASSROOM_EGRESS_SOCKET (the session has a network
# allowlist), it first starts the egress forwarder: a forked process that
# listens on 127.0.0.1:PROXY_PORT in the sandbox's own network namespace
# and splices each connection to the gateway's proxy through that unix
# socket; HTTP_PROXY and friends point the kernel (and pip, and
# subprocesses) at it. It runs in its own session, ignores SIGINT (an
# interrupt signals the kernel's process group), and exits when the kernel
# does; a kernel restart starts a fresh one. When another kernel of the
# same sandbox already forwards that port, the forwarder waits and takes
# the port over once that kernel's forwarder is gone. Code that kills it
# loses its own network until the next restart, nothing more.
import sys

CHUNK = 64 * 1024
PROXY_PORT = 3128
PROXY_BUSY = b"HTTP/1.1 502 glassroom egress: proxy unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
READ = 64 * 1024
HOLD = 64 * 1024
DELIM = b"<IDS|MSG>"
SYNC = "glassroom_sync"
SYNC_WAIT = 5.0
# ZMTP 3 frame flags use the low three bits; the rest are reserved (zero).
RESERVED_FLAGS = 0xF8
# No frame of a kernel is this large (the gateway cuts iopub frames at
# 8 MiB); a larger size is text read as a header.
MAX_FRAME = 1 << 32
# Every message of Deno's iopub begins with its delimiter frame (no topic).
MESSAGE_START = b"\x01\x09" + DELIM
CHANNELS = ("shell", "iopub", "stdin", "control", "hb")
# The font matplotlib falls back to for the glyphs its default (DejaVu Sans)
# lacks, Chinese, Japanese and Korean labels: fonts-wqy-microhei
# (images/python/libraries.txt), in the kernel image and on the local
# runtime's host. Without it the kernel keeps matplotlib's defaults.
CJK_FONT = "WenQuanYi Micro Hei"
CJK_FONT_FILE = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"


def bound_stream_messages(OutStream):
    write = OutStream.write

    def pending(self):
        # Characters written and not yet sent: ipykernel up to 6.28 (Debian
        # bookworm's 6.17, the local runtime's host) has one buffer, 6.29 on
        # (trixie's, the kernel image) one per parent header.
        buf = getattr(self, "_buffer", None)
        if buf is not None:
            return buf.tell()
        with self._buffer_lock:
            return sum(b.tell() for b in self._buffers.values())

    def bounded_write(self, string):
        if not isinstance(string, str):
            return write(self, string)  # raises TypeError, as before
        for i in range(0, max(len(string), 1), CHUNK):
            write(self, string[i:i + CHUNK])
            if pending(self) >= CHUNK:
                self.flush()
        return len(string)

    OutStream.write = bounded_write

    # flush() hands a send to the I/O thread and waits for it: two wake-ups
    # of that thread and a sleep of this one, about six times per cell
    # (before and after the code, in the display hook, for stdout and
    # stderr), most of them with nothing written. A flush returns at once
    # when nothing is written and no send is in flight: a _flush that has
    # taken the buffer and not yet handed its message on is counted, so a
    # flush never returns before output written before it is queued on
    # iopub, ahead of the idle status and the reply's other messages.
    flush = OutStream.flush
    flush_now = OutStream._flush

    def counted_flush(self):
        self._glassroom_in_flight = getattr(self, "_glassroom_in_flight", 0) + 1
        try:
            return flush_now(self)
        finally:
            self._glassroom_in_flight -= 1

    def quick_flush(self):
        # The buffer is read before the count: a _flush counts itself before
        # it takes the buffer.
        if getattr(self, "echo", None) is None and pending(self) == 0 and not getattr(self, "_glassroom_in_flight", 0):
            return None
        return flush(self)

    OutStream._flush = counted_flush
    OutStream.flush = quick_flush


class End:
    # One side of a relayed connection: what waits to be written to it,
    # whether it has no more to read (eof), whether writing to it is shut.
    # filt, on both sides of a control connection, reads its messages;
    # client is the side the gateway (or a proxy client) connected from.

    def __init__(self, sock, filt=None, client=False):
        self.sock = sock
        self.peer = None
        self.out = b""
        self.eof = False
        self.shut = False
        self.mask = 0
        self.closed = False
        self.filt = filt
        self.client = client


class SpliceLoop:
    # A single-threaded select loop: it splices pairs of stream sockets and
    # calls handlers for other file descriptors (listeners, the signal
    # pipe, the launcher's own kernel connections). Each direction of a
    # pair reads only while the other side has nothing pending: one read at
    # most is buffered per direction.

    def __init__(self):
        import selectors
        self.sel = selectors.DefaultSelector()
        self.R, self.W = selectors.EVENT_READ, selectors.EVENT_WRITE

    def watch(self, fileobj, handler):
        self.sel.register(fileobj, self.R, handler)

    def unwatch(self, fileobj):
        try:
            self.sel.unregister(fileobj)
        except (KeyError, ValueError):
            pass

    def pair(self, a_sock, b_sock, filt=None):
        a_sock.setblocking(False)
        b_sock.setblocking(False)
        a, b = End(a_sock, filt, True), End(b_sock, filt)
        a.peer, b.peer = b, a
        if filt is not None:
            filt.client = a
        self.update(a)
        self.update(b)

    def update(self, e):
        if e.closed:
            return
        mask = (self.R if not e.eof and not e.peer.out else 0) | (self.W if e.out else 0)
        if mask != e.mask:
            if e.mask and mask:
                self.sel.modify(e.sock, mask, e)
            elif mask:
                self.sel.register(e.sock, mask, e)
            else:
                self.sel.unregister(e.sock)
            e.mask = mask

    def close(self, e):
        for x in (e, e.peer):
            if x.mask:
                self.sel.unregister(x.sock)
                x.mask = 0
            x.sock.close()
            x.closed = True
        if e.filt is not None:
            e.filt.closed = True

    def flush(self, x):
        try:
            x.out = x.out[x.sock.send(x.out):]
        except (BlockingIOError, InterruptedError):
            pass

    def settle(self, e):
        for x in (e, e.peer):
            if x.peer.eof and not x.out and not x.shut:
                x.shut = True
                try:
                    x.sock.shutdown(1)  # SHUT_WR
                except OSError:
                    pass
        if e.eof and e.peer.eof and not e.out and not e.peer.out:
            self.close(e)
            return
        self.update(e)
        self.update(e.peer)

    def push(self, e, data):
        # Queues data to be written to e (a filter's injected reply).
        if e.closed or not data:
            return
        e.out += data
        try:
            self.flush(e)
        except OSError:
            self.close(e)
            return
        self.update(e)
        self.update(e.peer)

    def splice(self, e, mask):
        try:
            if mask & self.W:
                self.flush(e)
            if mask & self.R:
                data = e.sock.recv(READ)
                if data:
                    if e.filt is None:
                        e.peer.out += data
                    elif e.client:
                        e.peer.out += e.filt.from_client(data)
                        e.out += e.filt.take()
                    else:
                        e.peer.out += e.filt.from_kernel(data)
                    if e.peer.out:
                        self.flush(e.peer)
                    if e.out:
                        self.flush(e)
                else:
                    e.eof = True
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.close(e)
            return
        self.settle(e)

    def poll(self, timeout):
        for key, mask in self.sel.select(timeout):
            h = key.data
            if isinstance(h, End):
                if not h.closed:
                    self.splice(h, mask)
            else:
                h(mask)


def relay_egress(listener, path, parent):
    import os
    import socket

    splice = SpliceLoop()
    listener.setblocking(False)

    def accept(_):
        try:
            c, _ = listener.accept()
        except OSError:
            return
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.setblocking(False)
        try:
            u.connect(path)
        except OSError:
            u.close()
            try:
                c.sendall(PROXY_BUSY)
            except OSError:
                pass
            c.close()
            return
        splice.pair(c, u)

    splice.watch(listener, accept)
    while True:
        splice.poll(1.0)
        if os.getppid() != parent:
            return


def bind_proxy():
    # The forwarder's listener, or None while another kernel of this
    # sandbox holds the port.
    import errno
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", PROXY_PORT))
    except OSError as e:
        listener.close()
        if e.errno == errno.EADDRINUSE:
            return None
        raise
    listener.listen(128)
    return listener


def start_egress():
    import os
    import signal
    import time

    path = os.environ.get("GLASSROOM_EGRESS_SOCKET")
    if not path:
        return
    listener = bind_proxy()
    parent = os.getpid()
    if os.fork() == 0:
        code = 0
        try:
            os.setsid()
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            while listener is None and os.getppid() == parent:
                time.sleep(1.0)
                listener = bind_proxy()
            if listener is not None:
                relay_egress(listener, path, parent)
        except BaseException:
            code = 1
            import traceback
            traceback.print_exc()
        finally:
            os._exit(code)
    if listener is not None:
        listener.close()
    url = "http://127.0.0.1:%d" % PROXY_PORT
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        os.environ[name] = url
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "localhost,127.0.0.1,::1"


def run_ipykernel(args, rich):
    import os

    start_egress()
    from ipykernel import iostream, kernelapp

    bound_stream_messages(iostream.OutStream)
    quicker_message_handling()
    app = kernelapp.IPKernelApp.instance()
    app.kernel_class = debugger_reporting_kernel()
    if os.path.exists(CJK_FONT_FILE):
        # matplotlib's inline backend applies InlineBackend.rc when pyplot
        # loads: glyphs DejaVu Sans lacks fall back to the CJK font.
        from traitlets.config import Config

        c = Config()
        c.InlineBackend.rc = {"font.family": ["sans-serif", CJK_FONT]}
        app.update_config(c)
    app.initialize(args + ["--IPKernelApp.ignore_cwd=True", "--HistoryManager.hist_file=:memory:"])
    if rich is not None:
        register_rich_output(app.shell, rich)
    at = next((i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))), len(sys.path))
    sys.path.insert(at, "")
    UserSite(app.shell)
    InterruptGate(app.kernel, app.shell)
    app.start()


def quicker_message_handling():
    # Two costs of every execute_request that change nothing a client sees
    # (about 7 % of a kernel's CPU per `x + 1`, profiled):
    # - jupyter_client parses each header's date with dateutil's general
    #   parser, once the string has matched its ISO 8601 pattern; Python's
    #   own fromisoformat reads every string that pattern admits to the
    #   same datetime (dateutil stays for what fromisoformat refuses, so an
    #   invalid date fails as before);
    # - ipykernel asks inspect.signature, twice per execute, whether a
    #   method takes cell_id; the answer is fixed per function.
    from datetime import datetime

    from ipykernel import ipkernel, kernelbase
    from jupyter_client import jsonutil

    slow_parse = jsonutil.parse_date
    pattern = getattr(jsonutil, "ISO8601_PAT", None)
    ensure_tz = getattr(jsonutil, "_ensure_tzinfo", None)
    if pattern is not None and ensure_tz is not None:

        def parse_date(s):
            if s is None or not pattern.match(s):
                return s
            try:
                return ensure_tz(datetime.fromisoformat(s))
            except ValueError:
                return slow_parse(s)

        jsonutil.parse_date = parse_date

    accepts = getattr(kernelbase, "_accepts_cell_id", None)
    if accepts is not None:
        known = {}

        def accepts_cell_id(meth):
            fn = getattr(meth, "__func__", meth)
            try:
                return known[fn]
            except (KeyError, TypeError):
                pass
            answer = accepts(meth)
            try:
                known[fn] = answer
            except TypeError:
                pass
            return answer

        kernelbase._accepts_cell_id = accepts_cell_id
        if getattr(ipkernel, "_accepts_cell_id", None) is accepts:
            ipkernel._accepts_cell_id = accepts_cell_id


def debugger_reporting_kernel():
    # ipykernel 6 answers the Jupyter debugger's debug_request when debugpy
    # imports, but says so only in the kernelspec it installs, which
    # glassroom's clients never read: its kernel_info_reply says
    # "debugger": true too (the key JupyterLab's debugger reads there, as
    # ipykernel 7 says it in supported_features).
    from ipykernel.debugger import _is_debugpy_available
    from ipykernel.ipkernel import IPythonKernel

    class Kernel(IPythonKernel):
        @property
        def kernel_info(self):
            info = super().kernel_info
            info["debugger"] = bool(_is_debugpy_available)
            return info

    return Kernel


def register_rich_output(shell, code):
    # The structured rich output (richoutput.py, given whole by the
    # gateway) registers its display formatters before the workspace joins
    # sys.path. If it fails, the kernel runs without it.
    try:
        ns = {"__name__": "glassroom_richoutput", "__builtins__": __builtins__}
        exec(compile(code, "<glassroom rich output>", "exec"), ns)
        ns["register"](shell)
    except Exception as e:
        sys.__stderr__.write("glassroom launcher: no structured rich output: %r\n" % (e,))

class InterruptGate:
    # ipykernel ignores SIGINT between messages and makes it a
    # KeyboardInterrupt from the moment it takes a shell message until it
    # has handled it. One that lands after the message's busy status and
    # before the cell's code runs (while the kernel publishes
    # execute_input, runs its hooks, transforms and compiles the cell) was
    # ignored, or aborted the request (no reply ever came, and its caller
    # waited for one), or was swallowed by a hook (the code then ran on).
    # A client interrupts as soon as it sees busy or execute_input, and on
    # a loaded machine the kernel can take long to get from there to the
    # code. Here SIGINT outside the cell's code is held, from the busy
    # status of a shell message on, and raised as the code starts (the cell
    # ends in KeyboardInterrupt, as if the interrupt had come a moment
    # later); one after the code, or during a message that runs no code, is
    # dropped, and one while the kernel is idle hits nothing, as before.
    # The top-level-await path keeps ipykernel's own handler (it cancels
    # the cell's task).

    INTERRUPTED = compile("raise KeyboardInterrupt", "<interrupted before the cell ran>", "exec")

    def __init__(self, kernel, shell):
        import signal
        import time
        self.pending = False
        self.in_code = False
        self.busy_at = 0.0  # of the last shell message
        self.signalled_at = -1.0  # the last SIGINT between messages
        self.saved = None
        run_code = shell.run_code
        publish_status = kernel._publish_status

        def publish_status_noting_busy(status, *args, **kwargs):
            if status == "busy" and (args[0] if args else kwargs.get("channel")) == "shell":
                self.busy_at = time.monotonic()
            return publish_status(status, *args, **kwargs)

        def pre_handler_hook():
            self.pending, self.in_code = self.signalled_at >= self.busy_at, False
            self.saved = signal.signal(signal.SIGINT, self.on_sigint)

        def post_handler_hook():
            self.pending, self.in_code = False, False
            signal.signal(signal.SIGINT, self.saved)

        async def gated_run_code(code_obj, result=None, *, async_=False):
            if self.pending:
                self.pending, code_obj, async_ = False, self.INTERRUPTED, False
            self.in_code = True
            try:
                return await run_code(code_obj, result, async_=async_)
            finally:
                self.in_code = False

        kernel._publish_status = publish_status_noting_busy
        kernel.pre_handler_hook = pre_handler_hook
        kernel.post_handler_hook = post_handler_hook
        shell.run_code = gated_run_code
        signal.signal(signal.SIGINT, self.between_messages)

    def between_messages(self, signum, frame):
        import time
        self.signalled_at = time.monotonic()

    def on_sigint(self, signum, frame):
        if self.in_code:
            raise KeyboardInterrupt
        self.pending = True


class UserSite:
    # The user site directory (~/.local/lib/pythonX.Y/site-packages, in
    # the workspace), where pip installs (--user, its default when the
    # system's site-packages cannot be written). The interpreter runs
    # isolated (-I), so nothing there is read while the kernel starts: the
    # directory joins sys.path, and its .pth files run, at the first
    # execution (pre_execute), when the kernel is up; a .pth that hangs or
    # fails costs that cell, never the kernel's start. It goes where Python
    # puts it, before the system's site-packages (a package upgraded by
    # pip wins over the image's), after the workspace. After every cell,
    # and after every ! or %pip command (shell.system), a change of the
    # directory makes the import system look again and runs the .pth files
    # it has not run yet: a package pip just installed imports at once.

    def __init__(self, shell):
        import site
        self.path = site.getusersitepackages()
        self.added = False
        self.stamp = None
        self.pth = set()
        shell.events.register("pre_execute", self.refresh)
        shell.events.register("post_execute", self.refresh)
        system = shell.system

        def system_then_refresh(*args, **kwargs):
            try:
                return system(*args, **kwargs)
            finally:
                self.refresh()

        shell.system = system_then_refresh

    def refresh(self):
        import importlib
        import os
        import site
        try:
            st = os.stat(self.path)
            stamp = (st.st_ino, st.st_mtime_ns)
        except OSError:
            stamp = None
        if self.added and stamp == self.stamp:
            return
        self.stamp = stamp
        before = set(sys.path)
        if not self.added:
            self.added = True
            sys.path.append(self.path)
        try:
            names = sorted(n for n in os.listdir(self.path) if n.endswith(".pth") and n not in self.pth)
        except OSError:
            names = []
        for name in names:
            self.pth.add(name)
            try:
                site.addpackage(self.path, name, None)
            except SystemExit:
                pass
        new = [p for p in sys.path if p not in before]
        if new:
            sys.path[:] = [p for p in sys.path if p in before]
            at = next((i for i, p in enumerate(sys.path)
                       if p != self.path and p.endswith(("site-packages", "dist-packages"))), len(sys.path))
            sys.path[at:at] = new
        importlib.invalidate_caches()


def encode_frames(frames):
    # ZMTP 3 data frames of one message.
    out = []
    for i, f in enumerate(frames):
        more = 1 if i < len(frames) - 1 else 0
        if len(f) > 255:
            out.append(bytes([more | 2]) + len(f).to_bytes(8, "big"))
        else:
            out.append(bytes([more, len(f)]))
        out.append(f)
    return b"".join(out)


def zmtp_hello(socket_type):
    # Our greeting (ZMTP 3.0, NULL mechanism, not as-server) and READY.
    greeting = b"\xff" + b"\x00" * 8 + b"\x7f\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" * 32
    body = b"\x05READY\x0bSocket-Type" + len(socket_type).to_bytes(4, "big") + socket_type
    return greeting + bytes([4, len(body)]) + body


class FrameReader:
    # Reads the ZMTP stream of one direction: the peer's greeting and
    # commands pass as they come ("raw"); the frames of one message are held
    # until it is complete ("msg", with its bytes and frames) unless it
    # grows over hold bytes, when it streams on ("raw") unread.
    #
    # With resync (Deno's iopub), a frame header that cannot be one (flag
    # bits ZMTP reserves, or a size no message has) means the stream lost
    # its framing: Deno 2.9.6's PUB socket writes a message from one task
    # into the middle of another's when the socket's buffer is full (a
    # status in the middle of a flood's 1 MB stream frame), and what
    # follows that frame is the rest of its body. Passed on, the gateway's
    # reader would take text for a frame size and skip the session's
    # output for good. Here the bytes up to the next message's start (its
    # delimiter frame, which begins every Deno message) are dropped, and a
    # message left open is ended with an empty frame: the gateway drops the
    # broken message (its signature fails) and reads the next one.

    def __init__(self, hold, resync=False):
        self.hold = hold
        self.resync = resync
        self.buf = b""
        self.greet = 64
        self.left = 0  # bytes of a streamed frame still to pass
        self.streaming = False
        self.more = False
        self.raw = []
        self.frames = []
        self.size = 0
        self.lost = 0  # bytes dropped to resynchronise

    def feed(self, data):
        self.buf += data
        out = []
        while True:
            b = self.buf
            if self.greet or self.left:
                n = min(self.greet or self.left, len(b))
                if n == 0:
                    break
                out.append(("raw", b[:n], None))
                self.buf = b[n:]
                if self.greet:
                    self.greet -= n
                else:
                    self.left -= n
                    if not self.left and not self.more:
                        self.streaming = False
                continue
            if len(b) < 2:
                break
            flags = b[0]
            hl = 9 if flags & 2 else 2
            if self.resync and flags & RESERVED_FLAGS:
                if not self.skip_to_message(out):
                    break
                continue
            if len(b) < hl:
                break
            size = int.from_bytes(b[1:hl], "big")
            if self.resync and size > MAX_FRAME:
                if not self.skip_to_message(out):
                    break
                continue
            command = bool(flags & 4)
            if command or self.streaming or hl + size + self.size > self.hold:
                if self.raw:
                    out.append(("raw", b"".join(self.raw), None))
                    self.raw, self.frames, self.size = [], [], 0
                out.append(("raw", b[:hl], None))
                self.buf = b[hl:]
                self.left = size
                self.more = bool(flags & 1) and not command
                self.streaming = not command and (self.more or size > 0)
                continue
            if len(b) < hl + size:
                break
            self.raw.append(b[:hl + size])
            self.frames.append(b[hl:hl + size])
            self.size += hl + size
            self.buf = b[hl + size:]
            if not flags & 1:
                out.append(("msg", b"".join(self.raw), self.frames))
                self.raw, self.frames, self.size = [], [], 0
        return out

    def skip_to_message(self, out):
        # The stream lost its framing at self.buf[0]: ends the message the
        # reader of out is in (a streamed one), forgets the held frames,
        # and drops bytes up to the next message's start. False when none
        # is in the buffer yet (its last bytes are kept: the start may
        # straddle the next read).
        if not self.lost:
            sys.stderr.write("glassroom launcher: the kernel's iopub stream lost its framing; "
                             "skipping to its next message\n")
        if self.streaming:
            out.append(("raw", b"\x00\x00", None))
            self.streaming = self.more = False
        dropped = sum(len(r) for r in self.raw)
        self.raw, self.frames, self.size = [], [], 0
        at = self.buf.find(MESSAGE_START, 1)
        if at < 0:
            keep = len(MESSAGE_START) - 1
            dropped += max(len(self.buf) - keep, 0)
            self.buf = self.buf[-keep:]
            self.lost += dropped
            return False
        self.lost += dropped + at
        self.buf = self.buf[at:]
        return True


class FrameTracker:
    # Follows the ZMTP stream of one direction without holding it, to know
    # where a message may be inserted: after the greeting and the first
    # command (READY), between messages.

    def __init__(self):
        self.greet = 64
        self.head = b""
        self.left = 0
        self.more = False
        self.next_more = False
        self.command = False
        self.ready = False
        self.in_frame = False

    def boundary(self):
        return self.ready and not self.greet and not self.in_frame and not self.more

    def feed(self, data, pending):
        # Returns data with the pending messages (a list, emptied) inserted
        # at the first boundary.
        out, start, i, n = [], 0, 0, len(data)
        while True:
            if pending and self.boundary():
                out.append(data[start:i])
                out.extend(pending)
                del pending[:]
                start = i
            if i >= n:
                break
            if self.greet:
                k = min(self.greet, n - i)
                self.greet -= k
                i += k
                continue
            if self.left:
                k = min(self.left, n - i)
                self.left -= k
                i += k
                if not self.left:
                    self.frame_done()
                continue
            self.head += data[i:i + 1]
            i += 1
            self.in_frame = True
            hl = 9 if self.head[0] & 2 else 2
            if len(self.head) == hl:
                self.command = bool(self.head[0] & 4)
                self.next_more = bool(self.head[0] & 1) and not self.command
                self.left = int.from_bytes(self.head[1:], "big")
                self.head = b""
                if not self.left:
                    self.frame_done()
        out.append(data[start:])
        return b"".join(out)

    def frame_done(self):
        self.in_frame = False
        if self.command:
            self.ready = True
            self.more = False
        else:
            self.more = self.next_more


class ControlFilter:
    # Reads one control connection of a bridged kernel (see Bridge.control).

    def __init__(self, bridge):
        self.bridge = bridge
        self.up = FrameReader(HOLD)
        self.down = FrameTracker()
        self.pending = []
        self.client = None
        self.closed = False

    def from_client(self, data):
        out = []
        for kind, raw, frames in self.up.feed(data):
            if kind == "msg" and self.bridge.control(self, frames):
                continue
            out.append(raw)
        return b"".join(out)

    def from_kernel(self, data):
        return self.down.feed(data, self.pending)

    def take(self):
        if self.pending and self.down.boundary():
            data = b"".join(self.pending)
            del self.pending[:]
            return data
        return b""

    def inject(self, frames):
        self.pending.append(encode_frames(frames))


class IOPubFilter:
    # Reads one iopub connection of Deno, whose kernel publishes a cell's
    # console output from another task than its status: the tail of the
    # output can follow the cell's idle status (and then the next cell's
    # busy). For each execute_request the bridge queues, behind it, a
    # silent execution under the same header that broadcasts SYNC through
    # the same queue as the output (Bridge.synchronise). Here the cell's
    # idle status is held until SYNC has passed, so everything the cell
    # printed comes before it; the sync execution's own status,
    # execute_input and SYNC are dropped. A held idle goes out after
    # SYNC_WAIT anyway, or at once when the sync execution failed.

    def __init__(self, bridge):
        self.bridge = bridge
        self.reader = FrameReader(HOLD, resync=True)
        self.after = {}  # msg_id -> [held idle bytes or None, deadline, SYNC seen, second idle seen]
        self.client = None
        self.closed = False

    def from_client(self, data):
        return data

    def from_kernel(self, data):
        import json
        import time
        out = []
        for kind, raw, frames in self.reader.feed(data):
            if kind == "raw":
                out.append(raw)
                continue
            try:
                d = frames.index(DELIM)
                header = json.loads(frames[d + 2])
                parent = json.loads(frames[d + 3])
                msg_type, pid = header.get("msg_type"), parent.get("msg_id")
                state = json.loads(frames[d + 5]).get("execution_state") if msg_type == "status" else None
            except (ValueError, IndexError, AttributeError, TypeError):
                out.append(raw)
                continue
            a = self.after.get(pid)
            if a is None:
                if msg_type == SYNC:
                    continue
                if state == "busy" and parent.get("msg_type") == "execute_request":
                    self.bridge.synchronise(frames[d + 3], pid)
                if state == "idle" and self.bridge.syncing(pid):
                    if len(self.after) >= 16:
                        old = self.after.pop(next(iter(self.after)))
                        out.append(old[0] or b"")
                    self.after[pid] = [raw, time.monotonic() + SYNC_WAIT, False, False]
                    continue
                out.append(raw)
                continue
            if msg_type == SYNC:
                out.append(a[0] or b"")
                a[0], a[2] = None, True
            elif msg_type in ("status", "execute_input"):
                a[3] = a[3] or state == "idle"
            else:
                out.append(raw)
            if a[2] and a[3]:
                del self.after[pid]
        return b"".join(out)

    def boundary(self):
        return not self.reader.greet and not self.reader.left and not self.reader.streaming

    def due(self, now):
        # The held idle statuses to send now: their sync failed or is late.
        # An entry is forgotten SYNC_WAIT after that.
        if not self.boundary():
            return b""
        out = []
        for pid, a in list(self.after.items()):
            if a[0] is not None and (a[1] <= now or not self.bridge.syncing(pid)):
                out.append(a[0])
                a[0], a[1] = None, now + SYNC_WAIT
            elif a[0] is None and a[1] <= now:
                del self.after[pid]
        return b"".join(out)

    def next_deadline(self):
        return min((a[1] for a in self.after.values()), default=None)

    def take(self):
        return b""


class ZConn:
    # One of the launcher's own ZMTP connections: to a kernel socket as a
    # DEALER (it sends whole messages and hands each complete one it gets
    # to on_message), or from the gateway as the REP of the heartbeat.
    # Whatever waits to be sent is bounded by HOLD messages' worth; a peer
    # that lets more pile up is dropped.

    def __init__(self, splice, sock, on_message, socket_type=b"DEALER"):
        self.splice = splice
        self.sock = sock
        self.on_message = on_message
        self.reader = FrameReader(1 << 20)
        self.out = zmtp_hello(socket_type)
        self.closed = False
        self.mask = 0
        sock.setblocking(False)
        self.update()

    def send(self, frames):
        if self.closed:
            return
        self.out += encode_frames(frames)
        if len(self.out) > 16 * HOLD:
            self.close()
            return
        self.update()

    def update(self):
        if self.closed:
            return
        mask = self.splice.R | (self.splice.W if self.out else 0)
        if mask != self.mask:
            if self.mask:
                self.splice.sel.modify(self.sock, mask, self.ready)
            else:
                self.splice.sel.register(self.sock, mask, self.ready)
            self.mask = mask

    def close(self):
        if not self.closed:
            self.closed = True
            self.splice.unwatch(self.sock)
            self.sock.close()

    def ready(self, mask):
        try:
            if mask & self.splice.W and self.out:
                self.out = self.out[self.sock.send(self.out):]
            if mask & self.splice.R:
                data = self.sock.recv(READ)
                if not data:
                    self.close()
                    return
                for kind, _, frames in self.reader.feed(data):
                    if kind == "msg":
                        self.on_message(frames)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.close()
            return
        self.update()


class Bridge:
    # Runs a kernel that cannot serve the gateway's connection file itself
    # (see the top of this file) and relays between the two until the
    # kernel exits.

    # The kernel's quirks come as its profile (kernels.BridgeProfile, JSON
    # on the command line): transport "ipc" (it binds the gateway's
    # sockets itself) or "tcp" (the bridge relays every channel);
    # heartbeat "bridge" or "kernel"; interrupt "signal" or "message";
    # chdir_code and sync_code, or none; the environment it loses and
    # gets. Nothing here branches on a kernel's name.

    def __init__(self, kernel, profile, conn_file):
        import json
        import os
        import tempfile
        import uuid

        with open(conn_file) as f:
            self.info = json.load(f)
        if self.info.get("transport") != "ipc":
            raise SystemExit("glassroom launcher: kernel %s needs an ipc connection file" % kernel)
        if profile.get("transport") not in ("ipc", "tcp") or not profile.get("argv"):
            raise SystemExit("glassroom launcher: kernel %s has no usable bridge profile" % kernel)
        self.kernel = kernel
        self.profile = profile
        self.key = self.info["key"].encode()
        self.session = uuid.uuid4().hex
        self.cwd = os.getcwd()
        self.private = tempfile.mkdtemp(prefix="glassroom-kernel-")
        self.splice = SpliceLoop()
        self.child = None
        self.shell = None
        self.asked = {}  # kernel_info msg_id -> (control filter, identities)
        self.syncs = {}  # execute_request msg_id -> True while its sync runs
        self.iopubs = []  # IOPubFilters
        self.reserved = []
        self.ready = False
        self.startup = None  # what start-up waits for next
        self.upstream = {}  # channel -> address of the kernel's socket
        self.listeners = []

    def gateway_path(self, ch):
        return "%s-%d" % (self.info["ip"], self.info[ch + "_port"])

    def sign(self, parts):
        import hashlib
        import hmac
        return hmac.new(self.key, b"".join(parts), hashlib.sha256).hexdigest().encode()

    def message(self, msg_type, content, parent=b"{}", idents=(), header=None):
        import datetime
        import json
        import uuid
        if header is None:
            header = json.dumps({"msg_id": uuid.uuid4().hex, "session": self.session, "username": "kernel",
                                 "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                                 "msg_type": msg_type, "version": "5.3"}).encode()
        parts = [header, parent, b"{}", json.dumps(content).encode()]
        return list(idents) + [DELIM, self.sign(parts)] + parts

    def kernel_env(self):
        import os
        drop = tuple(self.profile.get("drop_env") or ())
        env = {k: v for k, v in os.environ.items() if not (drop and k.upper().startswith(drop))}
        env.update(self.profile.get("env") or {})
        for name, sub in (self.profile.get("private_env") or {}).items():
            env[name] = os.path.join(self.private, sub)
        return env

    def write_private(self, name, info):
        import json
        import os
        path = os.path.join(self.private, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(info, f)
        return path

    def argv(self, conn):
        import json
        return [a.replace("{conn_json}", json.dumps(conn)).replace("{conn}", conn) for a in self.profile["argv"]]

    def prepare_ipc(self):
        # The kernel (IRkernel) binds the gateway's shell, iopub and stdin
        # sockets itself; its control and heartbeat go next to them under
        # port numbers the gateway does not use. With heartbeat "bridge"
        # the launcher serves the gateway's heartbeat itself: IRkernel
        # answers it only between cells, and a cell may run longer than
        # the gateway waits.
        info = dict(self.info)
        used = {self.info[ch + "_port"] for ch in CHANNELS}
        for ch in ("control", "hb"):
            port = 1000 + self.info[ch + "_port"]
            while port in used:
                port += 1
            used.add(port)
            info[ch + "_port"] = port
        ip = self.info["ip"]
        self.upstream = {"control": "%s-%d" % (ip, info["control_port"]), "hb": "%s-%d" % (ip, info["hb_port"]),
                         "shell": self.gateway_path("shell")}
        conn = self.write_private("kernel.json", info)
        wait = [self.gateway_path(ch) for ch in ("shell", "iopub", "stdin")] + [self.upstream["control"]]
        return self.argv(conn), self.cwd, wait

    def prepare_tcp(self):
        # The kernel listens on loopback ports the launcher reserves (see
        # the top of this file); with chdir_code it starts in "/" and
        # enters the working directory by code (step).
        import socket
        info = {"transport": "tcp", "ip": "127.0.0.1", "key": self.info["key"],
                "signature_scheme": self.info.get("signature_scheme", "hmac-sha256")}
        if self.profile.get("kernel_name"):
            info["kernel_name"] = self.profile["kernel_name"]
        for ch in CHANNELS:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            self.reserved.append(s)
            info[ch + "_port"] = s.getsockname()[1]
            self.upstream[ch] = ("127.0.0.1", info[ch + "_port"])
        conn = self.write_private("kernel.json", info)
        return self.argv(conn), "/" if self.profile.get("chdir_code") else self.cwd, None

    def lift_address_space(self):
        # V8 reserves far more address space than it uses: lift a soft
        # limit (the sandbox's memory is bounded otherwise), refuse a hard
        # one with a reason.
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            raise SystemExit("glassroom launcher: the %s kernel cannot run under an address-space limit (RLIMIT_AS %d)" % (self.kernel, hard))
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_AS, (hard, hard))

    def spawn(self):
        import ctypes
        import os
        import subprocess

        if self.profile.get("unlimited_address_space"):
            self.lift_address_space()
        argv, cwd, wait = self.prepare_ipc() if self.profile["transport"] == "ipc" else self.prepare_tcp()
        libc = ctypes.CDLL(None, use_errno=True)

        def child_setup():
            os.setpgid(0, 0)
            libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL

        self.child = subprocess.Popen(argv, cwd=cwd, env=self.kernel_env(), preexec_fn=child_setup, close_fds=True)
        self.startup = wait

    def connect(self, addr):
        import socket
        if isinstance(addr, tuple):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        else:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(addr)
        except OSError:
            s.close()
            raise
        return s

    def step(self):
        # One step of start-up; True once the gateway's sockets are there.
        import json
        import os
        if self.profile["transport"] == "ipc":
            if not all(os.path.exists(p) for p in self.startup):
                return False
            try:
                s = self.connect(self.upstream["shell"])
            except OSError:
                return False
            self.shell = ZConn(self.splice, s, self.shell_reply)
            self.listen(["control", "hb"])
            return True
        if self.shell is None:
            try:
                s = self.connect(self.upstream["shell"])
            except OSError:
                return False
            self.shell = ZConn(self.splice, s, self.shell_reply)
            if not self.profile.get("chdir_code"):
                self.startup = "entered"
                return False
            code = self.profile["chdir_code"] % json.dumps(self.cwd)
            self.shell.send(self.message("execute_request", {"code": code, "silent": True, "store_history": False,
                                                             "user_expressions": {}, "allow_stdin": False,
                                                             "stop_on_error": True}))
            self.startup = "chdir"
            return False
        if self.startup == "chdir":
            if self.shell.closed:
                raise SystemExit("glassroom launcher: lost the kernel's shell during start-up")
            return False
        if self.startup != "entered":
            raise SystemExit("glassroom launcher: the kernel could not enter %s: %s" % (self.cwd, self.startup))
        for s in self.reserved:
            s.close()
        self.reserved = []
        self.listen(CHANNELS)
        return True

    def listen(self, channels):
        import os
        import socket
        for ch in channels:
            path = self.gateway_path(ch)
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            ls.bind(path)
            ls.listen(128)
            ls.setblocking(False)
            self.listeners.append(ls)
            self.splice.watch(ls, lambda _, ls=ls, ch=ch: self.accept(ls, ch))

    def accept(self, ls, ch):
        try:
            c, _ = ls.accept()
        except OSError:
            return
        if ch == "hb" and self.profile.get("heartbeat") == "bridge":
            box = []
            box.append(ZConn(self.splice, c, lambda frames: box[0].send(frames), b"REP"))
            return
        try:
            k = self.connect(self.upstream[ch])
        except OSError:
            c.close()
            return
        filt = None
        if ch == "control":
            filt = ControlFilter(self)
        elif ch == "iopub":
            filt = IOPubFilter(self)
            self.iopubs = [f for f in self.iopubs if not f.closed] + [filt]
        self.splice.pair(c, k, filt)

    def control(self, filt, frames):
        # A message from the gateway on control: True when the bridge
        # answers it itself.
        import hmac
        import json
        try:
            d = frames.index(DELIM)
        except ValueError:
            return False
        if len(frames) < d + 6 or not hmac.compare_digest(self.sign(frames[d + 2:d + 6]), frames[d + 1]):
            return False
        try:
            header = json.loads(frames[d + 2])
            msg_type, msg_id = header["msg_type"], header["msg_id"]
        except (ValueError, TypeError, KeyError):
            return False
        if msg_type == "interrupt_request" and self.profile.get("interrupt") == "signal":
            self.interrupt()
            filt.inject(self.message("interrupt_reply", {"status": "ok"}, frames[d + 2], frames[:d]))
            return True
        if msg_type == "kernel_info_request" and self.shell is not None and not self.shell.closed:
            if len(self.asked) >= 256:
                self.asked.pop(next(iter(self.asked)))
            self.asked[str(msg_id)] = (filt, frames[:d])
            self.shell.send(frames[d:])
            return True
        return False

    def synchronise(self, request_header, msg_id):
        # The kernel began the execute_request whose header this is: queue
        # the sync execution behind it, once (see IOPubFilter).
        import json
        if not self.profile.get("sync_code") or msg_id in self.syncs or self.shell is None or self.shell.closed:
            return
        if len(self.syncs) >= 256:
            self.syncs.pop(next(iter(self.syncs)))
        self.syncs[msg_id] = True
        code = self.profile["sync_code"] % json.dumps(SYNC)
        self.shell.send(self.message("execute_request", {"code": code, "silent": True, "store_history": False,
                                                         "user_expressions": {}, "allow_stdin": False,
                                                         "stop_on_error": False}, header=request_header))

    def syncing(self, msg_id):
        return self.syncs.get(msg_id, False)

    def shell_reply(self, frames):
        import json
        try:
            d = frames.index(DELIM)
            parent = json.loads(frames[d + 3])
            header = json.loads(frames[d + 2])
            msg_id, msg_type = str(parent["msg_id"]), header["msg_type"]
            content = json.loads(frames[d + 5])
        except (ValueError, TypeError, KeyError, IndexError):
            return
        if self.startup == "chdir" and msg_type == "execute_reply":
            ok = content.get("status") == "ok"
            self.startup = "entered" if ok else "%s: %s" % (content.get("ename"), content.get("evalue"))
            return
        if msg_type == "execute_reply":
            if msg_id in self.syncs and content.get("status") != "ok":
                self.syncs[msg_id] = False  # no SYNC will come
            return
        asked = self.asked.pop(msg_id, None)
        if asked is None:
            return
        filt, idents = asked
        if filt.closed:
            return
        filt.inject(list(idents) + frames[d:])
        self.splice.push(filt.client, filt.take())

    def tick(self):
        # Sends the held idle statuses that are due; returns how long the
        # loop may sleep.
        import time
        now = time.monotonic()
        wait = 1.0 if self.ready else 0.02
        for f in self.iopubs:
            if f.closed or not f.after:
                continue
            data = f.due(now)
            if data:
                self.splice.push(f.client, data)
            deadline = f.next_deadline()
            if deadline is not None:
                wait = min(wait, max(deadline - now, 0.005))
        return wait

    def interrupt(self):
        import os
        import signal
        if self.profile.get("interrupt") == "signal":
            try:
                os.kill(self.child.pid, signal.SIGINT)
            except OSError:
                pass
            return
        try:
            s = self.connect(self.upstream["control"])
        except OSError:
            return
        box = []
        box.append(ZConn(self.splice, s, lambda frames: box[0].close()))
        box[0].send(self.message("interrupt_request", {}))

    def exit_like_child(self, status):
        import os
        import shutil
        import signal
        shutil.rmtree(self.private, ignore_errors=True)
        sys.stdout.flush()
        sys.stderr.flush()
        if status < 0:
            sig = -status
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
            os.kill(os.getpid(), sig)
            os._exit(128 + sig)
        os._exit(status)

    def run(self):
        import signal
        import socket

        start_egress()  # before the signal handlers: the forwarder keeps none
        rfd, wfd = socket.socketpair()
        rfd.setblocking(False)
        wfd.setblocking(False)
        signal.set_wakeup_fd(wfd.fileno())
        self.got = []

        def on_signal(signum, _):
            self.got.append(signum)

        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(s, on_signal)

        def drain(_):
            try:
                while rfd.recv(64):
                    pass
            except (BlockingIOError, InterruptedError):
                pass

        self.splice.watch(rfd, drain)
        try:
            self.serve()
        except BaseException:
            import shutil
            shutil.rmtree(self.private, ignore_errors=True)
            raise

    def serve(self):
        import os
        import signal
        self.spawn()
        wait = 0.02
        while True:
            self.splice.poll(wait)
            while self.got:
                s = self.got.pop(0)
                if s == signal.SIGINT:
                    self.interrupt()
                elif s in (signal.SIGTERM, signal.SIGHUP):
                    try:
                        os.kill(self.child.pid, s)
                    except OSError:
                        pass
            status = self.child.poll()
            if status is not None:
                self.exit_like_child(status)
            if not self.ready:
                self.ready = self.step()
            wait = self.tick()


# The variables that name where a kernel keeps its state and reads its
# start-up files (IPython's profile and startup scripts, matplotlib's
# config, the caches): each start gets them in a fresh private directory.
PRIVATE_DIRS = {
    "IPYTHONDIR": "ipython", "MPLCONFIGDIR": "matplotlib", "XDG_CACHE_HOME": "cache",
    "XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data", "JUPYTER_DATA_DIR": "jupyter",
    "JUPYTER_RUNTIME_DIR": "jupyter/runtime",
}


def private_state():
    # A sandbox's kernels share its /tmp (the contexts of a container do),
    # so what one kernel's code left under /tmp/ipython (a startup script)
    # would run in the next kernel that reads it. Each kernel start gets a
    # directory of its own, made with an unpredictable name, mode 0700.
    import os
    import tempfile
    where = os.path.dirname(os.environ.get("IPYTHONDIR", "/tmp/ipython"))  # the sandbox's /tmp
    base = tempfile.mkdtemp(prefix="glassroom-state-", dir=where)
    for name, sub in PRIVATE_DIRS.items():
        if name in os.environ:
            os.environ[name] = os.path.join(base, sub)
    seed_font_cache(os.environ.get("MPLCONFIGDIR"))


# FONT_CACHE (sandbox.FontCacheDir) may hold matplotlib's font lists, built
# outside the sandbox (the local runtime binds it read-only): a kernel's
# fresh matplotlib directory starts with them, so its first plot does not
# scan every font of the machine again. Bounded; anything odd is skipped.
FONT_CACHE = "/run/glassroom/mpl"


def seed_font_cache(mpldir):
    import os
    import shutil
    if not mpldir:
        return
    try:
        names = [n for n in os.listdir(FONT_CACHE) if n.startswith("fontlist-v") and n.endswith(".json")]
    except OSError:
        return
    for n in names[:8]:
        src = os.path.join(FONT_CACHE, n)
        try:
            if os.path.isfile(src) and os.path.getsize(src) < (8 << 20):
                os.makedirs(mpldir, mode=0o700, exist_ok=True)
                shutil.copyfile(src, os.path.join(mpldir, n))
        except OSError:
            pass


# The frames of a command's (and a relay's) stdio: one type byte, a 4-byte
# big-endian length, the payload.
def frame_writer(out):
    # Writes one frame (kind, 4-byte big-endian length, payload) to out.
    def frame(kind, data):
        out.write(kind + len(data).to_bytes(4, "big") + data)
        out.flush()
    return frame


def whole_frames(buf):
    # Splits buf into its whole frames [(kind, body)] and the rest.
    frames = []
    while len(buf) >= 5:
        n = int.from_bytes(buf[1:5], "big")
        if len(buf) < 5 + n:
            break
        frames.append((buf[:1], buf[5:5 + n]))
        buf = buf[5 + n:]
    return frames, buf


# A command (`--command [--login] pipe CMD` or `--command [--login] tty
# COLS ROWS [CMD]`): the launcher starts the egress forwarder as for a
# kernel, then runs `bash -c CMD` (or, on a pseudo-terminal it makes, an
# interactive `bash`, or `bash -c CMD`) without start-up files (the
# workspace's, which code in the sandbox may have written, would see the
# command's own environment); with --login, a login shell (`bash -lc CMD`,
# `bash -l`) that reads them. It runs in a session and process group of
# its own, with
# oom_score_adj 1000 (above the kernels' 500: the OOM killer takes a
# command first), and supervises it. It speaks frames on its stdio,
# which work alike over bwrap's pipes and a docker exec's stream: one type
# byte, a 4-byte big-endian length, the payload.
#  - in (stdin): "i" bytes for the command's stdin (the terminal's input),
#    "e" the end of its stdin, "r" a resize (cols and rows, 2 bytes each),
#    "k" kill. The end of the launcher's own stdin kills too: a gateway that
#    goes away leaves nothing running.
#  - out (stdout): "p" the process group's id (decimal, inside the
#    sandbox) at once, "o" and "e" the command's stdout and stderr (a
#    terminal's output is "o"), "x" its exit status (decimal; 128+n for a
#    signal n) once its output has been read.
# When bash exits (or is killed), what remains of its process group is
# killed, then the rest of its output read (for at most CMD_DRAIN seconds
# once nothing more comes). The launcher buffers at most CMD_STDIN bytes of
# input the command has not read: beyond that it stops reading its own
# stdin until the command reads.
# With --memory-guard (before --login; for sandboxes whose /proc/meminfo
# is the sandbox's own, as gVisor's: MemTotal its memory limit,
# MemAvailable what is left of it), the launcher also watches the
# sandbox's memory while the command runs, and kills the command (its
# group, as "k" does) once less than guard_floor(MemTotal) is left, with a line
# on its stderr saying so: the host's OOM killer sees a gVisor sandbox as
# one process and would end every kernel with it. It looks again after
# the time the code needs to allocate what is left above the floor at
# CMD_GUARD_RATE, within CMD_GUARD_POLL.
CMD_STDIN = 1 << 20
CMD_DRAIN = 2.0
CMD_GUARD_RATE = 2 << 30  # bytes a second; gVisor (ptrace) allocates about 1 GiB/s
CMD_GUARD_POLL = (0.01, 0.5)


def guard_floor(total):
    return max(64 << 20, total // 32)


def sandbox_memory():
    # (MemTotal, MemAvailable) in bytes, or None where unreadable.
    total = avail = None
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemTotal:"):
                    total = int(line.split()[1]) * 1024
                elif line.startswith(b"MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    if total is None or avail is None:
        return None
    return total, avail


def run_command(args):
    import errno
    import fcntl
    import os
    import select
    import signal
    import struct
    import termios
    import time

    guard = bool(args) and args[0] == "--memory-guard"
    if guard:
        args = args[1:]
    login = bool(args) and args[0] == "--login"
    if login:
        args = args[1:]
    cwd = None  # a directory outside the workspace, where the runtime did not start us
    if len(args) > 1 and args[0] == "--cwd":
        cwd, args = args[1], args[2:]
    bash = ["/bin/bash", "-l"] if login else ["/bin/bash", "--noprofile", "--norc"]
    mode = args[0] if args else ""
    if mode == "pipe" and len(args) == 2:
        tty, argv = False, bash + ["-c", args[1]]
    elif mode == "tty" and len(args) in (3, 4):
        tty = True
        cols, rows = int(args[1]), int(args[2])
        argv = bash if len(args) == 3 or args[3] == "" else bash + ["-c", args[3]]
    else:
        sys.exit("glassroom launcher: bad --command arguments")
    start_egress()
    frame = frame_writer(sys.stdout.buffer)
    if cwd is not None:
        try:
            os.chdir(cwd)
        except OSError as e:
            frame(b"e", ("glassroom: cwd %s: %s\n" % (cwd, e.strerror)).encode())
            frame(b"x", b"1")
            return

    if tty:
        master, slave = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.environ["TERM"] = "xterm-256color"
        child_fds = (slave, slave, slave)
        reads = {master: b"o"}
        stdin_w = master
    else:
        in_r, stdin_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        child_fds = (in_r, out_w, err_w)
        reads = {out_r: b"o", err_r: b"e"}
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            for i, fd in enumerate(child_fds):
                os.dup2(fd, i)
            if tty:
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            os.closerange(3, 65536)
            for s in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
                signal.signal(s, signal.SIG_DFL)
            try:
                with open("/proc/self/oom_score_adj", "w") as f:
                    f.write("1000")
            except OSError:
                pass
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    for fd in set(child_fds):
        os.close(fd)
    frame(b"p", str(pid).encode())
    for fd in reads:
        os.set_blocking(fd, False)
    os.set_blocking(stdin_w, False)
    inbuf = b""  # frames read from our stdin, not yet whole
    pending = b""  # input the command has not read yet
    stdin_open = True  # our stdin
    close_input = False  # "e" came: close the command's stdin once pending is written
    status = None
    drain_until = None
    guard_at = time.monotonic()  # when to look at the sandbox's memory next

    def guard_memory():
        # Kills the command when the sandbox's memory is nearly spent;
        # returns when to look again.
        mem = sandbox_memory()
        if mem is None:
            return None
        total, avail = mem
        floor = guard_floor(total)
        if avail < floor:
            frame(b"e", (
                "\nglassroom: the command was killed: the sandbox's memory is nearly spent "
                "(%d MiB of %d MiB left); the kernels keep their state\n" % (avail >> 20, total >> 20)).encode())
            kill()
            return None
        lo, hi = CMD_GUARD_POLL
        return time.monotonic() + min(hi, max(lo, (avail - floor) / CMD_GUARD_RATE))

    def processes():
        # (pid, parent pid, session id) of every process the sandbox shows.
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % name, "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                yield int(name), int(fields[1]), int(fields[3])
            except (OSError, ValueError, IndexError):
                pass

    def kill():
        # The process group, and on a terminal every group of the session
        # (an interactive bash puts each job in a group of its own).
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        if not tty:
            return
        for p, _, sid in processes():
            if sid == pid:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass

    def interrupt_without_job_control():
        # Ctrl-C on a terminal: the kernel's line discipline sends SIGINT
        # to the terminal's foreground process group. Where the kernel
        # keeps no foreground group for the terminal (gVisor: the master
        # answers no TIOCGPGRP), nothing would; then every process the
        # shell started (its descendants, not the shell) gets SIGINT here,
        # as the foreground job would.
        try:
            if termios.tcgetattr(master)[3] & termios.ISIG == 0:
                return
            os.tcgetpgrp(master)
            return
        except OSError:
            pass
        children = {}
        for p, ppid, _ in processes():
            children.setdefault(ppid, []).append(p)
        todo = list(children.get(pid, ()))
        while todo:
            p = todo.pop()
            todo.extend(children.get(p, ()))
            try:
                os.kill(p, signal.SIGINT)
            except OSError:
                pass

    while True:
        if status is None:
            try:
                got, st = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                got, st = pid, 0
            if got == pid:
                status = os.waitstatus_to_exitcode(st)
                kill()
                drain_until = time.monotonic() + CMD_DRAIN
        if status is not None and (not reads or time.monotonic() > drain_until):
            break
        rl = [wake_r] + list(reads)
        if stdin_open and len(pending) < CMD_STDIN:
            rl.append(0)
        wl = [stdin_w] if pending and stdin_w is not None and status is None else []
        timeout = 0.5 if status is not None else None
        if guard and status is None and guard_at is not None:
            timeout = max(0.0, guard_at - time.monotonic())
        try:
            r, w, _ = select.select(rl, wl, [], timeout)
        except InterruptedError:
            continue
        if guard and status is None and guard_at is not None and time.monotonic() >= guard_at:
            guard_at = guard_memory()
        if wake_r in r:
            try:
                while os.read(wake_r, 256):
                    pass
            except OSError:
                pass
        for fd in list(reads):
            if fd not in r:
                continue
            try:
                data = os.read(fd, READ)
            except BlockingIOError:
                continue
            except OSError as e:
                if e.errno != errno.EIO:  # EIO: a terminal with no process left on it
                    raise
                data = b""
            if data:
                frame(reads[fd], data)
                if drain_until is not None:
                    drain_until = time.monotonic() + CMD_DRAIN
            else:
                del reads[fd]
                if fd != stdin_w:
                    os.close(fd)
        if 0 in r:
            data = os.read(0, READ)
            if not data:
                stdin_open = False
                kill()
            frames, inbuf = whole_frames(inbuf + data)
            for kind, body in frames:
                if kind == b"i" and not close_input:
                    pending += body
                    if tty and b"\x03" in body:
                        interrupt_without_job_control()
                elif kind == b"e":
                    close_input = True
                elif kind == b"r" and tty and len(body) == 4:
                    c, rw = struct.unpack(">HH", body)
                    try:
                        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rw, c, 0, 0))
                    except OSError:
                        pass
                elif kind == b"k":
                    kill()
        if stdin_w is not None and stdin_w in w and pending:
            try:
                pending = pending[os.write(stdin_w, pending[:READ]):]
            except BlockingIOError:
                pass
            except OSError:
                pending = b""
        if close_input and not pending and stdin_w is not None:
            if tty:
                try:
                    os.write(master, b"\x04")  # ^D: end of input on a terminal
                except OSError:
                    pass
            else:
                os.close(stdin_w)
            stdin_w = None
            close_input = False
    if status < 0:
        status = 128 - status
    frame(b"x", str(status).encode())


# A relay (`--relay PORT`) carries one connection of a preview: the
# launcher connects to PORT on the sandbox's own loopback (127.0.0.1, then
# ::1), in a session of its own, and relays bytes between that connection
# and its stdio, in the frames of a command:
#  - out: "p" its process group, then "e" "connected" once connected (or
#    "e" "refused: why" and "x" 1 when nothing listens), "o" what the
#    server sends, and "x" 0 once the server has ended its side.
#  - in: "i" bytes for the server, "e" the end of what the client sends (a
#    half-close; stdin is still read, for "k"), "k" or the end of stdin:
#    the connection is closed.
# It holds at most RELAY_HOLD bytes the server has not read: beyond that
# it stops reading its stdin until the server reads.
RELAY_HOLD = 1 << 20
RELAY_CONNECT = 5.0


def run_relay(args):
    import os
    import select
    import socket

    try:
        port = int(args[0]) if len(args) == 1 else 0
    except ValueError:
        port = 0
    if not 0 < port < 65536:
        sys.exit("glassroom launcher: bad --relay arguments")
    try:
        os.setsid()
    except OSError:
        pass  # a group leader already
    frame = frame_writer(sys.stdout.buffer)
    frame(b"p", str(os.getpgrp()).encode())
    sock, why = None, "nothing listens"
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(RELAY_CONNECT)
        try:
            s.connect((host, port))
            sock = s
            break
        except OSError as e:
            s.close()
            if not isinstance(e, ConnectionRefusedError):
                why = e.strerror or str(e)
    if sock is None:
        frame(b"e", ("refused: %s on port %d of the sandbox" % (why, port)).encode())
        frame(b"x", b"1")
        return
    frame(b"e", b"connected")
    sock.setblocking(False)
    # Acknowledge at once: a server that writes its headers and its body
    # apart (Nagle's algorithm) would otherwise wait 40 ms on the relay's
    # delayed ACK for every answer.
    quickack = getattr(socket, "TCP_QUICKACK", None)

    def ack_now():
        if quickack is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
            except OSError:
                pass

    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
    ack_now()
    inbuf = b""  # frames read from stdin, not yet whole
    pending = b""  # bytes for the server it has not read
    # accepting: "i" is still taken (until "e"); stdin is read to the end
    # whatever, so that "k" or the gateway's going ends the relay.
    accepting, half_close = True, False
    while True:
        if half_close and not pending:
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            half_close = False
        rs = [sock]
        if len(pending) < RELAY_HOLD:
            rs.append(0)
        ws = [sock] if pending else []
        r, w, _ = select.select(rs, ws, [])
        if sock in w:
            try:
                n = sock.send(pending[:READ])
                pending = pending[n:]
            except BlockingIOError:
                pass
            except OSError:
                break
        if sock in r:
            try:
                data = sock.recv(READ)
            except BlockingIOError:
                data = None
            except OSError:
                data = b""
            if data == b"":
                break
            if data:
                ack_now()  # the kernel leaves quick-ack mode by itself
                frame(b"o", data)
        if 0 in r:
            data = os.read(0, READ)
            if not data:
                return  # the gateway is gone
            frames, inbuf = whole_frames(inbuf + data)
            for kind, body in frames:
                if kind == b"i" and accepting:
                    pending += body
                elif kind == b"e" and accepting:
                    half_close, accepting = True, False
                elif kind == b"k":
                    return
    frame(b"x", b"0")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--command"]:
        run_command(args[1:])
        return
    if args[:1] == ["--relay"]:
        run_relay(args[1:])
        return
    private_state()
    kernel = "?"
    if args[:1] == ["--kernel"]:
        kernel, args = args[1], args[2:]
    if args[:1] == ["--ipykernel"]:
        # ipykernel in this interpreter; --rich CODE: the structured rich
        # output (richoutput.py).
        args = args[1:]
        rich = None
        if args[:1] == ["--rich"] and len(args) >= 2:
            rich, args = args[1], args[2:]
        run_ipykernel(args, rich)
        return
    if args[:1] == ["--bridge"] and args[2:3] == ["-f"] and len(args) == 4:
        # A kernel of its own behind the bridge, with its profile
        # (kernels.BridgeProfile as JSON).
        import json
        try:
            profile = json.loads(args[1])
        except ValueError:
            sys.exit("glassroom launcher: kernel %r has a bridge profile that is not JSON" % kernel)
        Bridge(kernel, profile if isinstance(profile, dict) else {}, args[3]).run()
        return
    if args[:1] == ["--code"] and args[2:3] == ["-f"] and len(args) == 4:
        # A program of ours (bashkernel.py, javakernel.py, given whole by
        # the gateway) runs in this interpreter once the egress forwarder
        # is up, as if it had been started with -c.
        start_egress()
        code = args[1]
        sys.argv = ["-c"] + args[2:]
        exec(compile(code, "<glassroom %s kernel>" % kernel, "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        return
    sys.exit("glassroom launcher: kernel %r is not installed" % kernel)


if __name__ == "__main__":
    main()
