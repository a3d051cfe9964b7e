"""glassroom: persistent, sandboxed interpreters (Python, R, JavaScript,
TypeScript, Bash) for agents and code interpreters.

A client of a glassroom gateway, shaped like E2B's code-interpreter SDK::

    from glassroom import Sandbox

    with Sandbox() as sbx:          # GLASSROOM_URL, GLASSROOM_API_KEY
        print(sbx.run_code("x = 41\\nx + 1").text)   # 42
        print(sbx.run_code("cat(6 * 7)", language="r").logs.stdout)   # ['42']
"""

from .async_sandbox import AsyncFilesystem, AsyncSandbox
from .exceptions import (AuthenticationException, ConflictException, InvalidArgumentException, NotEnoughSpaceException,
                         NotFoundException, RateLimitException, SandboxException, TimeoutException)
from .files import FileStream, Filesystem
from .files import WORKSPACE
from .models import (Context, EntryInfo, Execution, ExecutionError, FileChange, FileType, Logs, NextInput, OutputMessage,
                     Result, SandboxInfo, UserExpression, WriteInfo)
from .sandbox import OutputHandler, Sandbox

__version__ = "0.1.0"

__all__ = [
    "Sandbox", "AsyncSandbox", "Filesystem", "AsyncFilesystem", "FileStream",
    "Execution", "ExecutionError", "Logs", "Result", "OutputMessage", "OutputHandler", "FileChange", "UserExpression",
    "NextInput",
    "EntryInfo", "WriteInfo", "FileType", "SandboxInfo", "Context", "WORKSPACE",
    "SandboxException", "TimeoutException", "NotFoundException", "AuthenticationException",
    "InvalidArgumentException", "ConflictException", "RateLimitException", "NotEnoughSpaceException",
]

from ._edit import EditResult  # noqa: E402  (text edits: sbx.files.edit)

__all__ += ["EditResult", "Pty", "PtySize"]

from .models import Port, Preview  # noqa: E402  (servers in the sandbox: sbx.ports(), sbx.preview(port))

__all__ += ["Port", "Preview"]

from .volumes import Volume  # noqa: E402  (named volumes: Volume.create, Sandbox(volumes=...))

__all__ += ["Volume"]

from .async_sandbox import AsyncCommandHandle, AsyncCommands  # noqa: E402  (shell commands: sbx.commands)
from .commands import CommandHandle, CommandOutputHandler, Commands, Pty, PtySize  # noqa: E402
from .exceptions import CommandExitException  # noqa: E402
from .models import CommandResult, ProcessInfo  # noqa: E402

__all__ += ["Commands", "AsyncCommands", "CommandHandle", "AsyncCommandHandle", "CommandResult", "ProcessInfo",
            "CommandOutputHandler", "CommandExitException"]

from .models import RestoredContext, RestoreReport, Snapshot, SnapshotContext, Uncaptured  # noqa: E402  (snapshots and forks)

__all__ += ["Snapshot", "SnapshotContext", "Uncaptured", "RestoreReport", "RestoredContext"]
