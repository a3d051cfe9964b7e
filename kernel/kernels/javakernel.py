# glassroom's Java kernel, run as `python3 -I -B -c <this file> -f <connection file>`
# with one line put before it: JSHELL_SOURCE = "<JShellKernel.java as a JSON string>".
#
# A Jupyter kernel on ipykernel's Kernel base that drives one JVM running
# JShellKernel.java, a JShell with the local execution engine: cells run
# inside that JVM, and imports, variables, methods and classes carry over
# from cell to cell. The source is written to a fresh private directory
# and run with Java's source-file mode (compiled in memory at each start):
# no build step, and nothing outside the gateway can change it.
#
# Start: the JVM is started before ipykernel is imported (both take about
# as long), and the kernel waits for its hello. Nothing planted in the
# working directory or HOME steers it: the variables the JVM reads at
# start (JAVA_TOOL_OPTIONS, _JAVA_OPTIONS, JDK_JAVA_OPTIONS, CLASSPATH,
# JAVA_HOME, any JAVA_* and JDK_*) are not passed to it; -XX:Flags=/dev/null
# keeps a .hotspotrc out; the class path is an empty private directory (an
# empty -cp would be the working directory, whose classes would shadow the
# kernel's own when the source is compiled); the preferences (where jshell
# keeps start-up scripts) are private directories; no /tmp/hsperfdata, no
# attach. The JVM runs C1 only, with the serial collector, and dies with
# this process (PR_SET_PDEATHSIG); it has a process group of its own and
# ignores SIGINT.
#
# Memory: the heap is half of GLASSROOM_MEMORY_MB, less where the JVM's
# own reservations would not leave that much under an RLIMIT_AS of that
# size (the sandbox's limit when no cgroup bounds it; a soft limit under a
# higher hard one is lifted, as the launcher does for Deno); metaspace,
# class space and code cache are bounded, glibc's malloc arenas capped
# (MALLOC_ARENA_MAX=2), and the processor count is GLASSROOM_CPUS rounded
# up. Java ignores HTTP_PROXY and friends: the egress proxy they name
# becomes the JVM's proxy properties.
#
# Protocol: the JVM's standard input is /dev/null; its stdout and stderr
# are plain pipes a reader thread drains all the time and sends as stream
# messages (System.out, native writes, child processes). Requests and
# replies travel on two more pipes as frames: a 4-byte big-endian length,
# then UTF-8 JSON. The cell's code runs in the JVM and can write anything
# to any descriptor, so every frame is bounded (FRAME_MAX) and checked: a
# frame that is not JSON is dropped; a length over the bound ends the
# protocol, and the JVM is replaced. The reader drains stdout and stderr
# before it takes a reply, and the JVM flushes them before it replies, so
# a cell's output comes before its result, in order.
#
# Output: joined for a moment and sent in messages of at most CHUNK bytes,
# each handed to the I/O thread before the next is read, so a flood cannot
# pile up messages in the kernel.
#
# Results and errors: the value of the cell's last snippet, when it is an
# expression, is its execute_result (text/plain, as JShell shows values).
# An exception is an error whose ename is its class's name, evalue its
# message and traceback its stack trace; a compile error is an error
# CompilationError with javac's messages and their lines; a reference that
# does not resolve is an error (UnresolvedReferenceException) when it keeps
# a variable or a statement from running, and a warning on stderr when a
# method or class can wait for it. The cell stops at its first error.
#
# Interrupt: a SIGINT to the kernel (interrupt_request) asks the JVM to stop
# the cell (jshell.stop: ThreadDeath in the cell's threads, asked again by
# the JVM for a moment); the reply is a KeyboardInterrupt error, and
# everything defined before the interrupted snippet lives on. If the
# cell is still running INTERRUPT_GRACE seconds later, it is asked again
# while it makes progress (the JVM used CPU time over the grace: the first
# ask may have come while the cell was compiled, or the code caught it),
# up to INTERRUPT_MAX_WAIT after the first; a cell that made none (it waits
# in native code), or still runs at the cap, has its JVM killed, and a
# fresh one starts (a note on stderr says so). When the JVM ends in a cell
# (System.exit, killed), the next cell runs in a fresh one too.
#
# Rich output: cells call display(mime, String), display(mime, byte[]),
# html(String), markdown(String) (see JShellKernel.java); the JVM flushes
# its output, sends the data and waits for the kernel's answer, so the
# display lands between the output before and after it.
import base64
import binascii
import codecs
import ctypes
import glob
import json
import math
import os
import queue
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse

JAVA_GLOB = "/usr/lib/jvm/java-17-openjdk-*/bin/java"
CHUNK = 64 * 1024
# How long output may wait to be joined with more before it is sent.
JOIN = 0.05
# The largest frame taken from the JVM: a display's data in base64 and
# the JSON around it.
FRAME_MAX = 16 * 1024 * 1024
# The longest cell handed to the JVM, in characters.
CODE_MAX = 16 * 1024 * 1024
INTERRUPT_GRACE = 2.0
INTERRUPT_MAX_WAIT = 10.0
# CPU time the JVM must use over a grace to count as working.
PROGRESS_CPU = 0.02
# How often a running cell's wait looks at the clock, the JVM and a
# pending interrupt.
POLL = 0.1
START_TIMEOUT = 60.0
COMPLETE_TIMEOUT = 5.0
# How long a request may wait for room in the JVM's request pipe.
SEND_TIMEOUT = 10.0
# Replies kept for the main thread; a flood of fake ones is dropped.
REPLIES_MAX = 16
# Output kept while the JVM starts, to say why it did not.
BOOT_OUT_MAX = 4096

# Variables of the kernel's environment the JVM does not get: the java
# launcher and the JVM read them at start.
DROP_ENV = frozenset(["CLASSPATH", "JAVA_HOME", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"])
DROP_PREFIXES = ("JAVA_", "JDK_", "_JAVA_")

# Memory the JVM takes besides its heap: metaspace (JShell and javac need
# about 12 MB besides the CDS archive), class space inside it, and C1's
# code cache (6 MB at start).
METASPACE_MAX_MB = 192
CLASS_SPACE_MB = 32
CODE_CACHE_MB = 24
HEAP_MIN_MB = 64
# Address space the JVM reserves besides its heap, which an RLIMIT_AS
# counts: the jimage it maps whole (123 MB), libjvm and the CDS archive,
# metaspace and class space, the code cache, one malloc arena
# (MALLOC_ARENA_MAX; each reserves 64 MB), about 370 MB in all after the
# first cell, and room for some 60 more threads (1 MB of stack each).
JVM_OVERHEAD_MB = 448
# Heap with no GLASSROOM_MEMORY_MB: this share of the memory the JVM sees.
HEAP_PERCENT = 50

DISPLAY_TYPES = frozenset([
    "text/plain", "text/html", "text/markdown", "text/latex", "image/svg+xml", "application/json",
    "image/png", "image/jpeg", "image/gif",
])

IDLE, RUNNING = 0, 1
# Put in the reply queue by the reader when the JVM's reply pipe ends.
EOF = object()


def find_java():
    found = sorted(p for p in glob.glob(JAVA_GLOB) if os.access(p, os.X_OK))
    if not found:
        raise JVMError("the JVM did not start: java is not installed (no %s: install openjdk-17-jdk-headless)" % JAVA_GLOB)
    return found[-1]


def java_env():
    env = {}
    for k, v in os.environ.items():
        if k not in DROP_ENV and not k.startswith(DROP_PREFIXES):
            env[k] = v
    if not any(k in env for k in ("LC_ALL", "LC_CTYPE", "LANG")):
        # Without a UTF-8 locale Java takes file names as ASCII.
        env["LANG"] = "C.UTF-8"
    # glibc gives each thread that contends an arena of its own, 64 MB of
    # address space each (eleven of them after the first cell): under an
    # RLIMIT_AS that is more than the heap.
    env.setdefault("MALLOC_ARENA_MAX", "2")
    return env


def env_number(name, kind):
    try:
        v = kind(os.environ.get(name, ""))
    except ValueError:
        return None
    return v if v > 0 and math.isfinite(v) else None


def proxy_options():
    # Java ignores HTTP_PROXY and friends: the egress proxy the launcher
    # sets them to becomes the JVM's proxy properties.
    opts = []
    for scheme in ("http", "https"):
        url = os.environ.get(scheme.upper() + "_PROXY") or os.environ.get(scheme + "_proxy")
        if not url:
            continue
        try:
            u = urllib.parse.urlsplit(url)
            host, port = u.hostname, u.port
        except ValueError:
            continue
        if u.scheme == "http" and host and port:
            opts += ["-D%s.proxyHost=%s" % (scheme, host), "-D%s.proxyPort=%d" % (scheme, port)]
    skip = os.environ.get("NO_PROXY") or os.environ.get("no_proxy")
    if opts and skip:
        hosts = [h.strip() for h in skip.split(",") if h.strip() and "|" not in h]
        hosts = ["*" + h if h.startswith(".") else h for h in hosts]
        if hosts:
            opts.append("-Dhttp.nonProxyHosts=" + "|".join(hosts))
    return opts


def jvm_argv(java, d, req_fd, rep_fd):
    argv = [
        java,
        # No .hotspotrc (and no notice about one) from the working directory.
        "-XX:Flags=/dev/null",
        "-XX:-UsePerfData",
        "-XX:+DisableAttachMechanism",
        "-Xshare:auto",
        "-XX:+UseSerialGC",
        # C1 only: the JVM starts faster and its compiler takes less memory.
        "-XX:TieredStopAtLevel=1",
        "-XX:CICompilerCount=1",
        "-Xss1m",
        # A small first heap: start-up's garbage is collected rather than
        # kept in a large young generation (146 MB resident at start
        # without it, 86 MB with it).
        "-Xms16m",
        "-XX:MaxMetaspaceSize=%dm" % METASPACE_MAX_MB,
        "-XX:CompressedClassSpaceSize=%dm" % CLASS_SPACE_MB,
        "-XX:ReservedCodeCacheSize=%dm" % CODE_CACHE_MB,
        # A crash report goes to the private directory, not the workspace.
        "-XX:ErrorFile=" + os.path.join(d, "hs_err.log"),
        "-Dfile.encoding=UTF-8",
        "-Dsun.stdout.encoding=UTF-8",
        "-Dsun.stderr.encoding=UTF-8",
        "-Djava.util.prefs.userRoot=" + os.path.join(d, "prefs"),
        "-Djava.util.prefs.systemRoot=" + os.path.join(d, "sysprefs"),
    ]
    memory = env_number("GLASSROOM_MEMORY_MB", int)
    if memory:
        # Half the memory; below about 900 MB less, so that the JVM's own
        # reservations fit beside the heap under an RLIMIT_AS of the memory.
        argv.append("-Xmx%dm" % max(HEAP_MIN_MB, min(memory // 2, memory - JVM_OVERHEAD_MB)))
    else:
        argv.append("-XX:MaxRAMPercentage=%d" % HEAP_PERCENT)
    cpus = env_number("GLASSROOM_CPUS", float)
    if cpus:
        argv.append("-XX:ActiveProcessorCount=%d" % max(1, math.ceil(cpus)))
    argv += proxy_options()
    argv += ["-cp", os.path.join(d, "cp"), os.path.join(d, "JShellKernel.java"), str(req_fd), str(rep_fd)]
    return argv


def utf16_len(text):
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def from_utf16(text, n):
    # The index in text of its n-th UTF-16 code unit.
    units = 0
    for i, ch in enumerate(text):
        if units >= n:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


def text_of(value, limit):
    if not isinstance(value, str):
        return ""
    return value if len(value) <= limit else value[:limit] + "..."


class JVMError(Exception):
    # The JVM could not start, or broke off.
    pass


class Reader(threading.Thread):
    # Drains the JVM's stdout, stderr and reply pipe for as long as it
    # lives: publishes output, shows displays, and queues replies for the
    # main thread once the output before them is sent. The kernel asks it
    # to flush (send everything the JVM wrote so far) and to stop through a
    # wake-up pipe.

    def __init__(self, kernel, jvm):
        super().__init__(name="java-output", daemon=True)
        self.kernel = kernel
        self.jvm = jvm
        self.flushed = threading.Event()
        self.names = {jvm.out_r: "stdout", jvm.err_r: "stderr"}
        self.decoders = {n: codecs.getincrementaldecoder("utf-8")("replace") for n in ("stdout", "stderr")}
        self.pending_name = None
        self.pending = bytearray()
        self.since = 0.0
        self.frames = bytearray()
        self.boot_out = bytearray()

    def run(self):
        try:
            self.loop()
        except Exception:
            self.kernel.log.error("java output reader failed", exc_info=True)
        finally:
            self.flushed.set()
            self.jvm.replies.put(EOF)

    def loop(self):
        jvm = self.jvm
        streams = [jvm.out_r, jvm.err_r]
        # poll, not select: gVisor answers select(2) with EPERM.
        poller = select.poll()
        for fd in streams + [jvm.rep_r, jvm.wake_r]:
            poller.register(fd, select.POLLIN)
        replies_open = True
        while True:
            timeout = None
            if self.pending:
                timeout = max(0, int((self.since + JOIN - time.monotonic()) * 1000))
            ready = [fd for fd, _ in poller.poll(timeout)]
            if not ready:
                self.send_pending()
                continue
            for fd in streams[:]:
                if fd in ready and not self.read(fd):
                    streams.remove(fd)
            for fd in ready:
                if fd in self.names and fd not in streams:
                    poller.unregister(fd)
                    del self.names[fd]
            if replies_open and jvm.rep_r in ready and not self.read_frames(streams):
                replies_open = False
                poller.unregister(jvm.rep_r)
                self.drain(streams)
                self.send_pending()
                jvm.replies.put(EOF)
            if jvm.wake_r in ready:
                cmd = os.read(jvm.wake_r, 64)
                if b"f" in cmd or b"q" in cmd:
                    self.drain(streams)
                    self.send_pending()
                    self.flushed.set()
                if b"q" in cmd:
                    return
            if self.pending and time.monotonic() - self.since >= JOIN:
                self.send_pending()

    def read(self, fd):
        # Reads what one pipe has; False at its end.
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        self.add(fd, data)
        return True

    def add(self, fd, data):
        name = self.names[fd]
        if self.jvm.booting and len(self.boot_out) < BOOT_OUT_MAX:
            self.boot_out += data[:BOOT_OUT_MAX - len(self.boot_out)]
        if self.pending and name != self.pending_name:
            self.send_pending()
        if not self.pending:
            self.since = time.monotonic()
        self.pending_name = name
        self.pending += data
        while len(self.pending) >= CHUNK:
            self.send_pending()

    def drain(self, streams):
        # Everything the pipes hold now, bounded in case a background
        # thread or process keeps writing.
        for fd in streams[:]:
            for _ in range(64):
                try:
                    data = os.read(fd, CHUNK)
                except BlockingIOError:
                    break
                except OSError:
                    data = b""
                if not data:
                    streams.remove(fd)
                    break
                self.add(fd, data)

    def send_pending(self):
        if not self.pending:
            return
        data = bytes(self.pending[:CHUNK])
        del self.pending[:CHUNK]
        self.since = time.monotonic()
        name = self.pending_name
        text = self.decoders[name].decode(data)
        if text:
            self.kernel.publish("stream", {"name": name, "text": text})

    def read_frames(self, streams):
        # Reads the reply pipe and handles each whole frame; False at its
        # end. After a broken frame the rest is read and dropped.
        try:
            data = os.read(self.jvm.rep_r, 1 << 20)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        if self.jvm.broken:
            return True
        self.frames += data
        while len(self.frames) >= 4:
            n = int.from_bytes(self.frames[:4], "big")
            if n > FRAME_MAX:
                self.frames = bytearray()
                self.jvm.break_off("a reply frame of %d bytes" % n)
                return True
            if len(self.frames) < 4 + n:
                break
            payload = bytes(self.frames[4:4 + n])
            del self.frames[:4 + n]
            self.frame(payload, streams)
        return True

    def frame(self, payload, streams):
        try:
            msg = json.loads(payload.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            return
        if not isinstance(msg, dict):
            return
        kind = msg.get("type")
        if kind not in ("display", "reply", "hello"):
            return
        # What was written before the frame is shown before it.
        self.drain(streams)
        self.send_pending()
        if kind == "display":
            self.jvm.display(msg)
        elif kind == "hello" or self.jvm.replies.qsize() < REPLIES_MAX:
            self.jvm.replies.put(msg)


class JVM:
    # One JVM, its pipes and its output reader. spawn() starts it (before
    # the kernel exists), attach() starts the reader and waits for the
    # JVM's hello. Used by the kernel's main thread; interrupt() is also
    # called from the SIGINT handler (the main thread too), and display()
    # by the reader.

    def __init__(self):
        self.kernel = None
        self.dir = None
        self.proc = None
        self.reader = None
        self.version = ""
        self.vm = ""
        self.replies = queue.Queue()
        self.send_lock = threading.Lock()
        self.broken = None
        self.booting = True
        self.eof = False
        self.state = IDLE
        self.want_interrupt = False
        self.interrupted_at = None
        self.ids = 0
        self.fds = []
        self.started_at = time.monotonic()

    def spawn(self):
        java = find_java()
        self.dir = tempfile.mkdtemp(prefix="glassroom-java-")
        src = os.path.join(self.dir, "JShellKernel.java")
        fd = os.open(src, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(JSHELL_SOURCE)
        for sub in ("cp", "prefs", "sysprefs"):
            os.mkdir(os.path.join(self.dir, sub), 0o700)
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.wake_r, self.wake_w = os.pipe()
        self.fds = [self.req_w, self.rep_r, self.out_r, self.err_r, self.wake_r, self.wake_w]
        for fd in (self.req_w, self.rep_r, self.out_r, self.err_r):
            os.set_blocking(fd, False)
        libc = ctypes.CDLL(None, use_errno=True)
        parent = os.getpid()

        def child_setup():
            # Its own process group (an interrupt for the kernel's group
            # does not reach it), dead with this process, SIGINT ignored
            # (a stray one would run the JVM's shutdown).
            os.setpgid(0, 0)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            if os.getppid() != parent:
                os._exit(1)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            # A soft address-space limit under a higher hard one (the
            # sandbox's cgroup bounds its memory) is lifted, as the
            # launcher does for Deno: the JVM reserves far more than it
            # uses.
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            if soft != hard:
                resource.setrlimit(resource.RLIMIT_AS, (hard, hard))

        try:
            self.proc = subprocess.Popen(
                jvm_argv(java, self.dir, req_r, rep_w), stdin=subprocess.DEVNULL, stdout=out_w, stderr=err_w,
                pass_fds=(req_r, rep_w), env=java_env(), preexec_fn=child_setup, close_fds=True)
        finally:
            for fd in (req_r, rep_w, out_w, err_w):
                os.close(fd)
        self.started_at = time.monotonic()

    def attach(self, kernel):
        self.kernel = kernel
        self.reader = Reader(kernel, self)
        self.reader.start()
        deadline = self.started_at + START_TIMEOUT
        while True:
            msg = self.get(max(0.0, min(POLL, deadline - time.monotonic())))
            if msg is EOF or self.broken or (msg is None and time.monotonic() > deadline):
                if msg is None:
                    why = "it did not answer within %d s" % START_TIMEOUT
                else:
                    try:
                        self.proc.wait(timeout=2.0)
                    except subprocess.TimeoutExpired:
                        pass
                    why = self.broken or self.describe_exit()
                self.flush()
                said = self.reader.boot_out.decode("utf-8", "replace").strip()
                raise JVMError("the JVM did not start: %s%s" % (why, (": " + said) if said else ""))
            if isinstance(msg, dict) and msg.get("type") == "hello":
                self.version = text_of(msg.get("version"), 100)
                self.vm = text_of(msg.get("vm"), 200)
                self.booting = False
                return

    def get(self, timeout):
        # The next frame the reader queued, EOF, or None after timeout.
        if self.eof:
            return EOF
        try:
            msg = self.replies.get(timeout=timeout)
        except queue.Empty:
            return None
        if msg is EOF:
            self.eof = True
        return msg

    def new_id(self):
        self.ids += 1
        return self.ids

    def send(self, msg, timeout=SEND_TIMEOUT):
        # Writes one request frame; OSError when the JVM does not take it
        # within timeout (then part of it may be written: the JVM must go).
        data = json.dumps(msg, ensure_ascii=False).encode("utf-8", "replace")
        view = memoryview(len(data).to_bytes(4, "big") + data)
        deadline = time.monotonic() + timeout
        poller = select.poll()
        poller.register(self.req_w, select.POLLOUT)
        with self.send_lock:
            while view:
                try:
                    view = view[os.write(self.req_w, view[:1 << 16]):]
                    continue
                except BlockingIOError:
                    pass
                wait = deadline - time.monotonic()
                if wait <= 0:
                    raise OSError("the JVM does not read its requests")
                poller.poll(int(min(wait, POLL) * 1000) + 1)

    def break_off(self, why):
        # Called by the reader: the JVM's frames cannot be trusted any more.
        if self.broken is None:
            self.broken = why
        self.replies.put(EOF)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None and not self.eof and self.broken is None

    def run(self, code, cell):
        # Runs one cell; returns (reply, ended): the JVM's reply, or None
        # when there is none, and ended None while the JVM lives on, else
        # a sentence on why it is gone.
        cid = self.new_id()
        self.want_interrupt = False
        self.interrupted_at = None
        self.state = RUNNING
        try:
            try:
                self.send({"type": "execute", "id": cid, "code": code, "cell": cell})
            except OSError as e:
                self.kill()
                return None, "the JVM did not take the cell (%s) and was killed" % e
            while True:
                why = self.stuck()
                if why:
                    self.kill()
                    return None, why
                if self.want_interrupt:
                    self.want_interrupt = False
                    try:
                        self.send({"type": "interrupt", "id": cid}, timeout=2.0)
                    except OSError as e:
                        self.kill()
                        return None, "the JVM did not take the interrupt (%s) and was killed" % e
                msg = self.get(POLL)
                if self.broken:
                    self.kill()
                    return None, "the JVM broke the kernel's protocol (%s) and was killed" % self.broken
                if msg is EOF or (msg is None and self.proc.poll() is not None):
                    return None, self.wait_exit()
                if isinstance(msg, dict) and msg.get("type") == "reply" and type(msg.get("id")) is int and msg["id"] == cid:
                    return msg, None
        finally:
            self.state = IDLE

    def wait_exit(self):
        # The JVM's reply pipe ended: it is exiting (System.exit, killed);
        # one that lives on without it is no use either.
        try:
            self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.kill()
            return "the JVM closed its reply pipe and was killed"
        self.kill()
        return self.describe_exit()

    def stuck(self):
        # After an interrupt, at the end of each grace: None while the
        # cell may still obey (the grace has not passed, or the JVM used
        # CPU time over it: interrupted again), else why it is killed.
        if self.interrupted_at is None:
            return None
        now = time.monotonic()
        if now - self.grace_from <= INTERRUPT_GRACE:
            return None
        cpu = group_cpu(self.proc.pid)
        used, self.grace_cpu, self.grace_from = cpu - self.grace_cpu, cpu, now
        waited = now - self.interrupted_at
        if used < PROGRESS_CPU:
            return "the cell made no progress within %g s of the interrupt: its JVM was killed" % INTERRUPT_GRACE
        if waited > INTERRUPT_MAX_WAIT:
            return "the cell was still running %d s after the first interrupt: its JVM was killed" % waited
        self.want_interrupt = True
        return None

    def interrupt(self):
        # Called by the SIGINT handler: the interrupt is sent by the cell's
        # wait (a handler must not write to the pipe another frame may be
        # half-way through).
        if self.state != RUNNING:
            return
        if self.interrupted_at is None:
            self.interrupted_at = self.grace_from = time.monotonic()
            self.grace_cpu = group_cpu(self.proc.pid)
        self.want_interrupt = True

    def was_interrupted(self):
        return self.interrupted_at is not None

    def describe_exit(self):
        if self.proc is None:
            return "the JVM was not started"
        rc = self.proc.poll()
        if rc is None:
            return "the JVM is still running"
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = str(-rc)
            return "the JVM was killed by %s" % name
        if rc in (70, 71, 72):
            # JShellKernel.java's own threads failed (out of memory, or
            # stopped by a cell).
            return "the JVM exited with status %d: the kernel's threads in it failed (a full heap is the usual cause)" % rc
        return "the JVM exited with status %d" % rc

    def kill(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()

    def request(self, msg, timeout):
        # One request of an idle JVM (completion, is_complete): its reply,
        # or None.
        cid = self.new_id()
        msg["id"] = cid
        try:
            self.send(msg, timeout=timeout)
        except OSError:
            # Part of the frame may be in the pipe: the next cell gets a
            # new JVM.
            self.break_off("it does not read its requests")
            return None
        deadline = time.monotonic() + timeout
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0:
                return None
            got = self.get(min(wait, POLL))
            if got is EOF:
                return None
            if isinstance(got, dict) and got.get("type") == "reply" and type(got.get("id")) is int and got["id"] == cid:
                return got

    def display(self, msg):
        # One display frame (from the reader): shows it and answers, so the
        # cell's display() returns or throws with the reason.
        did = msg.get("id")
        if type(did) is not int:
            return
        try:
            answer = self.kernel.display(msg.get("mime"), msg.get("data"), msg.get("text") is True)
        except ValueError as e:
            answer = "display: %s" % e
        try:
            self.send({"type": "ack", "id": did, "error": answer}, timeout=5.0)
        except OSError:
            self.break_off("it does not take the display's answer")

    def flush(self):
        # Publishes everything the JVM wrote so far.
        if self.reader is None or not self.reader.is_alive():
            return
        self.reader.flushed.clear()
        try:
            os.write(self.wake_w, b"f")
        except OSError:
            return
        self.reader.flushed.wait(30)

    def shutdown(self):
        # Asks the JVM to end, then ends it anyway.
        if self.proc is not None and self.proc.poll() is None and not self.broken:
            try:
                self.send({"type": "shutdown"}, timeout=1.0)
                self.proc.wait(timeout=2.0)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.close()

    def close(self):
        # Ends the JVM and whatever else runs in its process group, and the
        # reader (after it sent what the JVM wrote).
        self.kill()
        if self.reader is not None and self.reader.is_alive():
            try:
                os.write(self.wake_w, b"q")
            except OSError:
                pass
            self.reader.join(30)
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)


def early_jvm():
    # Started before ipykernel is imported; the kernel takes it over.
    jvm = JVM()
    try:
        jvm.spawn()
    except JVMError as e:
        jvm.close()
        return e
    except OSError as e:
        jvm.close()
        return JVMError("the JVM did not start: %s" % (e.strerror or e))
    return jvm


EARLY = early_jvm()

from ipykernel.kernelbase import Kernel


class JavaKernel(Publisher, Kernel):
    implementation = "glassroom-java"
    implementation_version = "1.0"
    language_info = {
        "name": "java",
        "mimetype": "text/x-java",
        "file_extension": ".java",
        "codemirror_mode": "text/x-java",
        "pygments_lexer": "java",
        "version": "",
    }
    banner = ""
    help_links = [
        {"text": "JShell user's guide", "url": "https://docs.oracle.com/en/java/javase/17/jshell/"},
        {"text": "Java SE 17 API", "url": "https://docs.oracle.com/en/java/javase/17/docs/api/"},
    ]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.out_parent = {}
        self.quiet = False
        self.jvm = None
        self.start_error = ""
        self.new_jvm(EARLY)
        version = self.jvm.version if self.jvm is not None else ""
        vm = self.jvm.vm if self.jvm is not None else ""
        self.language_info = dict(self.language_info, version=version)
        self.banner = " ".join([
            "glassroom Java kernel (JShell, %s)." % (vm or "Java 17"),
            "One JVM runs all cells: imports, variables, methods and classes carry over.",
            "The value of a cell's last expression is its result; stdout and stderr are streamed.",
            "No standard input: System.in reads /dev/null.",
            "Rich output: display(mime, String), display(mime, byte[]), html(String), markdown(String).",
            "The session's envs are also system properties (System.getProperty).",
        ])

    def new_jvm(self, early=None):
        if isinstance(early, Exception):
            self.start_error = str(early)
            self.jvm = None
            return False
        jvm = early if early is not None else JVM()
        try:
            if early is None:
                jvm.spawn()
            jvm.attach(self)
        except JVMError as e:
            self.start_error = str(e)
            jvm.close()
            self.jvm = None
            return False
        except OSError as e:
            self.start_error = "the JVM did not start: %s" % (e.strerror or e)
            jvm.close()
            self.jvm = None
            return False
        self.jvm = jvm
        return True

    def display(self, mime, data, text):
        # A display frame's content: data is base64; a binary type given as
        # text (a String) is base64 already.
        if mime not in DISPLAY_TYPES:
            raise ValueError("unsupported type %r (one of %s)" % (text_of(mime, 100), ", ".join(sorted(DISPLAY_TYPES))))
        if not isinstance(data, str) or len(data) > (DISPLAY_MAX // 3 + 1) * 4:
            raise ValueError("over the %d MiB limit" % (DISPLAY_MAX >> 20))
        try:
            raw = base64.b64decode(data, validate=True)
            if mime in BINARY_TYPES and text:
                raw = base64.b64decode(b"".join(raw.split()), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("%s given as a String must be base64 (or pass a byte[])" % mime if text else "bad data from the JVM")
        if len(raw) > DISPLAY_MAX:
            raise ValueError("over the %d MiB limit" % (DISPLAY_MAX >> 20))
        if not raw:
            raise ValueError("nothing to show (the data is empty)")
        self.publish("display_data", {"data": bundle(mime, raw), "metadata": {}, "transient": {}})
        return ""

    def on_sigint(self, signum, frame):
        if self.jvm is not None:
            self.jvm.interrupt()

    def do_execute(self, code, silent, store_history=True, user_expressions=None, allow_stdin=False, **kwargs):
        self.out_parent = self.get_parent("shell")
        self.quiet = silent
        try:
            return self.execute(code)
        except Exception as e:
            # ipykernel sends no reply for a request whose handler raised.
            self.log.error("java kernel: execute failed", exc_info=True)
            return self.error_reply("JavaKernelError", "the Java kernel failed: %s" % e, [])

    def replace_jvm(self):
        # Ends the current JVM and starts another; a phrase for the notes.
        if self.jvm is not None:
            self.jvm.close()
            self.jvm = None
        if self.new_jvm():
            return "the next cell runs in a new JVM (imports, variables, methods and classes were reset)"
        return "no new JVM could be started (%s)" % self.start_error

    def execute(self, code):
        if self.jvm is not None and not self.jvm.alive():
            why = self.jvm.broken or self.jvm.describe_exit()
            self.jvm.close()
            self.jvm = None
            self.note("the JVM ended since the last cell (%s): this cell runs in a new JVM (imports, variables, methods and classes were reset)" % why)
        if self.jvm is None and not self.new_jvm():
            return self.error_reply("JavaKernelError", self.start_error, [])
        if not code.strip():
            return self.ok_reply()
        if len(code) > CODE_MAX:
            return self.error_reply("JavaKernelError", "the cell is over %d MiB characters" % (CODE_MAX >> 20), [])
        jvm = self.jvm
        reply, ended = jvm.run(code, self.execution_count)
        interrupted = jvm.was_interrupted()
        jvm.flush()
        if ended is not None:
            status = jvm.proc.returncode
            self.note("%s; %s" % (ended, self.replace_jvm()))
            if interrupted:
                return self.error_reply("KeyboardInterrupt", "interrupted: " + ended, [])
            if status == 0:
                # System.exit(0): the cell ended as it meant to.
                return self.ok_reply()
            return self.error_reply("JavaKernelError", ended, [])
        if reply.get("status") == "ok":
            value = reply.get("value")
            if isinstance(value, str) and not self.quiet:
                self.publish("execute_result", {"execution_count": self.execution_count, "data": {"text/plain": value}, "metadata": {}})
            return self.ok_reply()
        ename = text_of(reply.get("ename"), 256) or "JavaError"
        evalue = text_of(reply.get("evalue"), 65536)
        tb = reply.get("traceback")
        tb = [text_of(x, 65536) for x in tb[:1000]] if isinstance(tb, list) else []
        return self.error_reply(ename, evalue, tb)

    def ok_reply(self):
        return {"status": "ok", "execution_count": self.execution_count, "payload": [], "user_expressions": {}}

    def error_reply(self, ename, evalue, tb):
        tb = tb or ["%s: %s" % (ename, evalue)]
        if not self.quiet:
            self.publish("error", {"ename": ename, "evalue": evalue, "traceback": tb})
        return {"status": "error", "execution_count": self.execution_count, "ename": ename, "evalue": evalue,
                "traceback": tb, "payload": [], "user_expressions": {}}

    def do_complete(self, code, cursor_pos):
        if cursor_pos is None:
            cursor_pos = len(code)
        empty = {"status": "ok", "matches": [], "cursor_start": cursor_pos, "cursor_end": cursor_pos, "metadata": {}}
        if self.jvm is None or not self.jvm.alive() or len(code) > CODE_MAX:
            return empty
        before = code[:cursor_pos]
        got = self.jvm.request({"type": "complete", "code": before}, COMPLETE_TIMEOUT)
        if got is None or not isinstance(got.get("matches"), list) or type(got.get("anchor")) is not int:
            return empty
        start = from_utf16(before, max(0, min(got["anchor"], utf16_len(before))))
        matches = [m for m in got["matches"][:1000] if isinstance(m, str) and len(m) < 4096]
        return {"status": "ok", "matches": matches, "cursor_start": start, "cursor_end": cursor_pos, "metadata": {}}

    def do_is_complete(self, code):
        if self.jvm is None or not self.jvm.alive() or len(code) > CODE_MAX:
            return {"status": "unknown"}
        got = self.jvm.request({"type": "is_complete", "code": code}, COMPLETE_TIMEOUT)
        status = got.get("status") if got is not None else None
        if status not in ("complete", "incomplete", "invalid"):
            return {"status": "unknown"}
        if status != "incomplete":
            return {"status": status}
        last = code.rstrip("\n").split("\n")[-1]
        indent = last[:len(last) - len(last.lstrip())]
        if last.rstrip().endswith(("{", "(")):
            indent += "    "
        return {"status": "incomplete", "indent": indent}

    def do_inspect(self, code, cursor_pos, detail_level=0, omit_sections=()):
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}

    def do_shutdown(self, restart):
        if self.jvm is not None:
            self.jvm.shutdown()
            self.jvm = None
        return {"status": "ok", "restart": restart}


run_kernel(JavaKernel)
