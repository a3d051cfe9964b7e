"""The data classes of ``glassroom.e2b``, named and shaped as in E2B's SDKs."""

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any, Callable, Dict, List, Literal, Mapping, Optional, TypedDict, TypeVar, Union

from ..exceptions import TimeoutException
from ..models import Execution, ExecutionError, FileType, Logs, OutputMessage, parse_time
from ..models import Result as _GlassroomResult
from .charts import Chart, chart_from_json

CHART_MIME = "application/vnd.glassroom.chart+json"
DATAFRAME_MIME = "application/vnd.glassroom.dataframe+json"
WORKSPACE = "/home/user"

T = TypeVar("T")
OutputHandler = Callable[[T], Any]
RunCodeLanguage = Union[Literal["python", "javascript", "typescript", "r", "java", "bash"], str]
Username = Literal["root", "user"]


class MIMEType(str):
    """A MIME type."""


class Result(_GlassroomResult):
    """One rich output of ``run_code`` (E2B's ``Result``).

    ``text``, ``html``, ``markdown``, ``svg``, ``png``, ``jpeg``, ``pdf``,
    ``latex``, ``json``, ``javascript`` as in Jupyter; ``data`` is a pandas
    DataFrame's columns (``{"column": [values...]}``), ``chart`` a matplotlib
    figure's data (a Chart class), ``extra`` the other MIME types.
    """

    def __init__(self, text: Optional[str] = None, html: Optional[str] = None, markdown: Optional[str] = None,
                 svg: Optional[str] = None, png: Optional[str] = None, jpeg: Optional[str] = None, pdf: Optional[str] = None,
                 latex: Optional[str] = None, json: Optional[dict] = None, javascript: Optional[str] = None,
                 data: Optional[dict] = None, chart: Optional[dict] = None, is_main_result: bool = False,
                 extra: Optional[dict] = None, **kwargs: Any) -> None:
        super().__init__({}, is_main_result)
        self.text, self.html, self.markdown, self.svg = text, html, markdown, svg
        self.png, self.jpeg, self.pdf, self.latex = png, jpeg, pdf, latex
        self.json, self.javascript, self.data = json, javascript, data
        self.chart: Optional[Chart] = chart_from_json(chart) if isinstance(chart, dict) else chart
        self.extra = extra or None

    @classmethod
    def from_glassroom(cls, r: _GlassroomResult) -> "Result":
        """The E2B-shaped result of a glassroom result: the glassroom chart
        and table JSON become ``chart`` and ``data``."""
        extra = dict(r.extra or {})
        chart_json = extra.pop(CHART_MIME, None)
        frame = extra.pop(DATAFRAME_MIME, None)
        data = r.data
        if isinstance(frame, dict) and isinstance(frame.get("data"), dict):
            data = frame["data"]
        out = cls(text=r.text, html=r.html, markdown=r.markdown, svg=r.svg, png=r.png, jpeg=r.jpeg, pdf=r.pdf, latex=r.latex,
                  json=r.json, javascript=r.javascript, data=data, chart=chart_json if isinstance(chart_json, dict) else None,
                  is_main_result=r.is_main_result, extra=extra or None)
        out.raw = r.raw
        return out

    def formats(self) -> List[str]:  # type: ignore[override]
        """The representations this result has: text, html, ..., data, chart, then extra MIME types."""
        out = [k for k in ("text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "json", "javascript", "data",
                           "chart") if getattr(self, k)]
        out.extend(self.extra or {})
        return out

    def _repr_pdf_(self) -> Optional[str]:
        return self.pdf

    def _repr_javascript_(self) -> Optional[str]:
        return self.javascript


@dataclass
class Context:
    """A code context (E2B's ``Context``): ``id``, ``language``, ``cwd``."""

    id: str
    language: str
    cwd: str

    def __init__(self, context_id: str, language: str, cwd: str, **kwargs: Any) -> None:
        self.id = context_id
        self.language = language
        self.cwd = cwd

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Context":
        lang = str(data.get("language") or "")
        return cls(context_id=str(data.get("id", "")), language="python" if lang == "python3" else lang,
                   cwd=str(data.get("cwd", "")))


@dataclass
class WriteInfo:
    """A file written (E2B's ``WriteInfo``); ``path`` is absolute."""

    name: str
    type: Optional[FileType]
    path: str
    metadata: Optional[Dict[str, str]] = None


@dataclass
class EntryInfo(WriteInfo):
    """A file or directory (E2B's ``EntryInfo``); ``path`` is absolute."""

    size: int = 0
    mode: int = 0
    """Permission bits (0o644...); ``permissions`` is their ``ls -l`` form."""
    permissions: str = ""
    owner: str = "user"
    group: str = "user"
    modified_time: datetime = field(default_factory=lambda: parse_time(None))
    symlink_target: Optional[str] = None


class FilesystemEventType(enum.Enum):
    CHMOD = "chmod"
    CREATE = "create"
    REMOVE = "remove"
    RENAME = "rename"
    WRITE = "write"


@dataclass
class FilesystemEvent:
    """A change under a watched directory; ``name`` is relative to it."""

    name: str
    type: FilesystemEventType
    entry: Optional[EntryInfo] = None


class SandboxState(str, enum.Enum):
    PAUSED = "paused"
    RUNNING = "running"

    def __str__(self) -> str:
        return str(self.value)


@dataclass
class SandboxInfo:
    """A sandbox as ``get_info`` and ``Sandbox.list`` report it (E2B's ``SandboxInfo``).

    ``template_id`` and ``name`` are the template's name; ``sandbox_domain``
    is None; ``envd_version`` is ``"glassroom"``. glassroom adds
    ``language`` and ``limits``.
    """

    sandbox_id: str
    sandbox_domain: Optional[str]
    template_id: str
    name: Optional[str]
    metadata: Dict[str, str]
    started_at: datetime
    end_at: datetime
    state: SandboxState
    cpu_count: int
    memory_mb: int
    envd_version: str
    allow_internet_access: Optional[bool] = None
    network: Optional[Dict[str, Any]] = None
    lifecycle: Optional[Dict[str, Any]] = None
    volume_mounts: List[Dict[str, str]] = field(default_factory=list)
    language: str = "python3"
    limits: Dict[str, Any] = field(default_factory=dict)


def sandbox_info(s: Dict[str, Any]) -> SandboxInfo:
    limits = dict(s.get("limits") or {})
    net = s.get("network")
    allow = list(net.get("allow") or []) if isinstance(net, dict) else []
    template = str(s.get("template") or "default")
    meta = s.get("metadata")
    cpus = limits.get("cpus") or 0
    return SandboxInfo(
        sandbox_id=str(s.get("id", "")), sandbox_domain=None, template_id=template, name=template,
        metadata={str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {},
        started_at=parse_time(s.get("created_at")), end_at=parse_time(s.get("end_at") or s.get("expires_at")),
        # A client's pause only: the idle freeze is transparent (the next request thaws it).
        state=SandboxState.PAUSED if s.get("paused_by_client", s.get("paused")) else SandboxState.RUNNING,
        cpu_count=max(1, int(-(-float(cpus) // 1))) if cpus else 0, memory_mb=int(limits.get("memory_mb") or 0),
        envd_version="glassroom", allow_internet_access=bool(allow), network={"allow_out": allow} if allow else None,
        lifecycle=_lifecycle_info(s.get("lifecycle")), language=str(s.get("language") or "python3"), limits=limits)


def _lifecycle_info(lc: Any) -> Dict[str, Any]:
    """A session's lifecycle as E2B's SandboxInfo has it: on_timeout and auto_resume."""
    if isinstance(lc, dict) and lc.get("on_timeout") == "pause":
        return {"on_timeout": "pause", "auto_resume": bool(lc.get("auto_resume"))}
    return {"on_timeout": "kill", "auto_resume": False}


SandboxListOrder = Literal["asc", "desc"]


@dataclass
class SandboxQuery:
    """Filters of ``Sandbox.list``: ``metadata`` (all must match), ``state``."""

    metadata: Optional[Dict[str, str]] = None
    state: Optional[List[SandboxState]] = None
    started_after: Optional[datetime] = None
    template: Optional[str] = None


@dataclass
class SandboxMetrics:
    """A sandbox's resource use at ``timestamp`` (E2B's ``SandboxMetrics``): CPU and memory of its cgroup, disk of its workspace."""

    cpu_count: int
    cpu_used_pct: float
    disk_total: int
    disk_used: int
    mem_total: int
    mem_used: int
    mem_cache: int
    timestamp: datetime


class WriteEntry(TypedDict):
    """One file of ``files.write_files`` (E2B's ``WriteEntry``)."""

    path: str
    data: Union[str, bytes, IO]


@dataclass(frozen=True)
class SandboxNetworkSelectorContext:
    """What an ``allow_out``/``deny_out`` callable is given: ``all_traffic``
    is ``"0.0.0.0/0"``; ``rules`` is empty (glassroom has no per-host
    request rules)."""

    all_traffic: str
    rules: Mapping[str, List[Dict[str, Any]]]


SandboxNetworkSelector = Union[List[str], Callable[[SandboxNetworkSelectorContext], List[str]]]
SandboxOnTimeout = Literal["kill", "pause"]


class SandboxNetworkOpts(TypedDict, total=False):
    """``Sandbox.create(network=...)`` (E2B's): ``allow_out`` and
    ``deny_out`` are host names, IP addresses and CIDR blocks, or
    callables of a SandboxNetworkSelectorContext; the gateway's ceiling
    bounds them. ``allow_public_traffic=False`` makes the sandbox's
    previews private: ``get_host`` is then no grant by itself, and a
    request needs ``traffic_access_token`` in the
    ``e2b-traffic-access-token`` header. ``mask_request_host`` is accepted
    and ignored (a preview's server sees the preview's host)."""

    allow_out: SandboxNetworkSelector
    deny_out: SandboxNetworkSelector
    allow_public_traffic: bool
    mask_request_host: str


class SandboxNetworkUpdate(TypedDict, total=False):
    """``update_network``'s rules (E2B's): ``allow_out`` and ``deny_out`` as in SandboxNetworkOpts."""

    allow_out: SandboxNetworkSelector
    deny_out: SandboxNetworkSelector


class SandboxLifecycle(TypedDict, total=False):
    """``Sandbox.create(lifecycle=...)`` (E2B's): what the sandbox does at
    its timeout. ``on_timeout`` is "kill" (the default), "pause" (it is
    frozen, its memory kept), or ``{"action": "pause", "keep_memory":
    False}``: it hibernates (its files and variables go into a snapshot,
    its sandbox is freed; ``connect`` wakes it). ``auto_resume=True``
    resumes a paused sandbox on its next use; as in E2B it cannot go with
    ``keep_memory=False``."""

    on_timeout: Union[SandboxOnTimeout, Dict[str, Any]]
    auto_resume: bool


@dataclass
class SnapshotInfo:
    """A snapshot of a sandbox (E2B's ``SnapshotInfo``), from
    ``create_snapshot`` or ``list_snapshots``: ``Sandbox.create(snapshot_id)``
    starts a sandbox from it. ``names`` holds its name, when
    ``create_snapshot`` gave one."""

    snapshot_id: str
    names: List[str] = field(default_factory=list)


def format_request_timeout_error() -> TimeoutException:
    return TimeoutException("Request timed out — the 'request_timeout' option can be used to increase this timeout")


def format_execution_timeout_error() -> TimeoutException:
    return TimeoutException("Execution timed out — the 'timeout' option can be used to increase this timeout")


def format_sandbox_killed_error() -> TimeoutException:
    return TimeoutException(
        "The sandbox was killed while the request was in progress. This can happen when the sandbox times out or is "
        "killed manually. You can modify the sandbox timeout by passing 'timeout' when starting the sandbox or calling "
        "'.set_timeout' on the sandbox with the desired timeout")


__all__ = ["Result", "Execution", "ExecutionError", "Logs", "OutputMessage", "OutputHandler", "RunCodeLanguage", "MIMEType",
           "Context", "WriteInfo", "EntryInfo", "FileType", "FilesystemEvent", "FilesystemEventType", "SandboxState",
           "SandboxInfo", "SandboxQuery", "SandboxMetrics", "SandboxListOrder", "Username", "WriteEntry",
           "SandboxNetworkOpts", "SandboxNetworkSelector", "SandboxNetworkSelectorContext", "SandboxNetworkUpdate",
           "SandboxOnTimeout", "SandboxLifecycle", "SnapshotInfo"]
