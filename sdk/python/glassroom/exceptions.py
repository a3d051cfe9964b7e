"""Exceptions raised by the glassroom SDK (named as in E2B's SDK)."""

from typing import Any, Optional

from .models import CommandResult


class SandboxException(Exception):
    """Base class of every SDK error.

    ``status`` is the HTTP status (0 when the gateway did not answer),
    ``code`` the gateway's error code (e.g. ``"queue_full"``) and
    ``message`` its explanation.
    """

    def __init__(self, message: str, status: int = 0, code: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


class InvalidArgumentException(SandboxException):
    """A bad argument or request (HTTP 400, 413)."""


class AuthenticationException(SandboxException):
    """The API key is missing or wrong (HTTP 401)."""


class NotFoundException(SandboxException):
    """No such sandbox (session) for this key, or no such file (HTTP 404)."""


class FileNotFoundException(NotFoundException):
    """No such file or directory in the sandbox (HTTP 404, code ``file_not_found``)."""


class SandboxNotFoundException(NotFoundException):
    """No such sandbox (session) for this key: it never existed, was killed or expired (HTTP 404)."""


class ConflictException(SandboxException):
    """The request conflicts with the session's state (HTTP 409): e.g. the kernel is dead, or a directory is in the way."""


class RateLimitException(SandboxException):
    """Too many sessions, clients or queued executions (HTTP 429)."""


class NotEnoughSpaceException(SandboxException):
    """The session's workspace is full (HTTP 507)."""


class TimeoutException(SandboxException):
    """A request, or the code's execution, took longer than its timeout.

    When an execution timed out on the gateway, ``execution`` holds what it
    produced before it was interrupted.
    """

    def __init__(self, message: str, status: int = 0, code: str = "", execution: Optional[Any] = None,
                 result: Optional[CommandResult] = None) -> None:
        super().__init__(message, status, code)
        self.execution = execution
        self.result = result
        """For a shell command killed at its timeout: its CommandResult (output so far, ``timed_out`` True)."""


class CommandExitException(SandboxException, CommandResult):
    """A shell command exited with a code other than 0 (as in E2B).

    It is also the command's CommandResult: ``stdout``, ``stderr``,
    ``exit_code``, ``error``, ``pid``, ... ; ``result`` is that result.
    """

    def __init__(self, result: CommandResult) -> None:
        SandboxException.__init__(self, f"command exited with code {result.exit_code}"
                                  + (f": {result.error}" if result.error else "")
                                  + (f"\n{result.stderr[-2000:]}" if result.stderr else ""),
                                  code="command_exit")
        CommandResult.__init__(self, stdout=result.stdout, stderr=result.stderr, exit_code=result.exit_code,
                               error=result.error, pid=result.pid, truncated=result.truncated,
                               duration_ms=result.duration_ms, timed_out=result.timed_out)
        self.result = result

    __str__ = SandboxException.__str__  # not the dataclass's repr
    __eq__ = object.__eq__  # type: ignore[assignment]
    __hash__ = object.__hash__  # type: ignore[assignment]


_BY_STATUS = {
    400: InvalidArgumentException,
    401: AuthenticationException,
    404: NotFoundException,
    409: ConflictException,
    413: InvalidArgumentException,
    429: RateLimitException,
    507: NotEnoughSpaceException,
}


def from_status(status: int, code: str, message: str) -> SandboxException:
    """The exception for a gateway error answer."""
    cls = _BY_STATUS.get(status, SandboxException)
    if status == 404:
        cls = {"file_not_found": FileNotFoundException, "not_found": SandboxNotFoundException}.get(code, cls)
    return cls(f"{code or 'error'} (HTTP {status}): {message}", status, code)


def from_code(code: str, message: str) -> SandboxException:
    """The exception for an error the gateway reports inside an answer (a
    fork's), by its code alone: what ``from_status`` would raise for the
    error answer of the same cause."""
    if code in ("not_found", "file_not_found") or code.endswith("_not_found"):
        status = 404
    elif code in ("bad_request", "bad_path") or code.startswith("bad_"):
        status = 400
    elif code in ("too_large",) or code.endswith("_too_large"):
        status = 413
    elif code in ("rate_limited", "queue_full", "comm_limit") or code.startswith("too_many"):
        status = 429
    elif code in ("workspace_full", "no_room"):
        status = 507
    elif code in ("unauthorized",):
        status = 401
    elif code in ("session_hibernated", "session_paused", "kernel_dead", "file_conflict", "file_busy", "volume_in_use"):
        status = 409
    else:
        status = 0
    return from_status(status, code, message or code)
