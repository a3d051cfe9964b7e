"""Results of code execution, shaped like E2B's code-interpreter models."""

import base64
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Dict, Iterator, List, Optional, Union

# MIME types that have their own Result attribute, in E2B's order.
_FORMATS = [
    ("text", "text/plain"),
    ("html", "text/html"),
    ("markdown", "text/markdown"),
    ("svg", "image/svg+xml"),
    ("png", "image/png"),
    ("jpeg", "image/jpeg"),
    ("pdf", "application/pdf"),
    ("latex", "text/latex"),
    ("json", "application/json"),
    ("javascript", "application/javascript"),
    ("data", "application/vnd.dataresource+json"),
]


def _result_json(r: "Result") -> Dict[str, Any]:
    """A result as Execution.to_json writes it: its representations, and
    its chart (E2B's chart shape) when it has one."""
    out = {k: r[k] for k in r.formats() if k in dict(_FORMATS)}
    chart = getattr(r, "chart", None)
    if chart is not None:
        out["chart"] = chart.to_dict() if hasattr(chart, "to_dict") else chart
    return out


def _text(value: Any) -> Any:
    """Jupyter may send text as a list of lines."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return value


class Result:
    """One rich output of an execution: the value of the last expression
    (``is_main_result``) or a ``display()`` call (e.g. a matplotlib figure).

    Each representation is an attribute (None when absent): ``text``,
    ``html``, ``markdown``, ``svg``, ``png`` and ``jpeg`` (base64, as in
    Jupyter and E2B), ``pdf``, ``latex``, ``json``, ``javascript``, and
    ``data`` (pandas' table schema, application/vnd.dataresource+json).
    Other MIME types are in ``extra``; ``raw`` is the whole MIME bundle.
    As in E2B, ``text`` of a string value has its quotes removed.
    """

    text: Optional[str]
    html: Optional[str]
    markdown: Optional[str]
    svg: Optional[str]
    png: Optional[str]
    jpeg: Optional[str]
    pdf: Optional[str]
    latex: Optional[str]
    json: Optional[Any]
    javascript: Optional[str]
    data: Optional[Any]
    chart: Optional[Any]
    is_main_result: bool
    extra: Optional[Dict[str, Any]]
    raw: Dict[str, Any]

    def __init__(self, bundle: Optional[Dict[str, Any]] = None, is_main_result: bool = False) -> None:
        bundle = dict(bundle or {})
        self.raw = dict(bundle)
        for attr, mime in _FORMATS:
            setattr(self, attr, _text(bundle.pop(mime, None)))
        if isinstance(self.text, str) and len(self.text) >= 2 and self.text[0] == self.text[-1] and self.text[0] in "'\"":
            self.text = self.text[1:-1]
        self.chart = None  # E2B's chart extraction has no glassroom equivalent
        self.is_main_result = is_main_result
        self.extra = bundle or None

    def __getitem__(self, item: str) -> Any:
        return getattr(self, item)

    def formats(self) -> List[str]:
        """The representations this result has ("text", "png", ..., then extra MIME types)."""
        out = [attr for attr, _ in _FORMATS if getattr(self, attr)]
        if self.extra:
            out.extend(self.extra)
        return out

    def save_png(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the PNG representation to path (ValueError when there is none)."""
        self._save(self.png, path, "png")

    def save_jpeg(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the JPEG representation to path (ValueError when there is none)."""
        self._save(self.jpeg, path, "jpeg")

    def _save(self, b64: Optional[str], path: Union[str, "os.PathLike[str]"], kind: str) -> None:
        if not b64:
            raise ValueError(f"this result has no {kind} representation; it has {self.formats()}")
        with open(path, "wb") as f:
            f.write(base64.b64decode(b64))

    def __repr__(self) -> str:
        if self.text:
            return f"Result({self.text})"
        return "Result(Formats: " + ", ".join(self.formats()) + ")"

    __str__ = __repr__

    def _repr_html_(self) -> Optional[str]:
        return self.html

    def _repr_markdown_(self) -> Optional[str]:
        return self.markdown

    def _repr_svg_(self) -> Optional[str]:
        return self.svg

    def _repr_png_(self) -> Optional[str]:
        return self.png

    def _repr_jpeg_(self) -> Optional[str]:
        return self.jpeg

    def _repr_latex_(self) -> Optional[str]:
        return self.latex

    def _repr_json_(self) -> Optional[Any]:
        return self.json


@dataclass
class OutputMessage:
    """A chunk of stdout or stderr, as passed to on_stdout / on_stderr."""

    line: str
    timestamp: int
    """When the SDK received it, in Unix nanoseconds."""
    error: bool = False
    """True for stderr."""

    def __str__(self) -> str:
        return self.line


@dataclass
class ExecutionError:
    """The exception the code raised. ``traceback`` is one string (the
    kernel's traceback lines joined, with ANSI colour codes)."""

    name: str
    value: str
    traceback: str

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "value": self.value, "traceback": self.traceback})


@dataclass
class UserExpression:
    """The kernel's answer to one of ``run_code``'s ``user_expressions``,
    evaluated after the code (by the Python kernel only when the code
    succeeded).

    ``status`` is "ok" (``data`` is the value's MIME bundle, as the kernel
    sent it, with ``metadata``) or "error" (``error`` is the exception,
    ``data`` empty). ``text`` is the value's ``text/plain``: its repr, a
    string keeping its quotes.
    """

    status: str
    data: Dict[str, Any] = field(default_factory=dict)
    metadata: Dict[str, Any] = field(default_factory=dict)
    error: Optional[ExecutionError] = None

    @property
    def text(self) -> Optional[str]:
        """The value's text/plain representation, or None."""
        t = _text(self.data.get("text/plain"))
        return t if isinstance(t, str) else None

    @classmethod
    def from_json(cls, v: Dict[str, Any]) -> "UserExpression":
        """One entry of the gateway's ``user_expressions``."""
        status = str(v.get("status") or "")
        data = v.get("data") if isinstance(v.get("data"), dict) else {}
        metadata = v.get("metadata") if isinstance(v.get("metadata"), dict) else {}
        err = None
        if status != "ok":
            tb = v.get("traceback")
            err = ExecutionError(str(v.get("ename") or ""), str(v.get("evalue") or ""),
                                 "\n".join(str(t) for t in tb) if isinstance(tb, list) else str(tb or ""))
        return cls(status=status, data=dict(data), metadata=dict(metadata), error=err)


@dataclass
class NextInput:
    """What the code asked to put in the next cell (``%load file.py``,
    IPython's ``set_next_input``): ``text``, and ``replace`` (True: it
    replaces the current cell rather than following it)."""

    text: str
    replace: bool = False


@dataclass
class Logs:
    """What the code printed: lists of chunks as they arrived."""

    stdout: List[str] = field(default_factory=list)
    stderr: List[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({"stdout": self.stdout, "stderr": self.stderr})


@dataclass
class FileChange:
    """A workspace file the execution created, modified or deleted."""

    path: str
    size: int
    change: str


@dataclass
class Execution:
    """The outcome of ``run_code``.

    ``results`` are the rich outputs in order (the last expression's value
    has ``is_main_result``), ``logs`` what was printed, ``error`` the
    exception raised (None if none). glassroom adds ``status`` (ok, error,
    interrupted, died), ``duration_ms``, ``truncated`` (output was cut at
    the gateway's caps), ``state_lost`` (the variables did not survive),
    ``reason`` and ``files`` (workspace changes).

    What the code asked of its front end (an execute_reply's payloads):
    ``pages``, help to show (``obj?``, ``obj??``, ``%pdoc``) as Results
    (``text``: IPython's pager text, with ANSI colour codes; other MIME
    types when the kernel sends them); ``next_input``,
    the text ``%load`` put in the next cell (a NextInput, or None);
    ``exit_requested``, True when the code called ``exit()`` (the sandbox
    keeps running). ``user_expressions`` answers ``run_code``'s
    ``user_expressions``: name -> UserExpression (empty when none were
    asked; also empty when the answers were past the gateway's cap,
    256 KiB, and ``truncated`` is then set).
    """

    results: List[Result] = field(default_factory=list)
    logs: Logs = field(default_factory=Logs)
    error: Optional[ExecutionError] = None
    execution_count: Optional[int] = None
    status: str = "ok"
    duration_ms: int = 0
    truncated: bool = False
    state_lost: bool = False
    reason: str = ""
    files: List[FileChange] = field(default_factory=list)
    user_expressions: Dict[str, UserExpression] = field(default_factory=dict)
    pages: List[Result] = field(default_factory=list)
    next_input: Optional[NextInput] = None
    exit_requested: bool = False

    @property
    def text(self) -> Optional[str]:
        """The text of the main result (the last expression's value), or None."""
        for r in self.results:
            if r.is_main_result:
                return r.text
        return None

    def to_json(self) -> str:
        return json.dumps({
            "results": [_result_json(r) for r in self.results],
            "logs": {"stdout": self.logs.stdout, "stderr": self.logs.stderr},
            "error": json.loads(self.error.to_json()) if self.error else None,
        })

    def __repr__(self) -> str:
        return f"Execution(Results: {self.results}, Logs: {self.logs}, Error: {self.error})"


def user_expressions(value: Any) -> Dict[str, UserExpression]:
    """The gateway's ``user_expressions`` (entries that are not objects are left out)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): UserExpression.from_json(v) for k, v in value.items() if isinstance(v, dict)}


def page(bundle: Dict[str, Any]) -> Result:
    """A page's MIME bundle as a Result, its text as sent (quotes kept)."""
    r = Result(bundle)
    r.text = _text(r.raw.get("text/plain"))
    return r


class FileType(Enum):
    """The type of a workspace entry."""

    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"
    OTHER = "other"


@dataclass
class WriteInfo:
    """A file written by ``files.write``."""

    name: str
    type: Optional[FileType]
    path: str
    size: int = 0
    metadata: Optional[Dict[str, str]] = None
    """What it was written with (``files.write(..., metadata=)``)."""


@dataclass
class EntryInfo:
    """One workspace entry, from ``files.list`` or ``files.get_info``."""

    name: str
    type: Optional[FileType]
    path: str
    size: int
    modified_time: datetime
    mode: int = 0
    """Permission bits (0o644...); 0 from a gateway that does not say."""
    symlink_target: Optional[str] = None
    """A symlink's target: an absolute sandbox path when in the workspace."""
    target_type: Optional[FileType] = None
    """What a symlink points to, when that is in the workspace."""
    metadata: Optional[Dict[str, str]] = None
    """A file's metadata (``files.write(..., metadata=)``), None when it has none."""


@dataclass
class SandboxInfo:
    """A session as the gateway reports it (``get_info``)."""

    sandbox_id: str
    state: str
    runtime: str
    started_at: datetime
    end_at: datetime
    """When the session reaches its maximum lifetime."""
    idle_timeout_s: int
    queued: int
    limits: Dict[str, Any]
    paused: bool = False
    """The idle kernel is frozen; the next request thaws it."""
    language: str = "python3"
    """The language of the session's first context (its kernel's name)."""
    hibernated: bool = False
    """Hibernated (``pause(keep_memory=False)``): its sandbox is freed and
    its state is in a snapshot until ``resume`` (or, with the lifecycle's
    auto_resume, its next use) wakes it; ``state`` is "hibernated"."""


@dataclass
class Context:
    """A code context: one kernel of the sandbox, with its own language,
    working directory and variables (E2B's ``Context``). Every context of a
    sandbox shares its files and limits. The sandbox's first context has
    the id ``"default"``."""

    id: str
    language: str
    """The kernel's name: python3, r, javascript, typescript or bash."""
    cwd: str
    """The kernel's working directory, under /home/user."""
    state: str = "idle"
    default: bool = False
    """Code that names only this language (``run_code(language=...)``) runs here."""

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Context":
        return cls(id=str(data.get("id", "")), language=str(data.get("language", "")), cwd=str(data.get("cwd", "")),
                   state=str(data.get("state", "idle")), default=bool(data.get("default")))


@dataclass
class CommandResult:
    """The outcome of a shell command (``sandbox.commands.run``, ``handle.wait``).

    As in E2B: ``stdout``, ``stderr``, ``exit_code`` and ``error`` (why it
    failed, None when it exited 0). glassroom adds ``pid`` (the gateway's
    number of the command in its sandbox), ``truncated`` (output was cut at
    the gateway's caps), ``duration_ms`` and ``timed_out`` (it was killed at
    its timeout; ``exit_code`` is then -1).
    """

    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0
    error: Optional[str] = None
    pid: int = 0
    truncated: bool = False
    duration_ms: int = 0
    timed_out: bool = False


@dataclass
class ProcessInfo:
    """A command of the sandbox, as ``sandbox.commands.list()`` shows it.

    ``cmd`` is the command line given to ``bash -lc``; ``exit_code`` and
    ``duration_ms`` are set once it has ended (``running`` False).
    """

    pid: int
    cmd: str
    cwd: str = ""
    running: bool = True
    exit_code: Optional[int] = None
    started_at: Optional[datetime] = None
    duration_ms: Optional[int] = None


_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(value: Any) -> datetime:
    """Parses the gateway's RFC 3339 times (nanoseconds allowed)."""
    if not isinstance(value, str) or not value:
        return datetime.fromtimestamp(0, timezone.utc)
    s = _FRACTION.sub(r"\1", value.replace("Z", "+00:00"))
    try:
        return datetime.fromisoformat(s)
    except ValueError:
        return datetime.fromtimestamp(0, timezone.utc)


def file_type(value: Any) -> Optional[FileType]:
    try:
        return FileType(value)
    except ValueError:
        return None


def sandbox_info(s: Dict[str, Any]) -> SandboxInfo:
    return SandboxInfo(
        sandbox_id=str(s.get("id", "")), state=str(s.get("state", "")), runtime=str(s.get("runtime", "")),
        started_at=parse_time(s.get("created_at")), end_at=parse_time(s.get("expires_at")),
        idle_timeout_s=int(s.get("idle_timeout_s") or 0), queued=int(s.get("queued") or 0),
        limits=dict(s.get("limits") or {}), paused=bool(s.get("paused")), language=str(s.get("language") or "python3"),
        hibernated=bool(s.get("hibernated")),
    )


def iter_chunks(resp: Any, size: int = 64 << 10) -> Iterator[bytes]:
    while True:
        chunk = resp.read(size)
        if not chunk:
            return
        yield chunk


@dataclass
class Preview:
    """A preview of a server in the sandbox (``Sandbox.preview``), on the
    gateway's preview origin: one origin per session and port, never the
    gateway's.

    ``url`` is an expiring link for a browser (its token becomes a cookie
    of the preview's host); ``token`` lets another program in, in the
    ``Glassroom-Preview-Token`` header; both end at ``expires_at`` or with
    the sandbox. ``host`` (E2B's ``get_host``) carries its own grant:
    whoever has it reaches the server until the sandbox ends."""

    port: int
    host: str
    url: str
    token: str
    expires_at: datetime


@dataclass
class Port:
    """A TCP port a process of the sandbox listens on (``Sandbox.ports``):
    ``address`` is where (0.0.0.0, 127.0.0.1, ::, ::1). The kernels' own
    listeners are among them."""

    port: int
    address: str


@dataclass
class Uncaptured:
    """A variable a snapshot (or a restore) lacks, and why (``name`` "*":
    all of a kernel's, as for JavaScript)."""

    name: str
    reason: str

    @classmethod
    def _list(cls, value: Any) -> List["Uncaptured"]:
        return [cls(name=str(u.get("name", "")), reason=str(u.get("reason", ""))) for u in value or [] if isinstance(u, dict)]


@dataclass
class SnapshotContext:
    """One context of a snapshot: ``captured`` are the variables it holds,
    ``uncaptured`` those it does not, with why."""

    context: str
    language: str
    cwd: str
    default: bool = False
    state: str = ""
    captured: List[str] = field(default_factory=list)
    uncaptured: List[Uncaptured] = field(default_factory=list)

    @classmethod
    def from_json(cls, c: Dict[str, Any]) -> "SnapshotContext":
        return cls(context=str(c.get("context", "")), language=str(c.get("language", "")), cwd=str(c.get("cwd", "")),
                   default=bool(c.get("default")), state=str(c.get("state") or ""),
                   captured=[str(n) for n in c.get("captured") or []], uncaptured=Uncaptured._list(c.get("uncaptured")))


@dataclass
class Snapshot:
    """A captured sandbox (``Sandbox.create_snapshot``): its workspace's
    files and each context's variables. It outlives its sandbox until
    ``Sandbox.delete_snapshot``; ``Sandbox(snapshot=id)`` starts a sandbox
    from it. Only its API key sees it."""

    id: str
    sandbox_id: str
    """The sandbox it was taken of."""
    created_at: datetime
    size_bytes: int
    contexts: List[SnapshotContext] = field(default_factory=list)
    name: Optional[str] = None
    """Its label (``create_snapshot(name=...)``), if it has one."""

    @classmethod
    def from_json(cls, s: Dict[str, Any]) -> "Snapshot":
        return cls(id=str(s.get("id", "")), sandbox_id=str(s.get("session_id", "")), created_at=parse_time(s.get("created_at")),
                   size_bytes=int(s.get("size_bytes") or 0), name=str(s["name"]) if s.get("name") else None,
                   contexts=[SnapshotContext.from_json(c) for c in s.get("contexts") or [] if isinstance(c, dict)])


@dataclass
class RestoredContext:
    """One context's restore: ``context`` is its id in the new sandbox,
    ``from_context`` in the snapshot; ``restored`` the variables that came
    back, ``failed`` those that did not; ``error`` why none did (the
    kernel runs, empty)."""

    context: str
    from_context: str
    language: str
    restored: List[str] = field(default_factory=list)
    failed: List[Uncaptured] = field(default_factory=list)
    error: Optional[str] = None


@dataclass
class RestoreReport:
    """What a sandbox started from a snapshot (or a fork) got of it
    (``sandbox.restore``): ``error`` when its files could not be restored."""

    snapshot_id: str
    contexts: List[RestoredContext] = field(default_factory=list)
    error: Optional[str] = None

    @classmethod
    def from_json(cls, r: Any) -> Optional["RestoreReport"]:
        if not isinstance(r, dict):
            return None
        ctxs = [RestoredContext(context=str(c.get("context", "")), from_context=str(c.get("from", "")),
                                language=str(c.get("language", "")), restored=[str(n) for n in c.get("restored") or []],
                                failed=Uncaptured._list(c.get("failed")), error=c.get("error") or None)
                for c in r.get("contexts") or [] if isinstance(c, dict)]
        return cls(snapshot_id=str(r.get("snapshot_id", "")), contexts=ctxs, error=r.get("error") or None)
