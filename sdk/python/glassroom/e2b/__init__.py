"""E2B's code-interpreter SDK on a glassroom gateway: change one import line.

    from glassroom.e2b import Sandbox      # was: from e2b_code_interpreter import Sandbox

    with Sandbox.create() as sbx:         # GLASSROOM_URL; GLASSROOM_API_KEY or E2B_API_KEY
        print(sbx.run_code("1 + 1").text)

The names, signatures, defaults and exception types are E2B's
(``e2b_code_interpreter`` and the ``e2b`` package's exceptions and models);
what a glassroom gateway does differently is listed in the SDK's README.
"""

from ..commands import CommandHandle, Commands, Pty, PtySize
from ..exceptions import (AuthenticationException, CommandExitException, ConflictException, FileNotFoundException,
                          InvalidArgumentException, NotEnoughSpaceException, NotFoundException, RateLimitException,
                          SandboxException, SandboxNotFoundException, TimeoutException)
from ..models import CommandResult, Execution, ExecutionError, FileType, Logs, OutputMessage, ProcessInfo
from ..async_sandbox import AsyncCommandHandle, AsyncCommands
from .async_sandbox import AsyncFilesystem, AsyncSandbox, AsyncSandboxPaginator, AsyncSnapshotPaginator, AsyncWatchHandle
from .charts import (BarChart, BarData, BoxAndWhiskerChart, BoxAndWhiskerData, Chart, Chart2D, ChartType, ChartTypes,
                     LineChart, PieChart, PieData, PointChart, PointData, ScaleType, ScatterChart, SuperChart)
from .models import (Context, EntryInfo, FilesystemEvent, FilesystemEventType, MIMEType, OutputHandler, Result,
                     RunCodeLanguage, SandboxInfo, SandboxLifecycle, SandboxListOrder, SandboxMetrics,
                     SandboxNetworkOpts, SandboxNetworkSelector, SandboxNetworkSelectorContext, SandboxNetworkUpdate,
                     SandboxOnTimeout, SandboxQuery, SandboxState, SnapshotInfo, Username, WriteEntry, WriteInfo)
from .sandbox import ALL_TRAFFIC, Filesystem, Sandbox, SandboxPaginator, SnapshotPaginator, WatchHandle
from ..volumes import Volume


class TemplateException(SandboxException):
    """A template the SDK cannot use (kept for E2B's imports; glassroom does not raise it)."""


Stdout = str
Stderr = str

__all__ = [
    "Sandbox", "AsyncSandbox", "Execution", "ExecutionError", "Result", "Logs", "OutputMessage", "OutputHandler",
    "RunCodeLanguage", "MIMEType", "Context", "Chart", "Chart2D", "ChartType", "ChartTypes", "ScaleType", "PointData",
    "PointChart", "LineChart", "ScatterChart", "BarData", "BarChart", "PieData", "PieChart", "BoxAndWhiskerData",
    "BoxAndWhiskerChart", "SuperChart", "EntryInfo", "WriteInfo", "FileType", "FilesystemEvent", "FilesystemEventType",
    "SandboxInfo", "SandboxQuery", "SandboxState", "SandboxMetrics", "SandboxListOrder", "SandboxPaginator",
    "AsyncSandboxPaginator", "Filesystem", "AsyncFilesystem", "WatchHandle", "AsyncWatchHandle", "Commands",
    "AsyncCommands", "Pty", "PtySize", "CommandHandle", "AsyncCommandHandle", "CommandResult", "ProcessInfo", "Username", "ALL_TRAFFIC",
    "Stdout", "Stderr", "Volume", "WriteEntry", "SandboxNetworkOpts", "SandboxNetworkSelector",
    "SandboxNetworkSelectorContext", "SandboxNetworkUpdate", "SandboxOnTimeout", "SandboxLifecycle",
    "SandboxException", "TimeoutException", "NotFoundException", "FileNotFoundException", "SandboxNotFoundException",
    "InvalidArgumentException", "AuthenticationException", "RateLimitException", "NotEnoughSpaceException",
    "CommandExitException", "TemplateException", "ConflictException",
    "SnapshotInfo", "SnapshotPaginator", "AsyncSnapshotPaginator",
]
