"""Text edits of workspace files: ``sbx.files.edit``."""

from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence

from ._http import Connection, quote_path, session_path
from .exceptions import InvalidArgumentException

COMMANDS = ("view", "create", "str_replace", "insert")


@dataclass
class EditResult:
    """What ``files.edit`` did, or what ``view`` shows.

    ``text`` is, for view, the lines asked for; for str_replace and insert,
    a snippet around the change: each line as its number (right-aligned in
    6 columns), a tab and the line. ``start_line`` and ``end_line`` are its
    first and last line (0 when it is empty).
    """

    path: str
    command: str
    created: bool
    size: int
    lines: int
    text: str = ""
    start_line: int = 0
    end_line: int = 0


def edit(conn: Connection, sandbox_id: str, path: str, command: str, args: Dict[str, Any],
         request_timeout: Optional[float]) -> EditResult:
    """PATCH /v1/sessions/{id}/files/{path} with one text-editor command."""
    if command not in COMMANDS:
        raise InvalidArgumentException(f"command must be one of {', '.join(COMMANDS)}, not {command!r}")
    if not path:
        raise InvalidArgumentException("this needs a file path, not the workspace root")
    body: Dict[str, Any] = {"command": command}
    for k, v in args.items():
        if v is not None:
            body[k] = list(v) if k == "view_range" else v
    kw: Dict[str, Any] = {} if request_timeout is None else {"timeout": request_timeout}
    out = conn.call("PATCH", session_path(sandbox_id, "files", quote_path(path)), json_body=body, ok=(200, 201), **kw)
    return EditResult(path=str(out.get("path", "")), command=str(out.get("command", "")), created=bool(out.get("created")),
                      size=int(out.get("size") or 0), lines=int(out.get("lines") or 0), text=str(out.get("text") or ""),
                      start_line=int(out.get("start_line") or 0), end_line=int(out.get("end_line") or 0))


def view_range_arg(view_range: Optional[Sequence[int]]) -> Optional[Sequence[int]]:
    if view_range is not None and (len(view_range) != 2 or not all(isinstance(n, int) for n in view_range)):
        raise InvalidArgumentException("view_range must be [start, end] (lines from 1; end -1 for the end of the file)")
    return view_range


__all__ = ["EditResult"]
