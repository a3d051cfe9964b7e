"""``Sandbox``: one glassroom session (a persistent, sandboxed Jupyter kernel)."""

import functools
import json
import time
import urllib.parse
import uuid
from collections import abc
from typing import Any, Callable, Dict, List, Mapping, Optional, Type, TypeVar, Union

from ._http import Connection, session_path
from .exceptions import InvalidArgumentException, NotFoundException, SandboxException, TimeoutException, from_code, from_status
from .commands import Commands, Pty
from .files import Filesystem
from .models import (Context, Execution, ExecutionError, FileChange, NextInput, OutputMessage, Port, Preview, RestoreReport, Result,
                     SandboxInfo, Snapshot, page, parse_time, sandbox_info, user_expressions)

T = TypeVar("T")
S = TypeVar("S", bound="Sandbox")
OutputHandler = Callable[[T], Any]


class _either:
    """A method callable on an instance (``sbx.kill()``) or on the class with
    a sandbox id first (``Sandbox.kill(sandbox_id, api_key=...)``), as in E2B."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __get__(self, obj: Any, objtype: Any = None) -> Callable[..., Any]:
        if obj is not None:
            return functools.partial(self.fn, obj)

        def by_id(sandbox_id: str, *args: Any, api_key: Optional[str] = None, base_url: Optional[str] = None,
                  request_timeout: Optional[float] = None, **kw: Any) -> Any:
            sbx = objtype._attach(sandbox_id, Connection(api_key, base_url, request_timeout))
            return self.fn(sbx, *args, **kw)

        functools.update_wrapper(by_id, self.fn)
        return by_id


class _this_or_every:
    """A method callable on an instance (of that sandbox: ``sbx.list_snapshots()``)
    or on the class, the sandbox id optional (``Sandbox.list_snapshots()``:
    every one of the key's; ``Sandbox.list_snapshots(sandbox_id)``)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn  # fn(conn, sandbox_id or None, ...)
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __get__(self, obj: Any, objtype: Any = None) -> Callable[..., Any]:
        fn = self.fn
        if obj is not None:
            def of_this(*args: Any, **kw: Any) -> Any:
                return fn(obj._conn, obj.sandbox_id, *args, **kw)
            functools.update_wrapper(of_this, fn)
            return of_this

        def of_every(sandbox_id: Optional[str] = None, *args: Any, api_key: Optional[str] = None,
                     base_url: Optional[str] = None, request_timeout: Optional[float] = None, **kw: Any) -> Any:
            return fn(Connection(api_key, base_url, request_timeout), sandbox_id, *args, **kw)

        functools.update_wrapper(of_every, fn)
        return of_every


def _list_snapshots(conn: Connection, sandbox_id: Optional[str]) -> List[Snapshot]:
    """The key's snapshots, newest first; of one sandbox when sandbox_id is given."""
    out = conn.call("GET", "/v1/snapshots", query={"session_id": sandbox_id} if sandbox_id else None)
    return [Snapshot.from_json(x) for x in (out or {}).get("snapshots") or [] if isinstance(x, dict)]


def _snapshot_path(snapshot_id: str) -> str:
    if not isinstance(snapshot_id, str) or not snapshot_id:
        raise InvalidArgumentException("snapshot_id must be a snapshot's id")
    return "/v1/snapshots/" + urllib.parse.quote(snapshot_id, safe="")


class Sandbox:
    """A persistent, sandboxed Python (a glassroom session), shaped like
    E2B's code-interpreter ``Sandbox``.

    ``Sandbox()`` and ``Sandbox.create()`` start a new session;
    ``Sandbox.connect(id)`` attaches to an existing one. The API key comes
    from ``api_key`` or ``GLASSROOM_API_KEY``, the gateway URL from
    ``base_url`` or ``GLASSROOM_URL``. Use it as a context manager to kill
    the session at the end. A Sandbox may be used from several threads.
    """

    def __init__(self, api_key: Optional[str] = None, base_url: Optional[str] = None, timeout: Optional[float] = None,
                 envs: Optional[Mapping[str, str]] = None, limits: Optional[Mapping[str, Any]] = None,
                 request_timeout: Optional[float] = None, language: Optional[str] = None,
                 volumes: Optional[Mapping[str, str]] = None, snapshot: Optional[str] = None, **kwargs: Any) -> None:
        """Starts a new session.

        :param timeout: seconds the session may stay idle before the gateway
            deletes it (E2B's sandbox timeout; default: the gateway's, 20 min)
        :param envs: environment variables of the kernel
        :param limits: ``memory_mb``, ``cpus``, ``pids``, ``workspace_mb``
        :param request_timeout: seconds to wait for the gateway on each call (default 60)
        :param language: the language of the session's first context, the
            one ``run_code`` uses when given neither language nor context
            (default Python); other languages start on first use
        :param volumes: this key's volumes to mount (``Volume.create``):
            name → a directory under /home/user
        :param snapshot: a snapshot's id (``create_snapshot``): the sandbox
            starts with its files and its contexts' variables (``restore``
            says what came back); ``language`` defaults to the snapshot's
        """
        conn = Connection(api_key, base_url, request_timeout)
        attach = kwargs.pop("_attach", None)
        if kwargs:
            raise TypeError(f"unexpected arguments: {', '.join(kwargs)}")
        if attach is None:
            body: Dict[str, Any] = {}
            if timeout is not None:
                body["idle_timeout_s"] = timeout
            if envs:
                body["env"] = dict(envs)
            if limits:
                body["limits"] = dict(limits)
            if language:
                body["language"] = language
            if volumes:
                body["volumes"] = {str(k): str(v) for k, v in volumes.items()}
            if snapshot:
                body["snapshot"] = str(snapshot)
            attach = conn.call("POST", "/v1/sessions", json_body=body, ok=(201,))
        self._conn = conn
        self._info = attach
        self.sandbox_id: str = str(attach["id"])
        self.restore: Optional[RestoreReport] = RestoreReport.from_json(attach.get("restore"))
        """For a sandbox started from a snapshot (``snapshot=``) or by
        ``fork``: what it got of it (None otherwise, and once attached by id)."""
        self.files = Filesystem(conn, self.sandbox_id)
        self.commands = Commands(conn, self.sandbox_id)
        """Shell commands in the sandbox: ``sbx.commands.run("ls -la")``."""
        self.pty = Pty(self.commands)
        """Pseudo-terminals in the sandbox (E2B's ``sbx.pty``)."""

    @classmethod
    def create(cls: Type[S], api_key: Optional[str] = None, base_url: Optional[str] = None, timeout: Optional[float] = None,
               envs: Optional[Mapping[str, str]] = None, limits: Optional[Mapping[str, Any]] = None,
               request_timeout: Optional[float] = None, language: Optional[str] = None,
               volumes: Optional[Mapping[str, str]] = None, snapshot: Optional[str] = None) -> S:
        """Starts a new session (the same as ``Sandbox(...)``); with
        ``snapshot``, from that snapshot."""
        return cls(api_key=api_key, base_url=base_url, timeout=timeout, envs=envs, limits=limits, request_timeout=request_timeout,
                   language=language, volumes=volumes, snapshot=snapshot)

    @classmethod
    def connect(cls: Type[S], sandbox_id: str, api_key: Optional[str] = None, base_url: Optional[str] = None,
                request_timeout: Optional[float] = None) -> S:
        """Attaches to an existing session by id (NotFoundException if it is gone)."""
        conn = Connection(api_key, base_url, request_timeout)
        info = conn.call("GET", session_path(sandbox_id))
        return cls(api_key=conn.api_key, base_url=conn.base_url, request_timeout=request_timeout, _attach=info)

    @classmethod
    def _attach(cls: Type[S], sandbox_id: str, conn: Connection) -> S:
        return cls(api_key=conn.api_key, base_url=conn.base_url, request_timeout=conn.request_timeout, _attach={"id": sandbox_id})

    @classmethod
    def list(cls, api_key: Optional[str] = None, base_url: Optional[str] = None) -> List[SandboxInfo]:
        """The sessions of this API key."""
        out = Connection(api_key, base_url).call("GET", "/v1/sessions")
        return [sandbox_info(s) for s in out.get("sessions") or []]

    @property
    def id(self) -> str:
        """The session id (the same as ``sandbox_id``)."""
        return self.sandbox_id

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.kill()

    def __repr__(self) -> str:
        return f"Sandbox({self.sandbox_id!r}, {self._conn.base_url!r})"

    @_either
    def kill(self) -> bool:
        """Deletes the session: the kernel stops and its files are gone.
        Returns False if it did not exist (any more)."""
        self.commands._close()
        try:
            self._conn.call("DELETE", session_path(self.sandbox_id), ok=(204,))
            return True
        except NotFoundException:
            return False

    def close(self) -> bool:
        """The same as ``kill``."""
        return self.kill()

    @_either
    def set_timeout(self, timeout: float) -> None:
        """Sets how many seconds the session may stay idle before the gateway deletes it (the idle clock restarts now)."""
        if timeout <= 0:
            raise InvalidArgumentException("timeout must be positive")
        self._info = self._conn.call("PATCH", session_path(self.sandbox_id), json_body={"idle_timeout_s": timeout})

    @_either
    def get_info(self) -> SandboxInfo:
        """The session's state, runtime, times and limits."""
        self._info = self._conn.call("GET", session_path(self.sandbox_id))
        return sandbox_info(self._info)

    def is_running(self) -> bool:
        """Whether the session exists, is not hibernated and its kernel is not dead."""
        try:
            return self.get_info().state not in ("dead", "hibernated")
        except NotFoundException:
            return False

    @_either
    def pause(self, keep_memory: bool = True) -> None:
        """Pauses the session until ``resume``: frozen, its memory kept
        (the default), or with ``keep_memory=False`` hibernated: its state
        (files and variables) goes into a snapshot and its sandbox is freed;
        it keeps its id. Meanwhile its uses raise ConflictException (code
        ``session_hibernated`` once hibernated), unless its lifecycle's
        auto_resume wakes it on use."""
        body = None if keep_memory else {"keep_memory": False}
        self._info = self._conn.call("POST", session_path(self.sandbox_id, "pause"), json_body=body)

    @_either
    def resume(self) -> None:
        """Thaws a paused session, or wakes a hibernated one (a new sandbox
        under its id, its snapshot restored); a running one is left as it is."""
        self._info = self._conn.call("POST", session_path(self.sandbox_id, "resume"))

    @_either
    def create_snapshot(self, name: Optional[str] = None) -> Snapshot:
        """Captures the sandbox: its workspace's files and each context's
        variables (what a kernel cannot capture is in the snapshot's
        ``contexts``' ``uncaptured``). The sandbox goes on; the snapshot
        outlives it until ``delete_snapshot``. ``Sandbox(snapshot=id)``
        starts a sandbox from it. ``name`` (1 to 128 of A-Z a-z 0-9 . _ -)
        labels it."""
        out = self._conn.call("POST", session_path(self.sandbox_id, "snapshots"), json_body={"name": name} if name else {}, ok=(201,))
        return Snapshot.from_json(out)

    @_this_or_every
    def list_snapshots(conn: Connection, sandbox_id: Optional[str]) -> List[Snapshot]:  # type: ignore[misc]
        """The snapshots of this sandbox (``sbx.list_snapshots()``), or of
        the key (``Sandbox.list_snapshots()``, or of one sandbox with
        ``Sandbox.list_snapshots(sandbox_id)``), newest first."""
        return _list_snapshots(conn, sandbox_id)

    @classmethod
    def get_snapshot(cls, snapshot_id: str, api_key: Optional[str] = None, base_url: Optional[str] = None,
                     request_timeout: Optional[float] = None) -> Snapshot:
        """One snapshot of this key (NotFoundException, code ``snapshot_not_found``, if none)."""
        return Snapshot.from_json(Connection(api_key, base_url, request_timeout).call("GET", _snapshot_path(snapshot_id)))

    @classmethod
    def delete_snapshot(cls, snapshot_id: str, api_key: Optional[str] = None, base_url: Optional[str] = None,
                        request_timeout: Optional[float] = None) -> bool:
        """Deletes a snapshot of this key; False if there was none."""
        try:
            Connection(api_key, base_url, request_timeout).call("DELETE", _snapshot_path(snapshot_id), ok=(204,))
        except NotFoundException:
            return False
        return True

    @_either
    def fork(self: S, count: int = 1) -> "List[Union[S, SandboxException]]":
        """Starts ``count`` (1..8) new sandboxes from a capture of this one:
        each has its files and variables (its ``restore`` says which), its
        language, limits, network, idle timeout and metadata, and goes its
        own way; this one goes on. Each fork succeeds or fails on its own:
        the list holds one entry per fork, a Sandbox or the
        SandboxException it met."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidArgumentException("count must be at least 1")
        out = self._conn.call("POST", session_path(self.sandbox_id, "fork"), json_body={"count": count}, ok=(201,))
        forks: List[Union[S, SandboxException]] = []
        for f in (out or {}).get("forks") or []:
            sess = f.get("session") if isinstance(f, dict) else None
            if isinstance(sess, dict) and sess.get("id"):
                forks.append(self._forked(sess))
                continue
            err = f.get("error") if isinstance(f, dict) and isinstance(f.get("error"), dict) else {}
            forks.append(from_code(str(err.get("code") or ""), str(err.get("message") or "the fork failed")))
        return forks

    def _forked(self: S, info: Dict[str, Any]) -> S:
        """A fork's Sandbox, from its session's description."""
        return type(self)(api_key=self._conn.api_key, base_url=self._conn.base_url, request_timeout=self._conn.request_timeout,
                          _attach=info)

    def ports(self) -> List[Port]:
        """The TCP ports the sandbox's processes listen on, lowest first."""
        out = self._conn.call("GET", session_path(self.sandbox_id, "ports"))
        return [Port(port=int(p["port"]), address=str(p["address"])) for p in out.get("ports") or []]

    def preview(self, port: int, expires: Optional[float] = None) -> Preview:
        """The preview of a server the sandbox runs on ``port``: ``url``
        opens it in a browser (for ``expires`` seconds, default an hour, at
        most a day, or until the sandbox ends). The gateway must serve
        previews (``--preview-listen``)."""
        body: Dict[str, Any] = {"port": int(port)}
        if expires is not None:
            body["expires_s"] = float(expires)
        out = self._conn.call("POST", session_path(self.sandbox_id, "previews"), json_body=body)
        return Preview(port=int(out["port"]), host=str(out["host"]), url=str(out["url"]), token=str(out["token"]),
                       expires_at=parse_time(out["expires_at"]))

    def get_host(self, port: int) -> str:
        """The host name of the preview of ``port`` (E2B's): it works as it
        is, ``http(s)://`` + host, until the sandbox ends."""
        port = int(port)
        if not 0 < port < 65536:
            raise InvalidArgumentException("port must be within 1..65535")
        host = (self._info or {}).get("preview_host") if isinstance(self._info, dict) else None
        if not host:
            self._info = self._conn.call("GET", session_path(self.sandbox_id))
            host = self._info.get("preview_host")
        if not host:
            raise SandboxException("this gateway serves no previews (start it with --preview-listen)")
        return "%d-%s" % (port, host)

    def interrupt(self, context: Optional[Union[Context, str]] = None) -> None:
        """Interrupts the running code (Python raises KeyboardInterrupt): of
        every context, or of ``context`` only."""
        query = {"context": _context_id(context)} if context is not None else None
        self._conn.call("POST", session_path(self.sandbox_id, "interrupt"), query=query, ok=(204,))

    def restart(self) -> None:
        """Restarts the first context's kernel: same session, its variables
        gone, files kept (``restart_code_context`` restarts another)."""
        self._conn.call("POST", session_path(self.sandbox_id, "restart"), ok=(204,))

    def create_code_context(self, cwd: Optional[str] = None, language: Optional[str] = None,
                            request_timeout: Optional[float] = None) -> Context:
        """Starts a new context: another kernel in this sandbox with its own
        variables, sharing the sandbox's files. Run code in it with
        ``run_code(code, context=ctx)``.

        :param cwd: the kernel's working directory: /home/user (the default),
            or a directory under it (absolute, or relative to it), made if
            it does not exist
        :param language: python (the default), r, javascript (js),
            typescript (ts) or bash
        """
        body: Dict[str, Any] = {"language": language or "python"}
        if cwd:
            body["cwd"] = cwd
        kw: Dict[str, Any] = {} if request_timeout is None else {"timeout": request_timeout}
        out = self._conn.call("POST", session_path(self.sandbox_id, "contexts"), json_body=body, ok=(201,), **kw)
        return Context.from_json(out)

    def list_code_contexts(self) -> List[Context]:
        """The sandbox's contexts, its first (id ``"default"``) first."""
        out = self._conn.call("GET", session_path(self.sandbox_id, "contexts"))
        return [Context.from_json(c) for c in out.get("contexts") or []]

    def remove_code_context(self, context: Union[Context, str]) -> None:
        """Stops a context's kernel; the others keep running. The first
        context cannot be removed (kill the sandbox instead)."""
        self._conn.call("DELETE", session_path(self.sandbox_id, "contexts", _quoted(context)), ok=(204,))

    def restart_code_context(self, context: Union[Context, str]) -> None:
        """Restarts a context's kernel: its variables are gone, the other
        contexts keep theirs."""
        self._conn.call("POST", session_path(self.sandbox_id, "contexts", _quoted(context), "restart"), ok=(204,))

    def run_code(self, code: str, language: Optional[str] = None, context: Optional[Union[Context, str]] = None,
                 on_stdout: Optional[OutputHandler[OutputMessage]] = None,
                 on_stderr: Optional[OutputHandler[OutputMessage]] = None,
                 on_result: Optional[OutputHandler[Result]] = None,
                 on_error: Optional[OutputHandler[ExecutionError]] = None,
                 timeout: Optional[float] = None, request_timeout: Optional[float] = None,
                 envs: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
                 user_expressions: Optional[Mapping[str, str]] = None) -> Execution:
        """Runs code in one of the sandbox's kernels; variables persist
        between calls.

        ``context`` (a Context or its id) runs it in that context;
        ``language`` (python, r, javascript or js, typescript or ts, bash)
        in that language's default context, started on its first use;
        neither, in the first context (Python unless the sandbox was created
        with another language). Given both, they must agree.

        With callbacks, output streams over a WebSocket and each callback is
        called as output arrives; without, one REST call returns it all.
        Code that raises is not an exception here: ``execution.error`` is
        set. An execution that runs past ``timeout`` seconds (default: the
        gateway's) is interrupted and raises TimeoutException, whose
        ``execution`` holds the output so far. ``input()`` reads an empty
        line over the WebSocket and fails over REST.

        :param request_timeout: seconds the SDK waits for the gateway without
            hearing from it (default: no limit for REST, 300 s for the WebSocket)
        :param envs: environment variables for this execution only: the code
            and the processes it starts see them, the next execution does not
            (earlier values come back, new names go). Reserved names (PATH,
            HOME, LD_*, PYTHON*, ...) raise InvalidArgumentException.
        :param cwd: working directory for this execution only: a directory of
            the workspace (relative to /home/user, or absolute under it) that
            exists; else ``execution.error`` is a SettingsError and the code
            does not run. The next execution is back in the previous directory.
        :param user_expressions: name -> expression, evaluated by the kernel
            after the code (Jupyter's user_expressions; at most 32, a name of
            1..256 bytes, an expression of at most 4 KiB, else
            InvalidArgumentException): ``execution.user_expressions`` has
            each one's UserExpression (its value's MIME bundle, or the error
            it raised). The Python kernel evaluates none after code that
            raised (``user_expressions`` is then empty).
        """
        where: Dict[str, Any] = {}
        if language:
            where["language"] = language
        if context is not None:
            where["context"] = _context_id(context)
        if envs:
            where["envs"] = dict(envs)
        if cwd:
            where["cwd"] = cwd
        if user_expressions:
            if not isinstance(user_expressions, abc.Mapping) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in user_expressions.items()):
                raise InvalidArgumentException("user_expressions must map names (str) to expressions (str)")
            where["user_expressions"] = dict(user_expressions)
        if timeout is not None and timeout <= 0:
            timeout = None
        if on_stdout or on_stderr or on_result or on_error:
            x = self._run_ws(code, where, on_stdout, on_stderr, on_result, on_error, timeout, request_timeout)
        else:
            x = self._run_rest(code, where, timeout, request_timeout)
        if x.status == "timeout":
            raise TimeoutException(f"execution ran past its timeout and was interrupted ({x.reason or 'timeout'})",
                                   code="timeout", execution=x)
        if x.error is None and x.status == "died":
            x.error = ExecutionError("DeadKernelError", x.reason or "the kernel died", "")
        elif x.error is None and x.status == "interrupted":
            x.error = ExecutionError("KeyboardInterrupt", x.reason or "interrupted", "")
        return x

    def _hibernated(self) -> bool:
        try:
            info = self._conn.call("GET", session_path(self.sandbox_id))
        except SandboxException:
            return False
        return isinstance(info, dict) and bool(info.get("hibernated"))

    def _run_rest(self, code: str, where: Dict[str, Any], timeout: Optional[float], request_timeout: Optional[float]) -> Execution:
        body: Dict[str, Any] = {"code": code, **where}
        if timeout is not None:
            body["timeout_s"] = timeout
        out = self._conn.call("POST", session_path(self.sandbox_id, "execute"), json_body=body, timeout=request_timeout)
        x = Execution(execution_count=out.get("execution_count"))
        for ev in out.get("outputs") or []:
            _apply(x, ev)
        _finish(x, out)
        return x

    def _run_ws(self, code: str, where: Dict[str, Any], on_stdout: Optional[OutputHandler[OutputMessage]],
                on_stderr: Optional[OutputHandler[OutputMessage]], on_result: Optional[OutputHandler[Result]],
                on_error: Optional[OutputHandler[ExecutionError]], timeout: Optional[float],
                request_timeout: Optional[float]) -> Execution:
        try:
            import websocket  # Debian: python3-websocket; PyPI: websocket-client
        except ImportError as e:
            raise SandboxException("streaming callbacks need websocket-client (apt-get install python3-websocket)") from e
        eid = "py-" + uuid.uuid4().hex
        url = self._conn.ws_url + session_path(self.sandbox_id, "ws")
        try:
            ws = websocket.create_connection(url, header=["Authorization: Bearer " + self._conn.api_key],
                                             timeout=request_timeout or 300, suppress_origin=True)
        except websocket.WebSocketBadStatusException as e:
            err = _ws_refused(e)
            if err.status == 409 and not err.code and self._hibernated():  # websocket-client < 1.4 keeps no body
                err = from_status(409, "session_hibernated", "the session is hibernated (its sandbox freed, its state in a "
                                  "snapshot): resume() wakes it")
            raise err from None
        except (OSError, websocket.WebSocketException) as e:
            raise SandboxException(f"could not open a WebSocket to {self._conn.base_url}: {e}") from e
        x = Execution()
        ran_in = where.get("context", "default")  # the context that runs it, from its events
        try:
            frame: Dict[str, Any] = {"type": "execute", "id": eid, "code": code, **where}
            if timeout is not None:
                frame["timeout_s"] = timeout
            ws.send(json.dumps(frame))
            while True:
                try:
                    raw = ws.recv()
                except KeyboardInterrupt:
                    ws.send(json.dumps({"type": "interrupt", "context": ran_in}))
                    raise
                except websocket.WebSocketTimeoutException as e:
                    raise TimeoutException(f"no word from the gateway for {request_timeout or 300} s") from e
                except (OSError, websocket.WebSocketException) as e:
                    raise SandboxException(f"the WebSocket to the gateway closed: {e}") from e
                if not raw:
                    raise SandboxException("the gateway closed the WebSocket (the session may have ended)")
                ev = json.loads(raw)
                if not isinstance(ev, dict) or ev.get("id") != eid:
                    continue
                if ev.get("context"):
                    ran_in = str(ev["context"])
                kind = ev.get("type")
                if kind == "rejected":
                    code = str(ev.get("code", ""))
                    cls = InvalidArgumentException if code in ("bad_request", "bad_path") else SandboxException
                    raise cls(f"rejected: {code}: {ev.get('message')}", 0, code)
                if kind == "input_request":
                    ws.send(json.dumps({"type": "input_reply", "id": eid, "value": ""}))
                    continue
                if kind == "file":  # REST answers list them in "files"; the WebSocket only as events
                    x.files.append(FileChange(str(ev.get("path", "")), int(ev.get("size") or 0), str(ev.get("change", ""))))
                    continue
                if kind == "done":
                    x.execution_count = ev.get("execution_count")
                    _finish(x, ev)
                    return x
                item = _apply(x, ev)
                if kind == "stream":
                    handler = on_stderr if ev.get("name") == "stderr" else on_stdout
                    if handler:
                        handler(OutputMessage(str(ev.get("text", "")), time.time_ns(), ev.get("name") == "stderr"))
                elif isinstance(item, Result) and on_result:
                    on_result(item)
                elif isinstance(item, ExecutionError) and on_error:
                    on_error(item)
        finally:
            ws.close()


def _context_id(context: Union[Context, str]) -> str:
    cid = context.id if isinstance(context, Context) else context
    if not isinstance(cid, str) or not cid:
        raise InvalidArgumentException("context must be a Context or a context id")
    return cid


def _quoted(context: Union[Context, str]) -> str:
    return urllib.parse.quote(_context_id(context), safe="")


def _apply(x: Execution, ev: Dict[str, Any]) -> Any:
    """Adds one output event to x; returns the Result or error it made."""
    kind = ev.get("type")
    if kind == "stream":
        (x.logs.stderr if ev.get("name") == "stderr" else x.logs.stdout).append(str(ev.get("text", "")))
    elif kind in ("display", "result"):
        r = Result(ev.get("data") or {}, is_main_result=kind == "result")
        x.results.append(r)
        return r
    elif kind == "error":
        tb = ev.get("traceback") or []
        x.error = ExecutionError(str(ev.get("name", "")), str(ev.get("value", "")), "\n".join(str(t) for t in tb))
        return x.error
    elif kind == "page" and isinstance(ev.get("data"), dict):
        x.pages.append(page(ev["data"]))
    elif kind == "set_next_input":
        x.next_input = NextInput(str(ev.get("text") or ""), bool(ev.get("replace")))
    elif kind == "ask_exit":
        x.exit_requested = True
    return None


def _finish(x: Execution, out: Dict[str, Any]) -> None:
    x.status = str(out.get("status", "ok"))
    x.duration_ms = int(out.get("duration_ms") or 0)
    x.truncated = bool(out.get("truncated"))
    x.state_lost = bool(out.get("state_lost"))
    x.reason = str(out.get("reason") or "")
    x.user_expressions = user_expressions(out.get("user_expressions"))
    for f in out.get("files") or []:
        x.files.append(FileChange(str(f.get("path", "")), int(f.get("size") or 0), str(f.get("change", ""))))


def _ws_refused(e: Any) -> SandboxException:
    status = int(getattr(e, "status_code", 0) or 0)
    try:  # websocket-client >= 1.4 keeps the answer's body
        err = json.loads(getattr(e, "resp_body", None) or b"")["error"]
        return from_status(status, str(err.get("code", "")), str(err.get("message", "")))
    except (ValueError, KeyError, TypeError, AttributeError):
        return from_status(status, "", f"the gateway refused the WebSocket (HTTP {status})")


__all__ = ["Sandbox", "OutputHandler"]
