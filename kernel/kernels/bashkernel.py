# glassroom's bash kernel, run as `python3 -I -B -c <this file> -f <connection file>`.
#
# A Jupyter kernel on ipykernel's Kernel base that drives one persistent
# `bash --noprofile --norc -i` (no startup file is read; the variables
# that steer bash itself are not passed to it). `cd`, variables, functions
# and aliases carry over from cell to cell.
#
# How a cell runs. bash reads commands from a pipe only the kernel writes
# to: for each cell the kernel writes the code to a private file and sends
# one line that sources it, with standard input from /dev/null and the
# kernel's descriptors closed for the cell (so neither the cell nor any
# process it starts holds them; bash keeps close-on-exec copies it puts
# back after the cell). PROMPT_COMMAND, which bash runs before every
# prompt, reports `done TOKEN STATUS` on a status pipe; TOKEN is random
# per cell, so a stale report is never taken for the current cell, and
# nothing is parsed out of the cell's output (fake sentinels there are
# just text). While no cell runs bash ignores SIGINT.
#
# Output: stdout and stderr are pipes a reader thread drains all the
# time (background jobs too), joined for a moment and sent as stream
# messages of at most CHUNK bytes, each handed to the I/O thread before
# the next is read, so a flood cannot pile up messages in the kernel.
#
# Exit status: the reply carries `exit_code`; a non-zero status makes the
# reply an error (ename ExitStatus, evalue "exit status N") and publishes
# the same error on iopub, as E2B reports a failed command. When bash
# exits (`exit`, `exec` of a program that ends, killed) the cell's status
# is its exit status, a note on stderr says the shell was replaced, and
# the next cell runs in a fresh bash.
#
# Interrupt: a SIGINT to the kernel (interrupt_request) is passed to
# bash's process group once the cell has begun, so bash drops the running
# command and keeps its state; the reply is a KeyboardInterrupt error.
# If the cell is still running INTERRUPT_GRACE seconds later, it is asked
# again while it makes progress (bash's process group used CPU time over
# the grace: on a busy machine an interrupt takes longer to land), up to
# INTERRUPT_MAX_WAIT after the first; a cell that made none (it traps or
# ignores SIGINT, or waits on a process in another group), or still runs
# at the cap, has its bash killed, and a fresh one starts.
#
# Rich output: the shell function `display` (see DISPLAY_USAGE) hands a
# file or text to the kernel through a FIFO in the private directory and
# waits for its answer, so the display lands between the output before
# and after it.
import base64
import codecs
import json
import os
import re
import secrets
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time

from ipykernel.kernelbase import Kernel

BASH = "/bin/bash"
CHUNK = 64 * 1024
# How long output may wait to be joined with more before it is sent.
JOIN = 0.05
INTERRUPT_GRACE = 2.0
INTERRUPT_MAX_WAIT = 30.0
# CPU time a cell's processes must use over a grace to count as working.
PROGRESS_CPU = 0.02
# How often a running cell's wait looks at the clock and the process.
POLL = 0.25
START_TIMEOUT = 30.0
COMPLETE_TIMEOUT = 5.0

# Variables of the kernel's environment bash does not get: they steer
# bash itself (options, prompts, start-up files, timeouts, history).
# Names starting with BASH (BASH_ENV, BASH_FUNC_*, BASHOPTS, ...) are
# left out too.
SHELL_VARS = frozenset([
    "ENV", "SHELLOPTS", "POSIXLY_CORRECT", "PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS3", "PS4",
    "TMOUT", "IGNOREEOF", "HISTFILE", "HISTFILESIZE", "HISTSIZE", "HISTCONTROL", "HISTIGNORE",
    "HISTTIMEFORMAT", "HISTCMD", "INPUTRC", "FUNCNEST", "MAIL", "MAILPATH", "MAILCHECK", "SHLVL",
])
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

DISPLAY_TYPES = {
    "png": "image/png", "jpeg": "image/jpeg", "jpg": "image/jpeg", "gif": "image/gif",
    "svg": "image/svg+xml", "html": "text/html", "markdown": "text/markdown", "md": "text/markdown",
    "latex": "text/latex", "json": "application/json", "text": "text/plain",
}
PAYLOAD_NAME = re.compile(r"^d\.[A-Za-z0-9]{6,32}$")

DISPLAY_USAGE = [
    "usage: display FILE            show FILE, its type taken from its name",
    "                               (.png .jpg .jpeg .gif .svg .html .htm .md .json .tex .txt)",
    "       display --TYPE [FILE]   show FILE, or standard input without one (or with -), as TYPE:",
    "                               --png --jpeg --gif --svg --html --markdown --latex --json --text",
    "       display --TYPE TEXT     --svg --html --markdown --latex --json --text: show TEXT itself",
    "       display --TYPE -f FILE  show FILE as TYPE, whatever the type",
    "Files and texts of up to %d MiB." % (DISPLAY_MAX >> 20),
]

IDLE, SENT, RUNNING = 0, 1, 2


def bash_env():
    env = {}
    for k, v in os.environ.items():
        if ENV_NAME.match(k) and not k.startswith("BASH") and k not in SHELL_VARS:
            env[k] = v
    env.setdefault("TERM", "dumb")
    return env


def sq(s):
    return "'" + s.replace("'", "'\\''") + "'"


def init_script(out, err, st, d):
    # The shell's side: what the kernel's command lines call, the prompt
    # hook, and `display`. Defined before any cell, so no alias of the
    # cells' applies inside; the kernel's functions and PROMPT_COMMAND are
    # read-only.
    usage = " ".join(sq(line) for line in DISPLAY_USAGE)
    fifo = sq(d + "/display")
    lines = [
        "unset HISTFILE",
        "set +o history +H",
        "__glassroom_dir=%s" % sq(d),
        "__glassroom_st=0",
        "__glassroom_prompt() {",
        "  __glassroom_st=$?",
        "  builtin trap '' INT",
        "  { : >&%d && : >&%d && builtin printf 'done %%s %%s\\n' \"$__glassroom_tok\" \"$__glassroom_st\" >&%d; } 2>/dev/null || builtin kill -KILL $$" % (out, err, st),
        "}",
        "__glassroom_begin() {",
        "  builtin printf 'begin %%s\\n' \"$__glassroom_tok\" >&%d" % st,
        "  builtin return \"$__glassroom_st\"",
        "}",
        "__glassroom_complete() {",
        "  {",
        "    builtin printf '%s\\n' \"$PWD\"",
        "    case $1 in",
        "      cmd) builtin compgen -c -- \"$2\" ;;",
        "      var) builtin compgen -v -- \"$2\" ;;",
        "      *) builtin compgen -f -- \"$2\" ;;",
        "    esac",
        "    builtin printf '\\n'",
        "    builtin compgen -d -- \"$2\"",
        "  } > \"$3/completions\" 2>/dev/null",
        "  builtin return \"$__glassroom_st\"",
        "}",
        "display() {",
        "  local mime= src= arg= p= fd= reply=",
        "  while (( $# )); do",
        "    case $1 in",
    ]
    for flag, mime in sorted(DISPLAY_TYPES.items()):
        lines.append("      --%s) mime=%s ;;" % (flag, mime))
    lines += [
        "      -f|--file) [[ $# -ge 2 ]] || { builtin printf 'display: %s needs a file\\n' \"$1\" >&2; builtin return 2; }; src=file; arg=$2; shift ;;",
        "      -h|--help) builtin printf '%s\\n' " + usage + "; builtin return 0 ;;",
        "      --) shift; break ;;",
        "      -?*) builtin printf 'display: unknown option %s (display --help)\\n' \"$1\" >&2; builtin return 2 ;;",
        "      *) break ;;",
        "    esac",
        "    shift",
        "  done",
        "  if [[ -n $src ]]; then",
        "    (( $# == 0 )) || { builtin printf 'display: -f FILE and another argument\\n' >&2; builtin return 2; }",
        "  elif (( $# > 1 )); then",
        "    builtin printf 'display: one file or text at a time (display --help)\\n' >&2; builtin return 2",
        "  elif (( $# == 0 )) || [[ $1 == - ]]; then",
        "    [[ -n $mime ]] || { builtin printf 'display: name a file, or give its type to read standard input (display --help)\\n' >&2; builtin return 2; }",
        "    src=stdin",
        "  elif [[ -z $mime || $mime == image/png || $mime == image/jpeg || $mime == image/gif ]]; then",
        "    src=file; arg=$1",
        "  else",
        "    src=text; arg=$1",
        "  fi",
        "  if [[ -z $mime ]]; then",
        "    case ${arg,,} in",
        "      *.png) mime=image/png ;;",
        "      *.jpg|*.jpeg) mime=image/jpeg ;;",
        "      *.gif) mime=image/gif ;;",
        "      *.svg) mime=image/svg+xml ;;",
        "      *.html|*.htm) mime=text/html ;;",
        "      *.md|*.markdown) mime=text/markdown ;;",
        "      *.json) mime=application/json ;;",
        "      *.tex) mime=text/latex ;;",
        "      *.txt) mime=text/plain ;;",
        "      *) builtin printf 'display: cannot tell the type of %s from its name: add --png, --html, ... (display --help)\\n' \"$arg\" >&2; builtin return 2 ;;",
        "    esac",
        "  fi",
        "  if [[ $src == file && ! -f $arg ]]; then",
        "    builtin printf 'display: %s: no such file\\n' \"$arg\" >&2; builtin return 1",
        "  fi",
        "  [[ -p %s ]] || { builtin printf 'display: the kernel is not listening (its FIFO is gone)\\n' >&2; builtin return 1; }" % fifo,
        "  p=$(command mktemp \"$__glassroom_dir/d.XXXXXXXX\") || builtin return 1",
        "  case $src in",
        "    file) command head -c %d -- \"$arg\" > \"$p\" ;;" % (DISPLAY_MAX + 1),
        "    stdin) command head -c %d > \"$p\" ;;" % (DISPLAY_MAX + 1),
        "    text) builtin printf '%s' \"$arg\" > \"$p\" ;;",
        "  esac || { command rm -f -- \"$p\"; builtin return 1; }",
        "  command mkfifo -m 600 -- \"$p.ack\" || { command rm -f -- \"$p\"; builtin return 1; }",
        "  builtin exec {fd}<>\"$p.ack\"",
        "  builtin printf '%%s %%s\\n' \"$mime\" \"${p##*/}\" >> %s" % fifo,
        "  builtin read -r -u \"$fd\" reply",
        "  builtin exec {fd}<&-",
        "  command rm -f -- \"$p\" \"$p.ack\"",
        "  [[ $reply == ok ]] && builtin return 0",
        "  builtin printf '%s\\n' \"${reply:-display: no answer from the kernel}\" >&2",
        "  builtin return 1",
        "}",
        "builtin readonly -f __glassroom_prompt __glassroom_begin __glassroom_complete",
        "PROMPT_COMMAND=__glassroom_prompt",
        "builtin readonly PROMPT_COMMAND __glassroom_dir",
        "builtin printf 'version %%s\\n' \"$BASH_VERSION\" >&%d" % st,
    ]
    return "\n".join(lines) + "\n"


class Reader(threading.Thread):
    # Drains bash's stdout and stderr and the display FIFO for as long as
    # the shell lives, and publishes what it reads. The kernel asks it to
    # flush (send everything bash wrote so far) and to stop through a
    # wake-up pipe.

    def __init__(self, kernel, shell):
        super().__init__(name="bash-output", daemon=True)
        self.kernel = kernel
        self.bash = shell
        self.flushed = threading.Event()
        self.names = {shell.out_r: "stdout", shell.err_r: "stderr"}
        self.decoders = {n: codecs.getincrementaldecoder("utf-8")("replace") for n in ("stdout", "stderr")}
        self.pending_name = None
        self.pending = bytearray()
        self.since = 0.0
        self.requests = b""

    def run(self):
        try:
            self.loop()
        except Exception:
            self.kernel.log.error("bash output reader failed", exc_info=True)
        finally:
            self.flushed.set()

    def loop(self):
        sh = self.bash
        streams = [sh.out_r, sh.err_r]
        # poll, not select: gVisor answers select(2) with EPERM.
        poller = select.poll()
        for fd in streams + [sh.disp, sh.wake_r]:
            poller.register(fd, select.POLLIN)
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
            if sh.disp in ready:
                self.read_requests(streams)
            if sh.wake_r in ready:
                cmd = os.read(sh.wake_r, 64)
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
        name = self.names[fd]
        if self.pending and name != self.pending_name:
            self.send_pending()
        if not self.pending:
            self.since = time.monotonic()
        self.pending_name = name
        self.pending += data
        while len(self.pending) >= CHUNK:
            self.send_pending()
        return True

    def drain(self, streams):
        # Everything the pipes hold now, bounded in case a background job
        # keeps writing.
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
                name = self.names[fd]
                if self.pending and name != self.pending_name:
                    self.send_pending()
                self.pending_name = name
                self.pending += data
                while len(self.pending) >= CHUNK:
                    self.send_pending()

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

    def read_requests(self, streams):
        try:
            self.requests += os.read(self.bash.disp, 4096)
        except OSError:
            return
        while b"\n" in self.requests:
            line, self.requests = self.requests.split(b"\n", 1)
            # What was written before the request is shown before it.
            self.drain(streams)
            self.send_pending()
            self.bash.display(line.decode("utf-8", "replace"))
        if len(self.requests) > 4096:
            self.requests = b""


class CellError(Exception):
    # The cell could not be handed to bash (its private directory is
    # damaged); the shell is replaced.
    pass


class Shell:
    # One bash process, its pipes and its output reader. Used by the
    # kernel's main thread; interrupt() is also called from the SIGINT
    # handler (the main thread too).

    def __init__(self, kernel):
        self.kernel = kernel
        self.dir = tempfile.mkdtemp(prefix="glassroom-bash-")
        self.proc = None
        self.reader = None
        self.version = ""
        self.status = b""
        self.st_eof = False
        self.state = IDLE
        self.pending_interrupt = False
        self.interrupted_at = None
        self.fds = []

    def start(self):
        cmd_r, self.cmd_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.st_r, st_w = os.pipe()
        self.wake_r, self.wake_w = os.pipe()
        fifo = os.path.join(self.dir, "display")
        try:
            os.unlink(fifo)
        except FileNotFoundError:
            pass
        os.mkfifo(fifo, 0o600)
        self.disp = os.open(fifo, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self.fds = [self.cmd_w, self.out_r, self.err_r, self.st_r, self.wake_r, self.wake_w, self.disp]
        for fd in (self.out_r, self.err_r, self.st_r):
            os.set_blocking(fd, False)
        self.st_poll = select.poll()
        self.st_poll.register(self.st_r, select.POLLIN)
        self.out, self.err, self.st = out_w, err_w, st_w
        # bash must not inherit an ignored SIGINT (ipykernel ignores it
        # between requests): a signal ignored at its start stays ignored,
        # in bash and in every command it runs. A Python handler is reset
        # to the default by exec.
        saved = signal.signal(signal.SIGINT, self.kernel.on_sigint)
        try:
            self.proc = subprocess.Popen(
                [BASH, "--noprofile", "--norc", "--noediting", "+o", "history", "+H", "-i"],
                stdin=cmd_r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(out_w, err_w, st_w), env=bash_env(), process_group=0)
        finally:
            signal.signal(signal.SIGINT, saved)
            for fd in (cmd_r, out_w, err_w, st_w):
                os.close(fd)
        self.reader = Reader(self.kernel, self)
        self.reader.start()
        init = os.path.join(self.dir, "init.sh")
        with open(init, "w", encoding="utf-8") as f:
            f.write(init_script(self.out, self.err, self.st, self.dir))
        self.send("__glassroom_tok=init; \\builtin . %s" % sq(init))
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            line = self.next_status(deadline)
            if line is None:
                raise RuntimeError("bash did not start: " + self.describe_exit())
            if line.startswith("version "):
                self.version = line[len("version "):]
            if line == "done init 0":
                return

    def send(self, line):
        os.write(self.cmd_w, (line + "\n").encode("utf-8"))

    def next_status(self, deadline):
        # The next line of the status pipe; None at its end or at deadline.
        while b"\n" not in self.status:
            if self.st_eof:
                return None
            wait = deadline - time.monotonic()
            if wait <= 0:
                return None
            if not self.st_poll.poll(int(min(wait, POLL) * 1000) + 1):
                continue
            try:
                data = os.read(self.st_r, 4096)
            except BlockingIOError:
                continue
            if not data:
                self.st_eof = True
                return None
            self.status += data
            if len(self.status) > 65536:
                self.status = b""
        line, self.status = self.status.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def run(self, code):
        # Runs one cell; returns (exit status, ended) where ended is None
        # when the shell lives on, else a sentence on why it is gone.
        tok = secrets.token_hex(8)
        cell = os.path.join(self.dir, "cell.sh")
        tmp = cell + ".new"
        try:
            # A cell may have removed the private directory.
            os.makedirs(self.dir, mode=0o700, exist_ok=True)
            with open(tmp, "w", encoding="utf-8", errors="replace") as f:
                f.write(code)
            os.replace(tmp, cell)
        except OSError as e:
            raise CellError("cannot write the cell for bash: %s" % (e.strerror or e))
        self.pending_interrupt = False
        self.interrupted_at = None
        self.state = SENT
        line = "__glassroom_tok=%s; \\builtin trap -- - INT; \\__glassroom_begin; \\builtin . %s </dev/null >&%d 2>&%d %d>&- %d>&- %d>&-" % (
            tok, sq(cell), self.out, self.err, self.out, self.err, self.st)
        try:
            self.send(line)
        except OSError:
            self.state = IDLE
            return self.gone(None)
        try:
            while True:
                why = self.stuck()
                if why:
                    self.kill()
                    return self.gone(why)
                line = self.next_status(time.monotonic() + POLL)
                if line is None:
                    if self.st_eof:
                        return self.wait_exit()
                    continue
                if line == "begin " + tok:
                    self.state = RUNNING
                    if self.pending_interrupt:
                        self.interrupt()
                elif line.startswith("done %s " % tok):
                    try:
                        return int(line.split(" ")[2]), None
                    except ValueError:
                        return 1, None
        finally:
            self.state = IDLE

    def wait_exit(self):
        # bash closed its status pipe: it exited, or the cell exec'd a
        # program in its place, which is still the cell.
        self.state = RUNNING
        while True:
            try:
                self.proc.wait(timeout=POLL)
                break
            except subprocess.TimeoutExpired:
                pass
            why = self.stuck()
            if why:
                self.kill()
                return self.gone(why)
        return self.gone(None)

    def stuck(self):
        # After an interrupt, at the end of each grace: None while the
        # cell may still obey (the grace has not passed, or its processes
        # used CPU time over it: interrupted again), else why it is killed.
        if self.interrupted_at is None:
            return None
        now = time.monotonic()
        if now - self.grace_from <= INTERRUPT_GRACE:
            return None
        cpu = group_cpu(self.proc.pid)
        used, self.grace_cpu, self.grace_from = cpu - self.grace_cpu, cpu, now
        waited = now - self.interrupted_at
        if used < PROGRESS_CPU:
            return "it made no progress within %g s of the interrupt and was killed" % INTERRUPT_GRACE
        if waited > INTERRUPT_MAX_WAIT:
            return "it was still running %d s after the first interrupt and was killed" % waited
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except OSError:
            pass
        return None

    def gone(self, why):
        if self.proc.poll() is None:
            self.kill()
        rc = self.proc.wait()
        status = rc if rc >= 0 else 128 - rc
        return status, why or self.describe_exit()

    def describe_exit(self):
        if self.proc is None:
            return "bash was not started"
        rc = self.proc.poll()
        if rc is None:
            return "bash is still running"
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = str(-rc)
            return "bash was killed by %s" % name
        return "bash exited with status %d" % rc

    def interrupt(self):
        # Called by the SIGINT handler: pass the interrupt on once the
        # cell has begun; before, remember it.
        if self.state == IDLE:
            return
        if self.interrupted_at is None:
            self.interrupted_at = self.grace_from = time.monotonic()
            self.grace_cpu = group_cpu(self.proc.pid)
        if self.state == SENT:
            self.pending_interrupt = True
            return
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except OSError:
            pass

    def was_interrupted(self):
        return self.interrupted_at is not None

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

    def flush(self):
        # Publishes everything bash wrote so far.
        if self.reader is None or not self.reader.is_alive():
            return
        self.reader.flushed.clear()
        try:
            os.write(self.wake_w, b"f")
        except OSError:
            return
        self.reader.flushed.wait(30)

    def close(self):
        # Ends bash and whatever else runs in its process group, and the
        # reader (after it sent what bash wrote).
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
        try:
            os.chmod(self.dir, 0o700)
        except OSError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def complete(self, kind, prefix):
        # Asks the idle shell for completions; returns (its cwd, matches,
        # directories) or None.
        tok = secrets.token_hex(8)
        out = os.path.join(self.dir, "completions")
        try:
            os.makedirs(self.dir, mode=0o700, exist_ok=True)
            os.unlink(out)
        except FileNotFoundError:
            pass
        except OSError:
            return None
        try:
            self.send("__glassroom_tok=%s; \\__glassroom_complete %s %s %s" % (tok, kind, sq(prefix), sq(self.dir)))
        except OSError:
            return None
        deadline = time.monotonic() + COMPLETE_TIMEOUT
        while True:
            line = self.next_status(deadline)
            if line is None:
                return None
            if line.startswith("done %s " % tok):
                break
        try:
            with open(out, "rb") as f:
                data = f.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            return None
        head, _, dirs = data.partition("\n\n")
        lines = head.split("\n")
        return lines[0], [x for x in lines[1:] if x], set(x for x in dirs.split("\n") if x)

    def display(self, request):
        # One request of `display`: "MIME NAME", NAME a file in the private
        # directory. Publishes it and answers on NAME.ack.
        parts = request.split(" ")
        if len(parts) != 2 or parts[0] not in DISPLAY_TYPES.values() or not PAYLOAD_NAME.match(parts[1]):
            return
        mime, name = parts
        path = os.path.join(self.dir, name)
        try:
            answer = self.kernel.display(mime, read_payload(path))
        except OSError as e:
            answer = "display: cannot read the data: %s" % (e.strerror or e)
        except ValueError as e:
            answer = "display: %s" % e
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
        try:
            fd = os.open(path + ".ack", os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, (answer.replace("\n", " ") + "\n").encode("utf-8"))
        except OSError:
            pass
        finally:
            os.close(fd)
            try:
                os.unlink(path + ".ack")
            except OSError:
                pass


def read_payload(path):
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("the data is not a regular file")
        chunks, n = [], 0
        while n <= DISPLAY_MAX:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
            n += len(b)
    finally:
        os.close(fd)
    if n > DISPLAY_MAX:
        raise ValueError("over the %d MiB limit" % (DISPLAY_MAX >> 20))
    if n == 0:
        raise ValueError("nothing to show (the data is empty)")
    return b"".join(chunks)


class BashKernel(Publisher, Kernel):
    implementation = "glassroom-bash"
    implementation_version = "1.0"
    language_info = {
        "name": "bash",
        "mimetype": "text/x-sh",
        "file_extension": ".sh",
        "codemirror_mode": "shell",
        "pygments_lexer": "bash",
        "version": "",
    }
    banner = ""
    help_links = [{"text": "GNU Bash manual", "url": "https://www.gnu.org/software/bash/manual/"}]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.out_parent = {}
        self.quiet = False
        self.bash = None
        self.start_error = ""
        self.new_shell()
        version = self.bash.version if self.bash is not None else ""
        self.language_info = dict(self.language_info, version=version.split("(")[0])
        self.banner = " ".join([
            "glassroom bash kernel (GNU bash %s)." % (version or "unknown"),
            "One bash runs all cells: cd, variables and functions carry over.",
            "stdout and stderr are streamed; a cell's result is the exit status of its last command,",
            "and a non-zero status is an error (ExitStatus).",
            "No standard input: commands read /dev/null (no input() prompts; allow_stdin is ignored).",
            "Rich output: display FILE, display --html TEXT (display --help).",
        ])

    def new_shell(self):
        try:
            sh = Shell(self)
        except OSError as e:
            self.start_error = str(e)
            self.bash = None
            return False
        try:
            sh.start()
        except Exception as e:
            self.start_error = str(e)
            sh.close()
            self.bash = None
            return False
        self.bash = sh
        return True

    def display(self, mime, data):
        self.publish("display_data", {"data": bundle(mime, data), "metadata": {}, "transient": {}})
        return "ok"

    def on_sigint(self, signum, frame):
        if self.bash is not None:
            self.bash.interrupt()

    def do_execute(self, code, silent, store_history=True, user_expressions=None, allow_stdin=False, **kwargs):
        self.out_parent = self.get_parent("shell")
        self.quiet = silent
        try:
            return self.execute(code)
        except Exception as e:
            # ipykernel sends no reply for a request whose handler raised.
            self.log.error("bash kernel: execute failed", exc_info=True)
            return self.error_reply("BashError", "the bash kernel failed: %s" % e, 1)

    def execute(self, code):
        if self.bash is not None and not self.bash.alive():
            why = self.bash.describe_exit()
            self.bash.close()
            self.bash = None
            self.note(why + " since the last cell: this cell runs in a new bash (variables, functions and the working directory were reset)")
        if self.bash is None and not self.new_shell():
            return self.error_reply("BashError", "bash could not start: " + self.start_error, 1)
        if not code.strip():
            return self.ok_reply(0)
        sh = self.bash
        try:
            status, ended = sh.run(code)
        except CellError as e:
            sh.close()
            self.bash = None
            fresh = self.new_shell()
            return self.error_reply("BashError", "%s; %s" % (e, "a new bash was started (variables, functions and the working directory were reset): run the cell again" if fresh else "no new bash could be started: " + self.start_error), 1)
        interrupted = sh.was_interrupted()
        sh.flush()
        if ended is not None:
            sh.close()
            self.bash = None
            fresh = self.new_shell()
            self.note(ended + ": " + ("the next cell runs in a new bash (variables, functions and the working directory were reset)" if fresh else "no new bash could be started: " + self.start_error))
        if interrupted and status != 0:
            return self.error_reply("KeyboardInterrupt", "interrupted (exit status %d)" % status, status)
        if status != 0:
            return self.error_reply("ExitStatus", "exit status %d" % status, status)
        return self.ok_reply(0)

    def ok_reply(self, status):
        return {"status": "ok", "execution_count": self.execution_count, "payload": [], "user_expressions": {}, "exit_code": status}

    def error_reply(self, ename, evalue, status):
        tb = ["%s: %s" % (ename, evalue)]
        if not self.quiet:
            self.publish("error", {"ename": ename, "evalue": evalue, "traceback": tb})
        return {"status": "error", "execution_count": self.execution_count, "ename": ename, "evalue": evalue,
                "traceback": tb, "exit_code": status, "payload": [], "user_expressions": {}}

    def do_complete(self, code, cursor_pos):
        empty = {"status": "ok", "matches": [], "cursor_start": cursor_pos, "cursor_end": cursor_pos, "metadata": {}}
        if cursor_pos is None:
            cursor_pos = len(code)
        text = code[:cursor_pos]
        word = re.search(r"[^\s;|&(){}<>`\"'=]*$", text)
        start = word.start()
        token = word.group(0)
        before = text[:start].rstrip(" \t")
        if token.startswith("$"):
            kind, prefix, lead = "var", token[1:].lstrip("{"), token[:len(token) - len(token[1:].lstrip("{"))]
        elif "/" not in token and (not before or before[-1] in ";|&(\n{`" or before.endswith("$(")):
            kind, prefix, lead = "cmd", token, ""
        else:
            kind, prefix, lead = "file", token, ""
        if self.bash is None or not self.bash.alive() or len(prefix) > 4096:
            return empty
        got = self.bash.complete(kind, prefix)
        if got is None:
            return empty
        cwd, matches, dirs = got
        out = []
        for m in matches:
            if kind != "var" and m in dirs:
                m += "/"
            out.append(lead + m)
        out = sorted(set(out))[:1000]
        return {"status": "ok", "matches": out, "cursor_start": start, "cursor_end": cursor_pos, "metadata": {}}

    def do_inspect(self, code, cursor_pos, detail_level=0, omit_sections=()):
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}

    def do_shutdown(self, restart):
        if self.bash is not None:
            self.bash.close()
            self.bash = None
        return {"status": "ok", "restart": restart}


run_kernel(BashKernel)
