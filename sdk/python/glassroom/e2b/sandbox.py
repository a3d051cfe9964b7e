"""``glassroom.e2b.Sandbox``: E2B's code-interpreter ``Sandbox`` on a glassroom gateway."""

import functools
import json
import os
import posixpath
import re
import threading
from datetime import datetime, timezone
from typing import IO, Any, Callable, Dict, List, Optional, Type, TypeVar, Union
from urllib.parse import quote, urlencode

from .._http import Connection, session_path
from ..exceptions import (ConflictException, FileNotFoundException, InvalidArgumentException, NotFoundException,
                          SandboxException, SandboxNotFoundException, TimeoutException)
from ..files import Filesystem as _Filesystem
from ..files import FileStream, clean_path, sandbox_path
from ..models import Execution, ExecutionError, FileType, OutputMessage, parse_time
from ..models import Result as _GResult
from ..sandbox import Sandbox as _GSandbox
from .models import (WORKSPACE, Context, EntryInfo, FilesystemEvent, FilesystemEventType, OutputHandler, Result,
                     SandboxInfo, SandboxListOrder, SandboxMetrics, SandboxNetworkSelectorContext, SandboxQuery, SandboxState, SnapshotInfo,
                     WriteInfo,
                     format_execution_timeout_error, format_request_timeout_error, format_sandbox_killed_error,
                     sandbox_info)

S = TypeVar("S", bound="Sandbox")

DEFAULT_TEMPLATE = "code-interpreter-v1"
DEFAULT_SANDBOX_TIMEOUT = 300
DEFAULT_EXECUTION_TIMEOUT = 300
ALL_TRAFFIC = "0.0.0.0/0"
# A glassroom snapshot's id: E2B passes a snapshot to create as its template.
_SNAPSHOT_ID = re.compile(r"^snap-[0-9a-f]{24}$")


def connection(opts: Dict[str, Any]) -> Connection:
    """The gateway connection for E2B's ``**opts`` (api_key, request_timeout,
    api_url or base_url); the key falls back to GLASSROOM_API_KEY, then
    E2B_API_KEY; the URL to GLASSROOM_URL."""
    key = opts.get("api_key") or os.environ.get("GLASSROOM_API_KEY") or os.environ.get("E2B_API_KEY")
    url = opts.get("base_url") or opts.get("api_url")
    return Connection(key, url, opts.get("request_timeout"))


def _opts(conn: Connection, opts: Dict[str, Any]) -> Dict[str, Any]:
    """A connection's options, with ``opts`` on top."""
    out: Dict[str, Any] = {"api_key": conn.api_key, "base_url": conn.base_url, "request_timeout": conn.request_timeout}
    out.update({k: v for k, v in opts.items() if v is not None})
    return out


class class_or_instance:
    """A method callable on an instance (``sbx.kill()``) or on the class with
    the sandbox id first (``Sandbox.kill(sandbox_id, **opts)``), as in E2B."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __get__(self, obj: Any, objtype: Any = None) -> Callable[..., Any]:
        if obj is not None:
            return functools.partial(self.fn, obj)
        fn = self.fn

        def by_id(sandbox_id: str, *args: Any, **opts: Any) -> Any:
            conn_opts = {k: opts.pop(k) for k in ("api_key", "base_url", "api_url", "request_timeout", "domain", "debug",
                                                   "headers", "api_headers", "proxy", "sandbox_url", "logger",
                                                   "validate_api_key") if k in opts}
            return fn(objtype._bare(sandbox_id, connection(conn_opts)), *args, **opts)

        functools.update_wrapper(by_id, fn)
        return by_id


def _private_previews(network: Optional[Dict[str, Any]]) -> bool:
    """Whether E2B's network options close the sandbox's previews to the
    public (allow_public_traffic=False)."""
    return isinstance(network, dict) and network.get("allow_public_traffic") is False


def _network(allow_internet_access: bool, network: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The gateway's network request for E2B's options (None: the template's)."""
    if network is not None and not isinstance(network, dict):
        raise InvalidArgumentException("network must be a dict")
    net = dict(network or {})
    deny = net.pop("deny_out", None)
    allow = net.pop("allow_out", None)
    for k in ("allow_public_traffic", "mask_request_host"):
        net.pop(k, None)  # inbound: create's private_previews (_private_previews); the host is not masked
    if net:
        raise InvalidArgumentException(f"network options glassroom does not have: {', '.join(sorted(net))}")
    # E2B's selectors may be callables of a context (ctx.all_traffic, ctx.rules).
    selector_ctx = SandboxNetworkSelectorContext(all_traffic=ALL_TRAFFIC, rules={})
    allow = list(allow(selector_ctx)) if callable(allow) else allow
    deny = list(deny(selector_ctx)) if callable(deny) else deny
    if allow is not None and ALL_TRAFFIC in allow:
        raise InvalidArgumentException("glassroom networks are allowlists of host names and blocks: allow_out cannot be all "
                                       "traffic")
    denied = [str(d) for d in (deny or [])]
    only_allowed = ALL_TRAFFIC in denied  # E2B's "deny everything but allow_out"
    denied = [d for d in denied if d != ALL_TRAFFIC]
    if allow:
        out: Dict[str, Any] = {"allow": [str(a) for a in allow]}
    elif only_allowed or (allow is not None and not denied):
        return {"allow": []}
    elif denied:
        out = {"allow": ["*"]}  # every name but the denied ones, if the operator allows every name
    elif not allow_internet_access:
        return {"allow": []}
    else:
        return None
    if denied:
        out["deny"] = denied
    return out


class Filesystem:
    """E2B's ``sandbox.files`` with absolute /home/user paths (relative ones
    are relative to /home/user). The sandbox's other files are read-only
    (``read``, ``exists``, ``get_info``: /proc/sys/kernel/random/boot_id);
    writing or listing them raises InvalidArgumentException; ``user``
    must be None or "user"."""

    def __init__(self, conn: Connection, sandbox_id: str) -> None:
        self._conn = conn
        self._id = sandbox_id
        self._files = _Filesystem(conn, sandbox_id)

    def read(self, path: str, format: str = "text", user: Optional[str] = None, request_timeout: Optional[float] = None,
             gzip: bool = False, stream_idle_timeout: Optional[float] = None) -> Any:
        """Reads a file: ``format`` "text" (str), "bytes" (bytearray) or "stream" (an iterator of bytes chunks)."""
        _user(user)
        return self._files.read(path, format, request_timeout)  # type: ignore[call-overload]

    def write(self, path: str, data: Union[str, bytes, IO[Any]], user: Optional[str] = None,
              request_timeout: Optional[float] = None, gzip: bool = False, use_octet_stream: Optional[bool] = None,
              metadata: Optional[Dict[str, str]] = None) -> WriteInfo:
        """Writes a file (parents made, an existing one replaced), with
        ``metadata`` kept beside it (a file written without it has none)."""
        _user(user)
        w = self._files.write(path, data, request_timeout, metadata)
        return WriteInfo(name=w.name, type=FileType.FILE, path=_abs(w.path), metadata=w.metadata)

    def write_files(self, files: List[Dict[str, Any]], user: Optional[str] = None, request_timeout: Optional[float] = None,
                    gzip: bool = False, use_octet_stream: Optional[bool] = None,
                    metadata: Optional[Dict[str, str]] = None) -> List[WriteInfo]:
        """Writes several files: each ``{"path": ..., "data": ...}`` (or a
        WriteEntry), every one with ``metadata``."""
        def field(f: Any, name: str) -> Any:
            return f[name] if isinstance(f, dict) else getattr(f, name)
        return [self.write(field(f, "path"), field(f, "data"), user, request_timeout, metadata=metadata) for f in files]

    def list(self, path: str, depth: Optional[int] = 1, user: Optional[str] = None,
             request_timeout: Optional[float] = None) -> List[EntryInfo]:
        """The entries of a directory, down to ``depth`` levels."""
        _user(user)
        if depth is not None and depth < 1:
            raise InvalidArgumentException("depth should be at least 1")
        return [_entry(e) for e in self._files.list(path, depth or 1)]

    def exists(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> bool:
        _user(user)
        return self._files.exists(path)

    def get_info(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> EntryInfo:
        _user(user)
        p = "" if sandbox_path(path) is not None else clean_path(path)
        if sandbox_path(path) is None and not p:
            return EntryInfo(name="user", type=FileType.DIR, path=WORKSPACE, mode=0o755, permissions="drwxr-xr-x")
        try:
            return _entry(self._files.get_info(sandbox_path(path) or p))
        except FileNotFoundException:
            raise
        except NotFoundException as e:  # E2B's: a missing path is FileNotFoundException
            raise FileNotFoundException(f"path '{path}' does not exist", e.status, e.code) from None

    def remove(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> None:
        """Removes a file or a directory tree; a missing path is no error (as in E2B)."""
        _user(user)
        try:
            self._files.remove(path)
        except NotFoundException as e:
            if e.code != "file_not_found":  # the sandbox is gone: that is an error
                raise

    def rename(self, old_path: str, new_path: str, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> EntryInfo:
        """Moves a file or directory; returns the new entry."""
        _user(user)
        kw: Dict[str, Any] = {} if request_timeout is None else {"timeout": request_timeout}
        out = self._conn.call("POST", session_path(self._id, "files-move"),
                              json_body={"from": clean_path(old_path), "to": clean_path(new_path)}, **kw)
        if isinstance(out, dict) and out.get("path"):
            return _entry_json(out)
        return self.get_info(new_path)

    def make_dir(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> bool:
        """Makes a directory and its parents; False if it existed."""
        _user(user)
        return self._files.make_dir(path)

    def watch_dir(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None,
                  recursive: bool = False, include_entry: bool = False, allow_network_mounts: bool = False) -> "WatchHandle":
        """Watches a directory; ``get_new_events()`` returns the changes since
        the last call. A files-API write shows as the file's create, chmod
        and write (it lands by a rename). With ``include_entry`` each event
        but remove and rename describes its path (best effort)."""
        _user(user)
        return WatchHandle(_open_watch(self._conn, self._id, path, recursive, request_timeout, include_entry))

    def edit(self, *args: Any, **kwargs: Any) -> Any:
        """glassroom's text editor tool (see glassroom.Filesystem.edit)."""
        return self._files.edit(*args, **kwargs)


def _open_watch(conn: Connection, sandbox_id: str, path: str, recursive: bool, request_timeout: Optional[float],
                include_entry: bool = False) -> Any:
    import urllib.parse

    import websocket  # Debian: python3-websocket
    p = clean_path(path)
    q = urllib.parse.urlencode({"path": p, "recursive": "true" if recursive else "false",
                                **({"entry": "true"} if include_entry else {})})
    url = conn.ws_url + session_path(sandbox_id, "files-watch") + "?" + q
    try:
        return websocket.create_connection(url, header=["Authorization: Bearer " + conn.api_key],
                                           timeout=request_timeout or conn.request_timeout, suppress_origin=True)
    except websocket.WebSocketBadStatusException as e:
        from ..exceptions import from_status
        status = int(getattr(e, "status_code", 0) or 0)
        body = getattr(e, "resp_body", b"") or b""
        msg = f"watching {path!r} was refused (HTTP {status})"
        if status == 404 and not body:  # websocket-client < 1.4 keeps no body: ask which is missing
            try:
                conn.call("GET", session_path(sandbox_id))
            except NotFoundException:
                raise SandboxNotFoundException(f"Sandbox {sandbox_id} not found", 404, "not_found") from None
            raise FileNotFoundException(f"path {path!r} not found", 404, "file_not_found") from None
        try:
            err = json.loads(body)["error"]
            return _raise(from_status(status, str(err.get("code", "")), str(err.get("message", msg))))
        except (ValueError, KeyError, TypeError):
            return _raise(from_status(status, "", msg))
    except (OSError, websocket.WebSocketException) as e:
        raise SandboxException(f"could not open a WebSocket to {conn.base_url}: {e}") from e


def _raise(e: Exception) -> Any:
    raise e


def _event(ev: Any) -> Optional[FilesystemEvent]:
    try:
        entry = ev.get("entry")
        return FilesystemEvent(name=str(ev.get("name", "")), type=FilesystemEventType(ev.get("type")),
                               entry=_entry_json(entry) if isinstance(entry, dict) else None)
    except (ValueError, TypeError, AttributeError):
        return None


# How long get_new_events waits for the gateway's answer to its sync.
_WATCH_SYNC_WAIT = 5.0


class WatchHandle:
    """A directory being watched (E2B's sync ``WatchHandle``): a thread
    reads the events as they come; ``get_new_events`` hands them out,
    after a sync with the gateway (a barrier: the events of what was
    written before the call are among them)."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self._lock = threading.Lock()
        self._events: List[FilesystemEvent] = []
        self._closed = False
        self._error: Optional[Exception] = None
        self._syncs: Dict[str, threading.Event] = {}
        self._next_sync = 0
        self._thread = threading.Thread(target=self._read, name="glassroom-watch", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        ws = self._ws
        ws.settimeout(None)
        while True:
            try:
                raw = ws.recv()
            except Exception as e:  # closed: by stop, or the sandbox went
                self._end(SandboxException(f"the watch ended: {e}"))
                return
            if not raw:
                self._end(None)
                return
            try:
                frame = json.loads(raw)
            except ValueError:
                continue
            if isinstance(frame, dict) and frame.get("type") == "synced":
                with self._lock:
                    done = self._syncs.pop(str(frame.get("id")), None)
                if done is not None:
                    done.set()
                continue
            ev = _event(frame)
            if ev is not None:
                with self._lock:
                    self._events.append(ev)

    def _end(self, error: Optional[Exception]) -> None:
        with self._lock:
            if not self._closed:
                self._error = error
                self._closed = True
            for done in self._syncs.values():
                done.set()

    def _sync(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._next_sync += 1
            sid = str(self._next_sync)
            done = self._syncs[sid] = threading.Event()
        try:
            self._ws.send(json.dumps({"type": "sync", "id": sid}))
            done.wait(_WATCH_SYNC_WAIT)
        except Exception:  # the watch ended: get_new_events says so
            pass
        finally:
            with self._lock:
                self._syncs.pop(sid, None)

    def get_new_events(self) -> List[FilesystemEvent]:
        """The events since the last call, those of every change made
        before it among them. Raises SandboxException once the watch has
        stopped."""
        self._sync()
        return self._take()

    def _take(self) -> List[FilesystemEvent]:
        """The events since the last call, without a sync."""
        with self._lock:
            if self._closed and not self._events:
                raise self._error or SandboxException("The watcher is already stopped")
            out, self._events = self._events, []
            return out

    def stop(self, request_timeout: Optional[float] = None) -> None:
        """Stops watching."""
        with self._lock:
            self._closed = True
            self._error = None
        try:
            self._ws.close(timeout=1)
        except Exception:
            pass


def _user(user: Optional[str]) -> None:
    if user not in (None, "user"):
        raise InvalidArgumentException(
            f"user={user!r}: a glassroom sandbox has no other user: commands and files are the sandbox's own "
            "unprivileged user's ('user', home /home/user), never root, so that code in it cannot act as root on "
            "the machine it runs on; leave user out")


def _lifecycle(lifecycle: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """E2B's ``lifecycle`` as the gateway takes it: ``{"on_timeout":
    "pause", "auto_resume": ..., "keep_memory": ...}``, or None to end the
    sandbox at its timeout. ``on_timeout`` is "kill", "pause" or
    ``{"action": ..., "keep_memory": ...}``. A pause keeps the memory (a
    frozen sandbox); ``keep_memory=False`` (E2B's filesystem-only pause)
    hibernates it: its files and variables go into a snapshot and its
    sandbox is freed until ``connect`` wakes it. As in E2B, that cannot
    go with ``auto_resume``."""
    if not lifecycle:
        return None
    if not isinstance(lifecycle, dict):
        raise InvalidArgumentException("lifecycle must be a dict")
    on = lifecycle.get("on_timeout") or "kill"
    keep_memory: Optional[bool] = None
    if isinstance(on, dict):
        keep_memory = on.get("keep_memory")
        on = on.get("action") or "kill"
    auto_resume = bool(lifecycle.get("auto_resume"))
    if on not in ("kill", "pause"):
        raise InvalidArgumentException(f"lifecycle on_timeout {on!r}: kill or pause")
    if on == "kill":
        if keep_memory is not None:
            raise InvalidArgumentException("keep_memory is not allowed when on_timeout action is kill")
        if auto_resume:
            raise InvalidArgumentException("auto_resume needs on_timeout pause")
        return None
    if keep_memory is False and auto_resume:  # E2B's rule and words
        raise InvalidArgumentException("auto_resume: True is not a valid value when keep_memory: False - a filesystem-only "
                                       "snapshot cannot be auto-resumed by traffic and must be resumed explicitly using "
                                       "Sandbox.connect().")
    out: Dict[str, Any] = {"on_timeout": "pause", "auto_resume": auto_resume}
    if keep_memory is not None:
        out["keep_memory"] = bool(keep_memory)
    return out


def _abs(rel: str) -> str:
    """A workspace path's absolute form (an absolute path, of the
    sandbox's own files, stays as it is)."""
    if rel.startswith("/"):
        return rel
    return WORKSPACE + ("/" + rel if rel else "")


def _permissions(t: Any, mode: int) -> str:
    """``ls -l``'s form of a type and permission bits: "drwxr-xr-x"."""
    first = {FileType.DIR: "d", FileType.SYMLINK: "l"}.get(t, "-")
    return first + "".join(ch if mode & (1 << (8 - i)) else "-" for i, ch in enumerate("rwxrwxrwx"))


def _entry(e: Any) -> EntryInfo:
    is_dir = e.type == FileType.DIR
    mode = getattr(e, "mode", 0) or (0o755 if is_dir else 0o644)
    # E2B's: a symlink is the type of what it points to, with its target.
    t = (getattr(e, "target_type", None) or e.type) if e.type == FileType.SYMLINK else e.type
    return EntryInfo(name=e.name, type=t, path=_abs(e.path), size=e.size, mode=mode,
                     permissions=_permissions(e.type, mode), modified_time=e.modified_time,
                     symlink_target=getattr(e, "symlink_target", None), metadata=getattr(e, "metadata", None))


def _entry_json(e: Dict[str, Any]) -> EntryInfo:
    from ..models import file_type
    rel = clean_path(str(e.get("path", "")))
    t = file_type(e.get("type") or "file")
    is_dir = t == FileType.DIR
    mode = (int(e.get("mode") or 0) & 0o7777) or (0o755 if is_dir else 0o644)
    shown = (file_type(e.get("target_type")) or t) if t == FileType.SYMLINK else t
    return EntryInfo(name=str(e.get("name") or posixpath.basename(rel)), type=shown, path=_abs(rel), size=int(e.get("size") or 0),
                     mode=mode, permissions=_permissions(t, mode), modified_time=parse_time(e.get("mtime")),
                     symlink_target=str(e["symlink_target"]) if e.get("symlink_target") else None,
                     metadata={str(k): str(v) for k, v in e["metadata"].items()} if isinstance(e.get("metadata"), dict) and e["metadata"]
                     else None)


class SandboxPaginator:
    """Pages of ``Sandbox.list``: ``while p.has_next: p.next_items()``.
    As E2B's, the newest sandboxes come first unless ``order="asc"``; the
    gateway filters and orders, so every page but the last is full."""

    def __init__(self, query: Optional[SandboxQuery] = None, limit: Optional[int] = None, next_token: Optional[str] = None,
                 order: Optional[SandboxListOrder] = None, **opts: Any) -> None:
        if order not in (None, "asc", "desc"):
            raise InvalidArgumentException(f"Invalid order {order!r}, expected 'asc' or 'desc'")
        self._opts = opts
        self.query = query
        self.limit = limit
        self.order = order
        self._next_token = next_token
        self._has_next = True

    @property
    def has_next(self) -> bool:
        return self._has_next

    @property
    def next_token(self) -> Optional[str]:
        return self._next_token

    def _query(self) -> List[Any]:
        q: List[Any] = [("order", self.order or "desc")]
        if self.query is not None:
            for k, v in (self.query.metadata or {}).items():
                q.append(("metadata." + str(k), str(v)))
            for s in self.query.state or []:
                q.append(("state", str(s.value if isinstance(s, SandboxState) else s)))
            if self.query.template:
                q.append(("template", str(self.query.template)))
            if self.query.started_after:
                q.append(("started_after", _rfc3339(self.query.started_after)))
        if self.limit:
            q.append(("limit", str(int(self.limit))))
        if self._next_token:
            q.append(("next_token", self._next_token))
        return q

    def next_items(self, **opts: Any) -> List[SandboxInfo]:
        """The next page of sandboxes."""
        if not self._has_next:
            raise SandboxException("No more items to fetch")
        import urllib.parse
        conn = connection({**self._opts, **opts})
        out = conn.call("GET", "/v1/sessions?" + urllib.parse.urlencode(self._query()))
        out = out if isinstance(out, dict) else {}
        self._next_token = out.get("next_token") or None
        self._has_next = bool(self._next_token)
        return [sandbox_info(s) for s in out.get("sessions") or [] if isinstance(s, dict)]


class SnapshotPaginator:
    """Pages of ``list_snapshots`` (E2B's ``SnapshotPaginator``): ``while
    p.has_next: p.next_items()``, newest first. ``name`` keeps the snapshots
    of that name (``create_snapshot(name=...)``), or of that id. The
    gateway answers every snapshot at once; the pages of ``limit`` are cut
    here, and ``next_token`` is where the next one starts."""

    def __init__(self, sandbox_id: Optional[str] = None, limit: Optional[int] = None, next_token: Optional[str] = None,
                 name: Optional[str] = None, **opts: Any) -> None:
        if limit is not None and limit < 1:
            raise InvalidArgumentException("limit must be at least 1")
        self._opts = opts
        self.sandbox_id = sandbox_id
        self.limit = limit
        self.name = name
        self._next_token = next_token
        self._has_next = True

    @property
    def has_next(self) -> bool:
        return self._has_next

    @property
    def next_token(self) -> Optional[str]:
        return self._next_token

    def next_items(self, **opts: Any) -> List[SnapshotInfo]:
        """The next page of snapshots."""
        if not self._has_next:
            raise SandboxException("No more items to fetch")
        conn = connection({**self._opts, **opts})
        out = conn.call("GET", "/v1/snapshots", query={"session_id": self.sandbox_id} if self.sandbox_id else None)
        items = [x for x in (out or {}).get("snapshots") or [] if isinstance(x, dict) and x.get("id")]
        if self.name:
            items = [x for x in items if self.name in (x["id"], x.get("name"))]
        if self._next_token:
            items = _after(items, self._next_token)
        page = items[:self.limit] if self.limit else items
        more = len(page) < len(items)
        self._next_token = "%s %s" % (page[-1].get("created_at", ""), page[-1]["id"]) if more else None
        self._has_next = more
        return [_snapshot_info(x) for x in page]


def _snapshot_info(x: Dict[str, Any]) -> SnapshotInfo:
    """E2B's view of a snapshot: its id, and its name when it has one."""
    return SnapshotInfo(snapshot_id=str(x["id"]), names=[str(x["name"])] if x.get("name") else [])


def _after(items: List[Dict[str, Any]], token: str) -> List[Dict[str, Any]]:
    """The snapshots (newest first) after a page's next_token: its last
    snapshot's creation time and id."""
    when, _, last = token.partition(" ")
    if not last:
        raise InvalidArgumentException(f"Invalid next_token {token!r}")
    for i, x in enumerate(items):
        if x["id"] == last:
            return items[i + 1:]
    t = parse_time(when)  # the page's last snapshot is gone: those older than it
    return [x for x in items if parse_time(x.get("created_at")) < t]


class _snapshot_lister:
    """E2B's ``list_snapshots``: on an instance, that sandbox's
    (``sbx.list_snapshots(limit=None, next_token=None, name=None)``); on
    the class, every one of the key's or of ``sandbox_id``'s
    (``Sandbox.list_snapshots(sandbox_id=None, ...)``)."""

    def __init__(self, paginator: Callable[..., Any]) -> None:
        self.paginator = paginator

    def __get__(self, obj: Any, objtype: Any = None) -> Callable[..., Any]:
        make = self.paginator
        if obj is not None:
            def of_this(limit: Optional[int] = None, next_token: Optional[str] = None, name: Optional[str] = None,
                        **opts: Any) -> Any:
                """The snapshots of this sandbox, a page at a time."""
                sbx = getattr(obj, "_sbx", obj)
                return make(sandbox_id=sbx.sandbox_id, limit=limit, next_token=next_token, name=name, **_opts(sbx._conn, opts))
            return of_this

        def of_every(sandbox_id: Optional[str] = None, limit: Optional[int] = None, next_token: Optional[str] = None,
                     name: Optional[str] = None, **opts: Any) -> Any:
            """The snapshots of this key (of ``sandbox_id`` when given), a page at a time."""
            return make(sandbox_id=sandbox_id, limit=limit, next_token=next_token, name=name, **opts)
        return of_every


# E2B's metrics collection interval: get_metrics' range is widened by it.
_METRICS_INTERVAL_S = 5


def _aware(t: datetime) -> datetime:
    """t with its time zone (a naive t is local time)."""
    return t if t.tzinfo else t.astimezone()


def _rfc3339(t: datetime) -> str:
    """t as the gateway reads times: RFC 3339 in UTC (a naive t is local)."""
    return _aware(t).astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


class Sandbox(_GSandbox):
    """E2B's code-interpreter ``Sandbox`` on a glassroom gateway.

    ``Sandbox.create(template, timeout=300, metadata=..., envs=...)`` starts
    one; the gateway is GLASSROOM_URL (or ``api_url=``), the key
    ``api_key=``, GLASSROOM_API_KEY or E2B_API_KEY.
    """

    default_template = DEFAULT_TEMPLATE
    #: What E2B code reads of its envd: glassroom has no envd.
    _envd_version: str = "glassroom"

    def __init__(self, template: Optional[str] = None, timeout: Optional[int] = None, **kwargs: Any) -> None:
        """Deprecated in E2B as here: use ``Sandbox.create()``, or
        ``Sandbox.connect(id)``. With ``sandbox_id`` it wraps that sandbox,
        as E2B's does, without a request (it neither starts one nor checks
        that one exists)."""
        attach = kwargs.pop("_attach", None)
        conn = kwargs.pop("_conn", None)
        sandbox_id = kwargs.pop("sandbox_id", None)
        if attach is None and sandbox_id is not None:
            conn = conn or connection(kwargs)
            attach = {"id": str(sandbox_id)}
        if attach is None:
            s = type(self).create(template, timeout, **kwargs)
            attach, conn = s._info, s._conn
        conn = conn or connection(kwargs)
        super().__init__(api_key=conn.api_key, base_url=conn.base_url, request_timeout=conn.request_timeout, _attach=attach)
        self.files = Filesystem(conn, self.sandbox_id)  # type: ignore[assignment]
        self._access_token: Optional[str] = attach.get("access_token") or None

    @property
    def _envd_access_token(self) -> Optional[str]:
        """The sandbox's access token (E2B's envd access token; None after
        ``secure=False``, or for a sandbox wrapped by id without a request):
        sent as the ``X-Access-Token`` header instead of the API key, it
        grants what runs inside this sandbox, nothing else, until it ends."""
        return self._access_token

    @property
    def traffic_access_token(self) -> Optional[str]:
        """The token of a sandbox created with private previews (E2B's
        ``network={"allow_public_traffic": False}``), None otherwise: in the
        ``e2b-traffic-access-token`` header, it opens ``get_host(port)`` of
        any port until the sandbox ends."""
        info = self._info if isinstance(self._info, dict) else {}
        return info.get("traffic_access_token") or None

    @classmethod
    def _bare(cls: Type[S], sandbox_id: str, conn: Connection) -> S:
        return cls(_attach={"id": sandbox_id}, _conn=conn)

    @classmethod
    def create(cls: Type[S], template: Optional[str] = None, timeout: Optional[int] = None,
               metadata: Optional[Dict[str, str]] = None, envs: Optional[Dict[str, str]] = None, secure: bool = True,
               allow_internet_access: bool = True, mcp: Optional[Dict[str, Any]] = None,
               network: Optional[Dict[str, Any]] = None, lifecycle: Optional[Dict[str, Any]] = None, **opts: Any) -> S:
        """Starts a sandbox from a template (default ``code-interpreter-v1``)
        that lives ``timeout`` seconds (default 300; ``set_timeout`` moves
        its end). ``metadata`` is stored and filterable in ``Sandbox.list``;
        ``envs`` are the kernels' and commands' environment; ``network``
        ``allow_out`` lists host patterns it may reach (within the gateway's
        ceiling); ``allow_internet_access=False`` or ``deny_out=['0.0.0.0/0']``
        take the network away. With ``secure`` (the default) the sandbox's
        access token is ``_envd_access_token``; the API key works either way.
        A snapshot's id as ``template`` (``Sandbox.create(snapshot.snapshot_id)``)
        starts the sandbox from that snapshot: its files and variables."""
        if mcp is not None:
            # E2B's words first, which its users match.
            raise InvalidArgumentException("Failed to start MCP gateway: a glassroom sandbox runs no MCP gateway inside "
                                           "(glassroom serves MCP itself: docs/mcp.md)")
        wire_lifecycle = _lifecycle(lifecycle)
        if opts.pop("iam", None):
            raise InvalidArgumentException("glassroom has no iam")
        mounts = opts.pop("volume_mounts", None)
        opts.pop("logger", None)
        conn = connection(opts)
        t = DEFAULT_SANDBOX_TIMEOUT if timeout is None else timeout
        if t <= 0:
            raise InvalidArgumentException("timeout must be positive")
        template = template or cls.default_template
        body: Dict[str, Any] = {"snapshot": template} if _SNAPSHOT_ID.match(template) else {"template": template}
        body.update({"lifetime_s": t, "idle_timeout_s": t})
        if metadata:
            body["metadata"] = {str(k): str(v) for k, v in metadata.items()}
        if envs:
            body["env"] = {str(k): str(v) for k, v in envs.items()}
        net = _network(allow_internet_access, network)
        if net is not None:
            body["network"] = net
        if mounts:  # E2B's {path: Volume or name}
            body["volumes"] = {str(getattr(v, "name", v)): str(p) for p, v in mounts.items()}
        if _private_previews(network):
            body["private_previews"] = True
        if wire_lifecycle:
            body["lifecycle"] = wire_lifecycle
        try:
            info = conn.call("POST", "/v1/sessions", json_body=body, ok=(201,))
        except InvalidArgumentException as e:
            # A gateway older than templates and lifetimes: the default
            # templates and the timeout as its idle timeout are what it has.
            if "unknown field" not in str(e) or metadata or body.get("template") not in ("default", DEFAULT_TEMPLATE):
                raise
            for k in ("template", "lifetime_s"):
                body.pop(k)
            info = conn.call("POST", "/v1/sessions", json_body=body, ok=(201,))
        sbx = cls(_attach=info, _conn=conn)
        if not secure:
            sbx._access_token = None
        return sbx

    @class_or_instance
    def connect(self: S, timeout: Optional[int] = None, **opts: Any) -> S:
        """Attaches to a sandbox (``Sandbox.connect(sandbox_id)``, or
        ``sbx.connect()``), resuming it if it is paused. With ``timeout``,
        its end moves to ``timeout`` seconds from now if that is later."""
        try:
            info = self._conn.call("GET", session_path(self.sandbox_id))
        except NotFoundException as e:
            raise SandboxNotFoundException(f"Sandbox {self.sandbox_id} not found", e.status, e.code) from None
        if info.get("paused") or info.get("hibernated"):  # frozen, or hibernated: resume wakes it
            info = self.resume()._info
        if timeout is not None:
            end = parse_time(info.get("end_at"))
            if end.timestamp() < datetime.now(timezone.utc).timestamp() + timeout:
                self.set_timeout(timeout)
        self._info = info
        self._access_token = info.get("access_token") or self._access_token
        return self

    @class_or_instance
    def resume(self: S, timeout: Optional[int] = None, **opts: Any) -> S:  # type: ignore[override]
        """Thaws a paused sandbox, or wakes a hibernated one (as older E2B
        SDKs did; ``connect`` does it too)."""
        self._info = self._conn.call("POST", session_path(self.sandbox_id, "resume"))
        if timeout is not None:
            self.set_timeout(timeout)
        return self

    def download_url(self, path: str, user: Optional[str] = None,
                     use_signature_expiration: Optional[int] = None) -> str:
        """A signed URL that downloads ``path`` without the API key (E2B's):
        it expires after ``use_signature_expiration`` seconds (default an
        hour, at most a day) or with the sandbox."""
        _user(user)
        return self.files._files.url(clean_path(path), "read", use_signature_expiration)  # type: ignore[attr-defined]

    def upload_url(self, path: Optional[str] = None, user: Optional[str] = None,
                   use_signature_expiration: Optional[int] = None) -> str:
        """A signed URL that uploads ``path`` without the API key (E2B's): a
        multipart form's "file" part by POST, or the body by PUT."""
        _user(user)
        if not path:
            raise InvalidArgumentException("glassroom's upload URLs name their file: pass path")
        return self.files._files.url(clean_path(path), "write", use_signature_expiration)  # type: ignore[attr-defined]

    @class_or_instance
    def update_network(self, network: Dict[str, Any], **opts: Any) -> None:
        """Replaces the sandbox's network rules while it runs (E2B's):
        ``{"allow_out": [...], "deny_out": [...]}``. New connections follow
        them at once and open ones they refuse are closed. A sandbox
        created without a network has none to change (ConflictException).
        Whether its previews are private is set at creation only."""
        if isinstance(network, dict) and "allow_public_traffic" in network:
            raise InvalidArgumentException("allow_public_traffic is set when the sandbox is created (glassroom's previews "
                                           "are private or not for a sandbox's whole life)")
        rules = _network(True, network) or {"allow": ["*"]}
        self._conn.call("PATCH", session_path(self.sandbox_id), json_body={"network": rules})

    @class_or_instance
    def kill(self, **opts: Any) -> bool:  # type: ignore[override]
        """Kills the sandbox; False if it was not found."""
        self.commands._close()
        try:
            self._conn.call("DELETE", session_path(self.sandbox_id), ok=(204,))
            return True
        except NotFoundException:
            return False

    @class_or_instance
    def set_timeout(self, timeout: int, **opts: Any) -> None:  # type: ignore[override]
        """The sandbox now ends ``timeout`` seconds from now (capped by the
        gateway's maximum lifetime); 0 is now: it ends, or pauses when its
        ``lifecycle`` says so."""
        if timeout < 0:
            raise InvalidArgumentException("timeout must not be negative")
        body: Dict[str, Any] = {"lifetime_s": timeout}
        if timeout > 0:
            body["idle_timeout_s"] = min(timeout, 86400)
        self._info = self._conn.call("PATCH", session_path(self.sandbox_id), json_body=body)

    @class_or_instance
    def get_info(self, **opts: Any) -> SandboxInfo:  # type: ignore[override]
        try:
            self._info = self._conn.call("GET", session_path(self.sandbox_id))
        except NotFoundException as e:
            raise SandboxNotFoundException(f"Sandbox {self.sandbox_id} not found", e.status, e.code) from None
        return sandbox_info(self._info)

    @class_or_instance
    def get_metrics(self, start: Optional[datetime] = None, end: Optional[datetime] = None, **opts: Any) -> List[SandboxMetrics]:
        """The sandbox's CPU, memory and disk use over time: the gateway
        samples it every 5 s (E2B's collection interval) and keeps the last
        ten minutes; the list holds the samples within ``start``..``end``
        (each widened by 5 s, as E2B's buckets are), oldest first, ending
        with a sample of now when the range reaches now."""
        q = {}
        if start is not None:
            q["start"] = _rfc3339(datetime.fromtimestamp(_aware(start).timestamp() - _METRICS_INTERVAL_S, timezone.utc))
        if end is not None:
            q["end"] = _rfc3339(datetime.fromtimestamp(_aware(end).timestamp() + _METRICS_INTERVAL_S, timezone.utc))
        path = session_path(self.sandbox_id, "metrics/history") + ("?" + urlencode(q) if q else "")
        h = self._conn.call("GET", path)
        samples = h.get("samples") if isinstance(h, dict) else None

        def metrics(m: Dict[str, Any]) -> SandboxMetrics:
            def n(k: str) -> int:
                v = m.get(k)
                return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0
            pct = m.get("cpu_used_pct")
            ts = parse_time(m["timestamp"]) if isinstance(m.get("timestamp"), str) else datetime.now(timezone.utc)
            return SandboxMetrics(cpu_count=n("cpu_count"), cpu_used_pct=float(pct) if isinstance(pct, (int, float)) and not isinstance(pct, bool) else 0.0,
                                  disk_total=n("disk_total"), disk_used=n("disk_used"), mem_total=n("mem_total"),
                                  mem_used=n("mem_used"), mem_cache=n("mem_cache"), timestamp=ts)
        return [metrics(m) for m in samples or [] if isinstance(m, dict)]

    @class_or_instance
    def pause(self, keep_memory: bool = True, **opts: Any) -> bool:  # type: ignore[override]
        """Pauses the sandbox until ``connect``/``resume``: it is frozen,
        its memory kept, or with ``keep_memory=False`` (E2B's
        filesystem-only pause) hibernated: its files and its kernels'
        variables go into a snapshot and its sandbox is freed; resuming
        starts a new sandbox under its id with them restored (running
        commands and open connections are gone). Meanwhile ``run_code``
        and the rest raise ConflictException (code ``session_hibernated``
        once hibernated). False if it was paused (hibernated) already."""
        before = self._conn.call("GET", session_path(self.sandbox_id))
        before = before if isinstance(before, dict) else {}
        self._info = self._conn.call("POST", session_path(self.sandbox_id, "pause"),
                                     json_body=None if keep_memory else {"keep_memory": False})
        return not (before.get("paused") if keep_memory else before.get("hibernated"))

    beta_pause = pause

    def is_running(self, request_timeout: Optional[float] = None) -> bool:
        """Whether the sandbox runs: False once killed or expired, while a
        client holds it paused (``pause``; the idle freeze is transparent)
        and while it is hibernated."""
        try:
            info = self._conn.call("GET", session_path(self.sandbox_id), timeout=request_timeout or self._conn.request_timeout)
        except NotFoundException:
            return False
        return not (isinstance(info, dict) and (info.get("paused_by_client") or info.get("hibernated")))

    @class_or_instance
    def create_snapshot(self, name: Optional[str] = None, **opts: Any) -> SnapshotInfo:  # type: ignore[override]
        """Captures the sandbox (E2B's ``create_snapshot``): its files and
        its kernels' variables; it goes on running. The snapshot outlives
        it until ``delete_snapshot``; ``Sandbox.create(snapshot_id)`` starts
        a sandbox from it. ``name`` (1 to 128 of A-Z a-z 0-9 . _ -) labels
        it: ``names`` holds it, and ``list_snapshots(name=...)`` finds it."""
        try:
            out = self._conn.call("POST", session_path(self.sandbox_id, "snapshots"), json_body={"name": name} if name else {}, ok=(201,))
        except NotFoundException as e:
            if e.code != "not_found":
                raise
            raise SandboxNotFoundException(f"Sandbox {self.sandbox_id} not found", e.status, e.code) from None
        return _snapshot_info(out)

    list_snapshots = _snapshot_lister(SnapshotPaginator)

    @classmethod
    def delete_snapshot(cls, snapshot_id: str, **opts: Any) -> bool:  # type: ignore[override]
        """Deletes a snapshot (E2B's): True if it was deleted, False if it was not found."""
        try:
            connection(opts).call("DELETE", "/v1/snapshots/" + quote(str(snapshot_id), safe=""), ok=(204,))
        except NotFoundException:
            return False
        return True

    @class_or_instance
    def fork(self: S, timeout: Optional[int] = None, count: Optional[int] = None,  # type: ignore[override]
             **opts: Any) -> List[Union[S, Exception]]:
        """Forks the sandbox (E2B's ``fork``): ``count`` (default 1, at most
        8) new sandboxes start from one capture of this one, with its files
        and variables; this one goes on. Each lives ``timeout`` seconds
        (default 300). Each fork succeeds or fails on its own: the list has
        one entry per fork, a Sandbox or the exception it met."""
        n = 1 if count is None else count
        if n < 1:
            raise InvalidArgumentException("count must be at least 1")
        t = DEFAULT_SANDBOX_TIMEOUT if timeout is None else timeout
        if t <= 0:
            raise InvalidArgumentException("timeout must be positive")
        out: List[Union[S, Exception]] = []
        for f in super().fork(n):
            if isinstance(f, Sandbox):
                try:
                    f.set_timeout(t)
                except SandboxException as e:
                    f.kill()
                    out.append(e)
                    continue
            out.append(f)
        return out

    def _forked(self: S, info: Dict[str, Any]) -> S:
        return type(self)(_attach=info, _conn=self._conn)

    @classmethod
    def list(cls, query: Optional[SandboxQuery] = None, limit: Optional[int] = None, next_token: Optional[str] = None,  # type: ignore[override]
             order: Optional[SandboxListOrder] = None, **opts: Any) -> SandboxPaginator:
        """The sandboxes of this key, a page at a time."""
        return SandboxPaginator(query=query, limit=limit, next_token=next_token, order=order, **opts)

    def create_code_context(self, cwd: Optional[str] = None, language: Optional[str] = None,  # type: ignore[override]
                            request_timeout: Optional[float] = None) -> Context:
        c = super().create_code_context(cwd, language, request_timeout)
        return Context(context_id=c.id, language="python" if c.language == "python3" else c.language, cwd=c.cwd)

    def list_code_contexts(self) -> List[Context]:  # type: ignore[override]
        """The sandbox's contexts. As E2B's, the list has a Python and a
        JavaScript context from the start: glassroom starts a language's
        default context on its first use, so until then the JavaScript one
        is listed with the id ``"javascript"`` (PENDING_DEFAULTS), which
        ``run_code``, ``restart_code_context`` and ``remove_code_context``
        take for that language's default context."""
        out = self._conn.call("GET", session_path(self.sandbox_id, "contexts"))
        raw = [c for c in (out or {}).get("contexts") or [] if isinstance(c, dict)]
        ctxs = [Context.from_json(c) for c in raw]
        started = {c.get("language") for c in raw if c.get("default")}
        pending = [Context(context_id=lang, language=lang, cwd=WORKSPACE) for lang in PENDING_DEFAULTS if lang not in started]
        return ctxs[:1] + pending + ctxs[1:]

    def _default_context_id(self, language: str) -> Optional[str]:
        out = self._conn.call("GET", session_path(self.sandbox_id, "contexts"))
        for c in (out or {}).get("contexts") or []:
            if isinstance(c, dict) and c.get("default") and c.get("language") == language:
                return str(c.get("id"))
        return None

    def restart_code_context(self, context: Union[Context, str]) -> None:  # type: ignore[override]
        cid = getattr(context, "id", context)
        if cid in PENDING_DEFAULTS:
            cid = self._default_context_id(str(cid))
            if cid is None:
                return  # not started: nothing to restart
        super().restart_code_context(cid)

    def remove_code_context(self, context: Union[Context, str]) -> None:  # type: ignore[override]
        cid = getattr(context, "id", context)
        if cid in PENDING_DEFAULTS:
            cid = self._default_context_id(str(cid))
            if cid is None:
                return  # not started: nothing to remove
        super().remove_code_context(cid)

    def run_code(self, code: str, language: Optional[str] = None, context: Optional[Context] = None,  # type: ignore[override]
                 on_stdout: Optional[OutputHandler[OutputMessage]] = None,
                 on_stderr: Optional[OutputHandler[OutputMessage]] = None,
                 on_result: Optional[OutputHandler[Result]] = None,
                 on_error: Optional[OutputHandler[ExecutionError]] = None,
                 envs: Optional[Dict[str, str]] = None, timeout: Optional[float] = None,
                 request_timeout: Optional[float] = None) -> Execution:
        """Runs code (E2B's ``run_code``): in ``context``, or in
        ``language``'s default context (Python when neither). ``timeout``:
        seconds the execution may run (default 300, 0: no limit);
        ``request_timeout``: seconds to wait for the gateway to answer."""
        if language and context:
            raise InvalidArgumentException("You can provide context or language, but not both at the same time.")
        t = None if timeout == 0 else (timeout or DEFAULT_EXECUTION_TIMEOUT)
        converted: Dict[int, Result] = {}

        def e2b(r: _GResult) -> Result:
            c = converted.get(id(r))
            if c is None:
                c = converted[id(r)] = Result.from_glassroom(r)
            return c
        cb = None
        if on_result is not None:
            def cb(r: _GResult) -> Any:
                return on_result(e2b(r))
        try:
            cid = getattr(context, "id", context)
            if cid in PENDING_DEFAULTS:  # the language's default context, started on first use
                language, cid = str(cid), None
            x = _GSandbox.run_code(self, code, language=language, context=cid, on_stdout=on_stdout,
                                   on_stderr=on_stderr, on_result=cb, on_error=on_error, timeout=t,
                                   request_timeout=None if t is None else t + (request_timeout or 30),
                                   envs=envs)
        except TimeoutException as e:
            if e.execution is not None:
                err = format_execution_timeout_error()
                err.execution = e.execution
                raise err from None
            if not self.is_running():
                raise format_sandbox_killed_error() from None
            raise format_request_timeout_error() from e
        except (NotFoundException, ConflictException) as e:
            if e.code == "session_hibernated":  # not killed: resume or connect wakes it
                raise
            if not self.is_running():
                raise format_sandbox_killed_error() from e
            raise
        except SandboxException as e:
            if e.status == 0 and not self.is_running():
                raise format_sandbox_killed_error() from e
            raise
        if x.status in ("died", "cancelled", "canceled") and not self.is_running():
            raise format_sandbox_killed_error()
        x.results = [e2b(r) for r in x.results]
        return x

    def __repr__(self) -> str:
        return f"Sandbox(sandbox_id={self.sandbox_id!r})"


# The languages whose default context E2B's sandboxes list from the start
# (besides Python's, the first context): listed as pending until started.
PENDING_DEFAULTS = ("javascript",)

__all__ = ["Sandbox", "Filesystem", "WatchHandle", "SandboxPaginator", "SnapshotPaginator", "FileStream", "DEFAULT_TEMPLATE",
           "ALL_TRAFFIC"]
