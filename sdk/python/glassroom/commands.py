"""Shell commands in a sandbox: ``sbx.commands`` (shaped like E2B's).

A command runs ``bash -lc cmd`` in the session's sandbox, as the kernels'
user, with their limits, network policy and workspace. Its output streams
as ``command`` events on the session's WebSocket; a ``Commands`` keeps one
WebSocket for all the commands it watches (opened when the first starts,
closed when none is watched), read by one daemon thread that hands each
command's events to its handle. Callbacks run in the thread that waits
(``run`` or ``CommandHandle.wait``), never in that reader thread. When the
WebSocket cannot be had (or loses events), a handle falls back to polling
``GET .../commands/{pid}``.
"""

import json
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from ._http import Connection, session_path
from .exceptions import (CommandExitException, ConflictException, InvalidArgumentException, NotFoundException,
                         SandboxException, TimeoutException)
from .models import CommandResult, ProcessInfo, parse_time

CommandOutputHandler = Callable[[str], Any]
"""Called with each chunk of a command's stdout (or stderr) as it arrives."""

DEFAULT_TIMEOUT = 60.0
"""Seconds a command may run by default (as in E2B); 0 or None: no limit of the SDK's own."""

_RECV_TIMEOUT = 120.0   # the gateway pings every 30 s: this long a silence means the socket is dead
_CHECK_EVERY = 30.0     # a waiting handle that hears nothing this long asks the gateway how its command is
_MAX_BUFFERED = 64 << 20  # bytes of events one handle holds unread before it stops buffering and polls instead
_RECONNECTS = 3
_REST_MAX_TIMEOUT = 600.0  # the gateway's default --max-exec-timeout: a foreground REST call may ask for this much

_LOST = {"type": "_lost"}          # the handle's events can no longer be trusted complete: poll
_DETACHED = {"type": "_detached"}  # the handle was disconnected


class _Watch:
    """One handle's share of the event stream: a queue the reader fills."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.q: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        self._mu = threading.Lock()
        self._buffered = 0  # bytes of events queued and not yet taken
        self.lost = False

    def put(self, ev: Dict[str, Any], size: int) -> None:
        with self._mu:
            if self.lost:
                return
            self._buffered += size
            if self._buffered > _MAX_BUFFERED:
                self.lost = True
                self.q.put(_LOST)
                return
            self.q.put(ev)

    def get(self, timeout: float) -> Dict[str, Any]:
        """The next event (raises queue.Empty after timeout seconds)."""
        ev = self.q.get(timeout=timeout)
        with self._mu:
            self._buffered -= _size(ev)
        return ev


class _Events:
    """The session WebSocket shared by a sandbox's command handles.

    ``begin`` opens it (if it is not open) before a command starts, so that
    no event of the command is missed; ``watch`` routes a pid's events to a
    queue (with the ones that came before the pid was known); ``end`` closes
    the start. The socket closes when nobody watches and no start is
    pending. Thread-safe.
    """

    def __init__(self, conn: Connection, sandbox_id: str) -> None:
        self._conn = conn
        self._id = sandbox_id
        self._lock = threading.Lock()
        self._ws: Any = None
        self._watches: Dict[int, List[_Watch]] = {}  # by pid (several handles may watch one command)
        self._pending = 0
        self._early: Dict[int, List[Dict[str, Any]]] = {}  # events of pids not yet watched
        self._early_bytes = 0
        self._early_lost: set = set()
        self._last_seq = -1

    def begin(self) -> bool:
        """Announces a start; returns whether events will stream (False: poll)."""
        with self._lock:
            self._pending += 1
            if self._ws is None:
                try:
                    self._ws = self._open(None)
                except SandboxException:
                    return False
                threading.Thread(target=self._read, args=(self._ws,), name="glassroom-commands", daemon=True).start()
            return True

    def end(self) -> None:
        """The start announced by ``begin`` has its pid (or failed)."""
        with self._lock:
            self._pending -= 1
            if self._pending == 0:
                self._early.clear()
                self._early_bytes = 0
                self._early_lost.clear()
            self._close_if_idle()

    def watch(self, pid: int) -> Optional[_Watch]:
        """Routes pid's events to a new watch; None when nothing streams (poll)."""
        with self._lock:
            if self._ws is None:
                return None
            w = _Watch(pid)
            if pid in self._early_lost:
                w.lost = True
                w.q.put(_LOST)
            for ev in self._early.pop(pid, []):
                w.put(ev, _size(ev))
                if ev.get("state") == "exited":
                    return w
            self._watches.setdefault(pid, []).append(w)
            return w

    def unwatch(self, w: _Watch) -> None:
        with self._lock:
            ws = self._watches.get(w.pid, [])
            if w in ws:
                ws.remove(w)
            if not ws:
                self._watches.pop(w.pid, None)
            self._close_if_idle()

    def close(self) -> None:
        """Closes the socket; every watch falls back to polling."""
        with self._lock:
            self._lose_watches()
            self._early_lost.update(self._early)
            self._early.clear()
            self._drop_ws()

    def _close_if_idle(self) -> None:
        if self._ws is not None and not self._watches and self._pending == 0:
            self._drop_ws()

    def _drop_ws(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                ws.abort()  # wakes the reader, which closes it
            except Exception:
                pass

    def _open(self, since: Optional[int]) -> Any:
        try:
            import websocket  # Debian: python3-websocket; PyPI: websocket-client
        except ImportError:
            raise SandboxException("streaming command output needs websocket-client") from None
        url = self._conn.ws_url + session_path(self._id, "ws")
        if since is not None:
            url += f"?since={since}"
        try:
            ws = websocket.create_connection(url, header=["Authorization: Bearer " + self._conn.api_key],
                                             timeout=self._conn.request_timeout, suppress_origin=True)
            ws.settimeout(_RECV_TIMEOUT)
            return ws
        except Exception as e:
            raise SandboxException(f"could not open a WebSocket to {self._conn.base_url}: {e}") from e

    def _read(self, ws: Any) -> None:
        """The reader thread of one socket: it ends when the socket is no longer the current one."""
        reconnects, since = 0, time.monotonic()
        while True:
            try:
                raw = ws.recv()
                if not raw:
                    raise OSError("closed")
            except Exception:
                if time.monotonic() - since > 60:
                    reconnects = 0  # a socket that lived a while: try afresh
                ws = self._reconnect(ws, reconnects)
                if ws is None:
                    return
                reconnects, since = reconnects + 1, time.monotonic()
                continue
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            with self._lock:
                if self._ws is not ws:
                    break
                self._route(ev)
        try:
            ws.close(timeout=1)
        except Exception:
            pass

    def _reconnect(self, old: Any, attempt: int) -> Any:
        """Replaces a broken socket by one that resumes after the last event seen; None when the reader should end."""
        try:
            old.close(timeout=1)
        except Exception:
            pass
        with self._lock:
            if self._ws is not old:
                return None
            since = self._last_seq
        new = None
        if attempt < _RECONNECTS and since >= 0:
            time.sleep(0.2 * (attempt + 1))
            try:
                new = self._open(since)
            except SandboxException:
                new = None
        with self._lock:
            if self._ws is not old:  # closed meanwhile
                if new is not None:
                    new.abort()
                return None
            if new is None:
                self._lose_all()
                self._ws = None
                return None
            self._ws = new
            return new

    def _lose_watches(self) -> None:
        for ws in self._watches.values():
            for w in ws:
                w.q.put(_LOST)
        self._watches.clear()

    def _lose_all(self) -> None:
        self._lose_watches()
        self._early_lost.update(self._early)
        self._early.clear()

    def _route(self, ev: Dict[str, Any]) -> None:
        seq = ev.get("seq")
        if isinstance(seq, int):
            self._last_seq = max(self._last_seq, seq)
        kind = ev.get("type")
        if kind == "gap":
            self._lose_all()
            return
        if kind != "command":
            return
        pid = ev.get("pid")
        if not isinstance(pid, int):
            return
        size = _size(ev)
        ws = self._watches.get(pid)
        if ws:
            for w in ws:
                w.put(ev, size)
            if ev.get("state") == "exited":
                del self._watches[pid]
                self._close_if_idle()
        elif self._pending > 0:
            self._early_bytes += size
            if self._early_bytes > _MAX_BUFFERED:
                self._early_lost.update(self._early)
                self._early_lost.add(pid)
                self._early.clear()
                self._early_bytes = 0
                return
            self._early.setdefault(pid, []).append(ev)


class CommandHandle:
    """A command running in the sandbox (``commands.run(..., background=True)``
    or ``commands.connect(pid)``).

    ``wait()`` streams its output to callbacks until it ends and returns its
    CommandResult (raising CommandExitException for an exit code other
    than 0, TimeoutException when it was killed at its timeout). Iterating
    over the handle yields ``(stdout, stderr, None)`` chunk tuples, as in
    E2B. ``stdout`` and ``stderr`` hold what has been seen so far. Use a
    handle from one thread at a time (``kill`` and ``send_stdin`` from any).
    """

    def __init__(self, commands: "Commands", pid: int, watch: Optional[_Watch],
                 on_stdout: Optional[CommandOutputHandler] = None, on_stderr: Optional[CommandOutputHandler] = None) -> None:
        self._commands = commands
        self._pid = pid
        self._watch = watch
        self._on_stdout = on_stdout
        self._on_stderr = on_stderr
        self._stdout: List[str] = []
        self._stderr: List[str] = []
        self._seen = [0, 0]  # characters of stdout, stderr handed out (for polling)
        self._exited: Optional[Dict[str, Any]] = None
        self._result: Optional[CommandResult] = None
        self._on_pty: Optional[Callable[[bytes], None]] = None

    @property
    def pid(self) -> int:
        """The command's process id in the sandbox (on the local runtime, the session's own number)."""
        return self._pid

    @property
    def stdout(self) -> str:
        """The stdout seen so far."""
        return self._result.stdout if self._result else "".join(self._stdout)

    @property
    def stderr(self) -> str:
        """The stderr seen so far."""
        return self._result.stderr if self._result else "".join(self._stderr)

    @property
    def exit_code(self) -> Optional[int]:
        """The exit code once ``wait`` has seen the end, else None."""
        return self._result.exit_code if self._result else None

    @property
    def error(self) -> Optional[str]:
        return self._result.error if self._result else None

    def __repr__(self) -> str:
        return f"CommandHandle(pid={self._pid}, exit_code={self.exit_code})"

    def __iter__(self) -> Iterator[Tuple[Optional[str], Optional[str], None]]:
        """Yields the output until the command ends; raises
        TimeoutException when it was killed at its timeout (as E2B's)."""
        for name, text in self._chunks():
            yield (text, None, None) if name == "stdout" else (None, text, None)
        r = self._result
        if r is not None and r.timed_out:
            raise TimeoutException(f"command {r.pid} ran past its timeout and was killed", code="timeout", result=r)

    def wait(self, on_stdout: Optional[CommandOutputHandler] = None,
             on_stderr: Optional[CommandOutputHandler] = None,
             on_pty: Optional[Callable[[bytes], None]] = None) -> CommandResult:
        """Waits for the command to end, calling the callbacks with each
        chunk of output not handed out yet (default: the ones given to
        ``run``), and returns its CommandResult. ``on_pty`` (a PTY's, as
        in E2B) is called with each chunk of its output as bytes.

        Raises CommandExitException (which carries the result) when the exit
        code is not 0, TimeoutException (``result`` set) when the command
        was killed at its timeout, and TimeoutException too when the
        sandbox ended (killed, or at its end of life) while it ran.
        """
        on_stdout = on_stdout or self._on_stdout
        on_stderr = on_stderr or self._on_stderr
        on_pty = on_pty or self._on_pty
        for name, text in self._chunks():
            if on_pty is not None and name == "stdout":
                on_pty(text.encode("utf-8"))
                continue
            cb = on_stdout if name == "stdout" else on_stderr
            if cb is not None:
                cb(text)
        r = self._result
        assert r is not None
        if r.timed_out:
            raise TimeoutException(f"command {r.pid} ran past its timeout and was killed", code="timeout", result=r)
        if r.exit_code != 0:
            raise CommandExitException(r)
        return r

    def kill(self) -> bool:
        """Kills the command (SIGKILL to its process group). False if it had already ended or is unknown."""
        return self._commands.kill(self._pid)

    def send_stdin(self, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        """Writes data to the command's stdin."""
        self._commands.send_stdin(self._pid, data, request_timeout)

    def close_stdin(self, request_timeout: Optional[float] = None) -> None:
        """Closes the command's stdin (it reads end of file)."""
        self._commands.close_stdin(self._pid, request_timeout)

    def disconnect(self) -> None:
        """Stops receiving the command's events; it keeps running. A
        ``wait`` in progress raises SandboxException; a later one polls
        for the result."""
        w, self._watch = self._watch, None
        if w is not None:
            self._commands._events.unwatch(w)
            w.q.put(_DETACHED)

    def _chunks(self) -> Iterator[Tuple[str, str]]:
        """Yields (name, text) for each new chunk until the command ends;
        then ``_result`` is set. A sandbox that ends meanwhile is a
        TimeoutException, as E2B's."""
        try:
            yield from self._read_chunks()
        except NotFoundException:
            if self._commands._sandbox_exists():
                raise
            raise TimeoutException(f"command {self._pid} did not finish: the sandbox was killed or reached its "
                                   "end of life while it ran", code="sandbox_ended") from None

    def _read_chunks(self) -> Iterator[Tuple[str, str]]:
        if self._result is not None:
            return
        while self._exited is None:
            w = self._watch
            if w is None:
                yield from self._poll()
                break
            try:
                ev = w.get(_CHECK_EVERY)
            except queue.Empty:
                if not self._commands._status(self._pid).get("running", True):
                    # Ended, and its exit did not come: trust the gateway's record.
                    self._drop_watch(w)
                continue
            if ev is _DETACHED:
                raise SandboxException(f"disconnected from command {self._pid}")
            if ev is _LOST:
                self._drop_watch(w)
                continue
            if ev.get("state") == "exited":
                self._exited = ev
                self._drop_watch(w)
                break
            name = ev.get("name")
            text = ev.get("text")
            if ev.get("state") or name not in ("stdout", "stderr") or not isinstance(text, str) or not text:
                continue
            i = 0 if name == "stdout" else 1
            (self._stdout if i == 0 else self._stderr).append(text)
            self._seen[i] += len(text)
            yield name, text
        self._result = self._finish()

    def _drop_watch(self, w: _Watch) -> None:
        self._commands._events.unwatch(w)
        self._watch = None

    def _poll(self) -> Iterator[Tuple[str, str]]:
        """Polls the command's status until it ends, yielding output beyond what was handed out."""
        delay = 0.05
        while True:
            st = self._commands._status(self._pid)
            for i, name in enumerate(("stdout", "stderr")):
                text = str(st.get(name) or "")
                if len(text) > self._seen[i] and not st.get("truncated"):
                    new = text[self._seen[i]:]
                    (self._stdout if i == 0 else self._stderr).append(new)
                    self._seen[i] = len(text)
                    yield name, new
            if not st.get("running", False):
                self._exited = {"state": "exited", "status": st}
                return
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _finish(self) -> CommandResult:
        """The result: the gateway's record of the command when it still has it, else what the events said."""
        ex = self._exited or {}
        st = ex.get("status")
        if st is None:
            try:
                st = self._commands._status(self._pid)
            except NotFoundException:  # no longer kept: what the events said
                if not self._commands._sandbox_exists():
                    raise
                st = {}
        exit_code = _int(st.get("exit_code", ex.get("exit_code")), -1)
        timed_out = bool(st.get("timed_out", ex.get("timed_out", False)))
        r = CommandResult(
            stdout=str(st["stdout"]) if "stdout" in st else "".join(self._stdout),
            stderr=str(st["stderr"]) if "stderr" in st else "".join(self._stderr),
            exit_code=exit_code, pid=self._pid, truncated=bool(st.get("truncated", False)),
            duration_ms=_int(st.get("duration_ms", ex.get("duration_ms")), 0), timed_out=timed_out)
        if timed_out:
            r.error = "killed at its timeout"
        elif exit_code != 0:
            r.error = f"exit status {exit_code}"
        return r


class Commands:
    """The shell commands of one sandbox: ``sbx.commands``.

    Thread-safe: commands may be run and waited for from several threads.
    """

    def __init__(self, conn: Connection, sandbox_id: str) -> None:
        self._conn = conn
        self._id = sandbox_id
        self._events = _Events(conn, sandbox_id)

    def run(self, cmd: str, background: Optional[bool] = None, envs: Optional[Dict[str, str]] = None,
            user: Optional[str] = None, cwd: Optional[str] = None, on_stdout: Optional[CommandOutputHandler] = None,
            on_stderr: Optional[CommandOutputHandler] = None, stdin: Union[None, bool, str, bytes] = None,
            timeout: Optional[float] = DEFAULT_TIMEOUT, request_timeout: Optional[float] = None) -> Any:
        """Runs ``bash -lc cmd`` in the sandbox.

        Foreground (the default): waits for it to end and returns its
        CommandResult; an exit code other than 0 raises CommandExitException
        (carrying the result), a command killed at ``timeout`` raises
        TimeoutException (``result`` holds the output so far). With
        ``on_stdout`` / ``on_stderr``, each chunk of output is passed to
        them as it arrives.

        ``background=True``: returns a CommandHandle at once (``wait``,
        ``kill``, ``send_stdin``); the callbacks given here are the ones
        ``wait`` calls.

        :param envs: environment variables of this command only
        :param user: only None or "user": commands run as the sandbox's
            one unprivileged user, as its kernels do
        :param cwd: its working directory: the workspace (/home/user, the
            default) or a directory under it, absolute or relative to it
        :param stdin: a str (or bytes, UTF-8) written to its stdin first.
            A foreground command's stdin is then closed unless ``stdin`` is
            True; a background command's stays open (``send_stdin``,
            ``close_stdin``) unless ``stdin`` is False.
        :param timeout: seconds it may run before its process group is
            killed (default 60, as in E2B); 0 or None: no limit (it runs
            until it ends or is killed)
        :param request_timeout: seconds to wait for the gateway on each
            call (default: the sandbox's; a foreground call without
            callbacks waits ``timeout`` + 30 s)
        """
        if not isinstance(cmd, str) or not cmd:
            raise InvalidArgumentException("cmd must be a non-empty str")
        if user not in (None, "user"):
            raise InvalidArgumentException(
                f"user={user!r}: a glassroom sandbox has no other user: commands and files are the sandbox's own "
                "unprivileged user's ('user', home /home/user), never root, so that code in it cannot act as root on "
                "the machine it runs on; leave user out")
        body: Dict[str, Any] = {"cmd": cmd}
        if cwd:
            body["cwd"] = cwd
        if envs:
            body["envs"] = {str(k): str(v) for k, v in envs.items()}
        if timeout is not None and timeout < 0:
            raise InvalidArgumentException("timeout must not be negative")
        if timeout:
            body["timeout_s"] = timeout
        if isinstance(stdin, bytes):
            stdin = stdin.decode("utf-8")
        if isinstance(stdin, str) and stdin:
            body["stdin"] = stdin
        keep_stdin = stdin is True or (background and stdin is not False)
        rest = bool(timeout) and timeout <= _REST_MAX_TIMEOUT  # type: ignore[operator]
        if not background and rest and stdin is not True and on_stdout is None and on_stderr is None:
            rt = request_timeout if request_timeout is not None else (timeout + 30 if timeout else None)
            out = self._conn.call("POST", session_path(self._id, "commands"), json_body=body, timeout=rt)
            r = _result(out)
            if r.timed_out:
                raise TimeoutException(f"command {r.pid} ran past its timeout and was killed", code="timeout", result=r)
            if r.exit_code != 0:
                raise CommandExitException(r)
            return r
        h = self._start(body, on_stdout, on_stderr, request_timeout)
        if not keep_stdin:
            try:
                self.close_stdin(h.pid, request_timeout)
            except (NotFoundException, ConflictException):
                pass  # ended already
        if background:
            return h
        try:
            return h.wait()
        except KeyboardInterrupt:
            self.kill(h.pid)
            raise

    def _start(self, body: Dict[str, Any], on_stdout: Optional[CommandOutputHandler],
               on_stderr: Optional[CommandOutputHandler], request_timeout: Optional[float]) -> CommandHandle:
        body = dict(body, background=True)
        streams = self._events.begin()
        try:
            kw: Dict[str, Any] = {} if request_timeout is None else {"timeout": request_timeout}
            out = self._conn.call("POST", session_path(self._id, "commands"), json_body=body, ok=(201,), **kw)
            pid = _int(out.get("pid") if isinstance(out, dict) else None, -1)
            if pid < 0:
                raise SandboxException("the gateway answered a command start without a pid")
            watch = self._events.watch(pid) if streams else None
        finally:
            self._events.end()
        return CommandHandle(self, pid, watch, on_stdout, on_stderr)

    def connect(self, pid: int, on_stdout: Optional[CommandOutputHandler] = None,
                on_stderr: Optional[CommandOutputHandler] = None) -> CommandHandle:
        """A handle on a command already started (NotFoundException if the
        sandbox does not know the pid). Its callbacks see the output from
        about now on; ``wait`` returns the whole (kept) output."""
        streams = self._events.begin()
        try:
            running = self._status(pid).get("running", False)
            # An ended command's exit event has gone by: its handle asks the gateway.
            watch = self._events.watch(pid) if streams and running else None
        finally:
            self._events.end()
        return CommandHandle(self, pid, watch, on_stdout, on_stderr)

    def list(self, include_finished: bool = False, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        """The sandbox's running commands (with ``include_finished``, the
        last finished ones the gateway keeps as well)."""
        kw: Dict[str, Any] = {} if request_timeout is None else {"timeout": request_timeout}
        out = self._conn.call("GET", session_path(self._id, "commands"), **kw)
        procs = []
        for c in (out or {}).get("commands") or []:
            if not isinstance(c, dict):
                continue
            p = ProcessInfo(pid=_int(c.get("pid"), 0), cmd=str(c.get("cmd", "")), cwd=str(c.get("cwd") or ""),
                            running=bool(c.get("running")),
                            exit_code=None if c.get("exit_code") is None else _int(c.get("exit_code"), -1),
                            started_at=parse_time(c.get("started_at")) if c.get("started_at") else None,
                            duration_ms=None if c.get("duration_ms") is None else _int(c.get("duration_ms"), 0))
            if p.running or include_finished:
                procs.append(p)
        return procs

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """Kills a command (SIGKILL to its process group). Returns False if
        the sandbox does not know it or it had already ended."""
        kw: Dict[str, Any] = {} if request_timeout is None else {"timeout": request_timeout}
        try:
            # The gateway's kill of an ended command is a no-op; E2B's answer is False.
            if not self._status(pid, **kw).get("running", False):
                return False
            self._conn.call("POST", session_path(self._id, "commands", str(int(pid)), "kill"), ok=(204,), **kw)
            return True
        except (NotFoundException, ConflictException) as e:
            if isinstance(e, NotFoundException) and e.code not in ("command_not_found", ""):
                raise  # the sandbox itself is gone
            return False

    def send_stdin(self, pid: int, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        """Writes data (str, or UTF-8 bytes) to a command's stdin."""
        if isinstance(data, (bytes, bytearray)):
            data = bytes(data).decode("utf-8")
        if not isinstance(data, str):
            raise InvalidArgumentException("data must be str or bytes")
        self._stdin(pid, {"data": data}, request_timeout)

    def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        """Closes a command's stdin: it reads end of file."""
        self._stdin(pid, {"data": "", "eof": True}, request_timeout)

    def _stdin(self, pid: int, body: Dict[str, Any], request_timeout: Optional[float]) -> None:
        kw: Dict[str, Any] = {} if request_timeout is None else {"timeout": request_timeout}
        self._conn.call("POST", session_path(self._id, "commands", str(int(pid)), "stdin"), json_body=body, ok=(204,), **kw)

    def _sandbox_exists(self) -> bool:
        """Whether the sandbox is still there (a 404 says it is not)."""
        try:
            self._conn.call("GET", session_path(self._id))
        except NotFoundException:
            return False
        return True

    def _status(self, pid: int, **kw: Any) -> Dict[str, Any]:
        out = self._conn.call("GET", session_path(self._id, "commands", str(int(pid))), **kw)
        return out if isinstance(out, dict) else {}

    def _close(self) -> None:
        self._events.close()


@dataclass
class PtySize:
    """A pseudo-terminal's size (E2B's order: rows, then cols)."""
    rows: int
    cols: int


class Pty:
    """Pseudo-terminals in the sandbox (``sbx.pty``, E2B's): each an
    interactive bash on a PTY, a command of the sandbox with its own pid,
    that lives until it exits, is killed, reaches its timeout or the
    sandbox ends, whoever is connected to it. Thread-safe."""

    def __init__(self, commands: Commands) -> None:
        self._commands = commands

    def create(self, size: PtySize, on_data: Optional[Callable[[bytes], None]] = None, user: Optional[str] = None,
               cwd: Optional[str] = None, envs: Optional[Dict[str, str]] = None, timeout: Optional[float] = 60,
               request_timeout: Optional[float] = None) -> CommandHandle:
        """Starts ``bash -i -l`` on a PTY of ``size`` and returns its handle
        (``wait(on_pty=...)`` streams its output as bytes). ``timeout``:
        seconds before it is killed (default 60, as in E2B; 0 or None: no
        limit)."""
        if user not in (None, "user"):
            raise InvalidArgumentException(f"user={user!r}: a glassroom sandbox has one user ('user'); leave user out")
        if timeout is not None and timeout < 0:
            raise InvalidArgumentException("timeout must not be negative")
        env = {str(k): str(v) for k, v in (envs or {}).items()}
        env.setdefault("LANG", "C.UTF-8")
        body: Dict[str, Any] = {"cmd": "", "login": True, "envs": env,
                                "pty": {"cols": int(size.cols), "rows": int(size.rows)}}
        if cwd:
            body["cwd"] = cwd
        if timeout:
            body["timeout_s"] = timeout
        h = self._commands._start(body, None, None, request_timeout)
        h._on_pty = on_data
        return h

    def connect(self, pid: int, on_data: Optional[Callable[[bytes], None]] = None, timeout: Optional[float] = 60,
                request_timeout: Optional[float] = None) -> CommandHandle:
        """A handle on a running PTY (its output from about now on)."""
        h = self._commands.connect(pid)
        h._on_pty = on_data
        return h

    def send_stdin(self, pid: int, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        """Types ``data`` into the PTY (``b"\\x03"`` is Ctrl-C)."""
        self._commands.send_stdin(pid, data, request_timeout)

    def resize(self, pid: int, size: PtySize, request_timeout: Optional[float] = None) -> None:
        """Changes the PTY's size."""
        kw: Dict[str, Any] = {} if request_timeout is None else {"timeout": request_timeout}
        self._commands._conn.call("POST", session_path(self._commands._id, "commands", str(int(pid)), "resize"),
                                  json_body={"cols": int(size.cols), "rows": int(size.rows)}, ok=(204,), **kw)

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """Kills the PTY and everything it started; False if it was not running."""
        return self._commands.kill(pid, request_timeout)


def _size(ev: Dict[str, Any]) -> int:
    """What an event costs a queue: its text and some overhead."""
    text = ev.get("text")
    return 64 + (len(text) if isinstance(text, str) else 0)


def _int(v: Any, default: int) -> int:
    if isinstance(v, bool):
        return default
    if isinstance(v, (int, float)):
        return int(v)
    return default


def _result(out: Any) -> CommandResult:
    out = out if isinstance(out, dict) else {}
    exit_code = _int(out.get("exit_code"), -1)
    timed_out = bool(out.get("timed_out"))
    r = CommandResult(stdout=str(out.get("stdout") or ""), stderr=str(out.get("stderr") or ""), exit_code=exit_code,
                      pid=_int(out.get("pid"), 0), truncated=bool(out.get("truncated")),
                      duration_ms=_int(out.get("duration_ms"), 0), timed_out=timed_out)
    if timed_out:
        r.error = "killed at its timeout"
    elif exit_code != 0:
        r.error = f"exit status {exit_code}"
    return r


__all__ = ["Commands", "CommandHandle", "CommandOutputHandler", "DEFAULT_TIMEOUT", "Pty", "PtySize"]
