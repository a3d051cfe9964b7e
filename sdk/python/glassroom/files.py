"""Workspace files of a sandbox: ``sbx.files``."""

import json
import os
import posixpath
from typing import IO, Any, Dict, Iterator, List, Literal, Optional, Sequence, Union, overload

from . import _edit
from ._edit import EditResult
from ._http import Connection, quote_path, session_path
from .exceptions import InvalidArgumentException, NotFoundException
from .models import EntryInfo, FileType, WriteInfo, file_type, iter_chunks, parse_time

WORKSPACE = "/home/user"
"""The workspace's path inside the sandbox: the kernels' working directory and HOME."""

WORKSPACE_ALIAS = "/workspace"
"""The same directory under its other name."""


def _outside_hint(p: str) -> str:
    """What to use instead of a path outside the workspace that code
    written for E2B often uses (the gateway says the same)."""
    if p == "/root" or p.startswith("/root/"):
        return f" (a glassroom sandbox has no root user and no /root: its home and workspace is {WORKSPACE}, also {WORKSPACE_ALIAS})"
    if p == "/tmp" or p.startswith("/tmp/"):
        return f" (/tmp is the sandbox's private scratch space, which only code in it reaches: keep files to share in {WORKSPACE})"
    return ""


def _normalize_abs(p: str) -> str:
    norm = posixpath.normpath(p)
    if norm.startswith("//"):  # POSIX keeps a leading "//"
        norm = "/" + norm.lstrip("/")
    return norm


def sandbox_path(path: Union[str, "os.PathLike[str]"]) -> Optional[str]:
    """The normalized absolute path when ``path`` lies outside the
    workspace (a file of the sandbox's own file system, which ``read``,
    ``exists`` and ``get_info`` reach read-only), else None."""
    p = os.fspath(path)
    if not isinstance(p, str) or not p.startswith("/"):
        return None
    norm = _normalize_abs(p)
    for root in (WORKSPACE, WORKSPACE_ALIAS):
        if norm == root or norm.startswith(root + "/"):
            return None
    return norm


def clean_path(path: Union[str, "os.PathLike[str]"]) -> str:
    """Maps a path to the gateway's workspace-relative form.

    Relative paths are relative to the workspace (the kernels' working
    directory); an absolute path must lie under /home/user (or /workspace,
    the same directory).
    """
    p = os.fspath(path)
    if not isinstance(p, str):
        raise InvalidArgumentException("paths must be str")
    if p.startswith("/"):
        norm = _normalize_abs(p)
        for root in (WORKSPACE, WORKSPACE_ALIAS):
            if norm == root:
                return ""
            if norm.startswith(root + "/"):
                p = norm[len(root) + 1:]
                break
        else:
            raise InvalidArgumentException(
                f"{p!r}: glassroom paths are relative to the session's workspace ({WORKSPACE}, the kernels' working directory); "
                "the sandbox's other files are read-only (read, exists, get_info)" + _outside_hint(norm))
    while p.startswith("./"):
        p = p[2:]
    return "" if p in (".", "") else p.rstrip("/")


def _metadata(v: Any) -> Optional[Dict[str, str]]:
    """A file's metadata as the gateway gives it: None when it has none."""
    if not isinstance(v, dict) or not v:
        return None
    return {str(k): str(x) for k, x in v.items()}


def _entry(e: Dict[str, Any]) -> EntryInfo:
    """An entry as the gateway gives it (a list's, or sandbox-files/info's)."""
    return EntryInfo(name=str(e.get("name", "")), type=file_type(e.get("type")), path=str(e.get("path", "")),
                     size=int(e.get("size") or 0), modified_time=parse_time(e.get("mtime")),
                     mode=int(e.get("mode") or 0) & 0o7777,
                     symlink_target=str(e["symlink_target"]) if e.get("symlink_target") else None,
                     target_type=file_type(e.get("target_type")) if e.get("target_type") else None,
                     metadata=_metadata(e.get("metadata")))


class FileStream:
    """A download being read: iterate over it for bytes chunks, or call
    ``read``. Close it (or use ``with``) when done."""

    def __init__(self, resp: Any) -> None:
        self._resp = resp

    def read(self, n: int = -1) -> bytes:
        return bytes(self._resp.read(n))

    def __iter__(self) -> Iterator[bytes]:
        return iter_chunks(self._resp)

    def close(self) -> None:
        self._resp.close()

    def __enter__(self) -> "FileStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Filesystem:
    """The files of one sandbox's workspace. Paths are relative to the
    workspace (the kernel's working directory), '/'-separated."""

    def __init__(self, conn: Connection, sandbox_id: str) -> None:
        self._conn = conn
        self._id = sandbox_id

    def _file(self, path: str) -> str:
        if not path:
            raise InvalidArgumentException("this needs a file path, not the workspace root")
        return session_path(self._id, "files", quote_path(path))

    @overload
    def read(self, path: str, format: Literal["text"] = "text", request_timeout: Optional[float] = None) -> str: ...

    @overload
    def read(self, path: str, format: Literal["bytes"], request_timeout: Optional[float] = None) -> bytearray: ...

    @overload
    def read(self, path: str, format: Literal["stream"], request_timeout: Optional[float] = None) -> FileStream: ...

    def read(self, path: str, format: str = "text", request_timeout: Optional[float] = None) -> Any:
        """Reads a file: ``format="text"`` (str, UTF-8), ``"bytes"``
        (bytearray) or ``"stream"`` (a FileStream to iterate and close)."""
        if format not in ("text", "bytes", "stream"):
            raise InvalidArgumentException("format must be text, bytes or stream")
        kw: Dict[str, Any] = {} if request_timeout is None else {"timeout": request_timeout}
        outside = sandbox_path(path)
        if outside is not None:  # the sandbox's own file system, at most 16 MiB
            resp = self._conn.open("GET", session_path(self._id, "sandbox-files"), query={"path": outside}, **kw)
        else:
            resp = self._conn.open("GET", self._file(clean_path(path)), **kw)
        if format == "stream":
            return FileStream(resp)
        with resp:
            data = resp.read()
        return data.decode("utf-8") if format == "text" else bytearray(data)

    def write(self, path: str, data: Union[str, bytes, bytearray, IO[Any]], request_timeout: Optional[float] = None,
              metadata: Optional[Dict[str, str]] = None) -> WriteInfo:
        """Writes a file (parents are created, an existing file replaced).
        ``data`` is str (UTF-8), bytes, or a file object (streamed).
        ``metadata``: string pairs kept with the file (as user.e2b.
        attributes; keys HTTP tokens, values printable ASCII); a file
        written without it has none."""
        p = clean_path(path)
        headers: Dict[str, str] = {}
        if metadata:
            if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
                raise InvalidArgumentException("metadata must be a dict of str to str")
            headers["Glassroom-File-Metadata"] = json.dumps(metadata)
        body: Any
        if isinstance(data, str):
            body = data.encode("utf-8")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            body = bytes(data)
        elif hasattr(data, "read"):
            body = _stream(data)
        else:
            raise InvalidArgumentException("data must be str, bytes or a file object")
        kw: Dict[str, Any] = {} if request_timeout is None else {"timeout": request_timeout}
        out = self._conn.call("PUT", self._file(p), body=body, content_type="application/octet-stream", ok=(201,),
                              headers=headers, **kw)
        meta = out.get("metadata")
        return WriteInfo(name=posixpath.basename(out["path"]), type=FileType.FILE, path=out["path"], size=int(out.get("size", 0)),
                         metadata={str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) and meta else None)

    def write_files(self, files: List[Dict[str, Any]], request_timeout: Optional[float] = None) -> List[WriteInfo]:
        """Writes several files: each a dict with ``path`` and ``data``."""
        return [self.write(f["path"], f["data"], request_timeout) for f in files]

    def list(self, path: str = ".", depth: int = 1) -> List[EntryInfo]:
        """Lists a directory; ``depth`` > 1 descends into subdirectories."""
        if depth < 1:
            raise InvalidArgumentException("depth must be at least 1")
        p = clean_path(path)
        out = self._conn.call("GET", session_path(self._id, "files"), query={"path": p} if p else None)
        entries = []
        for e in out.get("entries") or []:
            info = _entry(e)
            entries.append(info)
            if depth > 1 and info.type == FileType.DIR:
                entries.extend(self.list(info.path, depth - 1))
        return entries

    def exists(self, path: str) -> bool:
        """Whether a file or directory exists (a missing sandbox raises
        NotFoundException); outside the workspace, as the sandbox's user
        sees it."""
        outside = sandbox_path(path)
        p = "" if outside is not None else clean_path(path)
        if outside is None and not p:
            return True
        try:
            # Outside the workspace, 200 is any entry (a directory too) and
            # 403 one the sandbox's user may not see; 409 is a paused
            # session, which raises.
            if outside is not None:
                self._conn.open("HEAD", session_path(self._id, "sandbox-files"), query={"path": outside}, ok=(200, 403)).close()
                return True
            # 200: a file; 409: a directory (not downloadable) or a file being written.
            self._conn.open("HEAD", self._file(p), ok=(200, 409)).close()
            return True
        except NotFoundException:
            self._conn.call("GET", session_path(self._id))  # raises if the sandbox is gone
            return False

    def get_info(self, path: str) -> EntryInfo:
        """Information about one file or directory (NotFoundException if
        missing); outside the workspace, its absolute path, a last symlink
        not followed."""
        outside = sandbox_path(path)
        if outside is not None:
            return _entry(self._conn.call("GET", session_path(self._id, "sandbox-files", "info"), query={"path": outside}))
        p = clean_path(path)
        if not p:
            raise InvalidArgumentException("the workspace root has no entry")
        parent = posixpath.dirname(p)
        for e in self.list(parent or "."):
            if e.path == p:
                return e
        raise NotFoundException(f"{p!r} does not exist", 404, "file_not_found")

    def remove(self, path: str) -> None:
        """Deletes a file, or a directory with its contents."""
        self._conn.call("DELETE", self._file(clean_path(path)), ok=(204,))

    def url(self, path: str, operation: str = "read", expires: Optional[float] = None) -> str:
        """A signed URL for one file that a browser or a bare HTTP client uses
        without the API key: ``operation`` "read" (GET) or "write" (PUT of the
        body, or POST of a multipart form's "file" part), for ``expires``
        seconds (default 3600, at most a day) or until the session ends."""
        body: Dict[str, Any] = {"path": clean_path(path), "operation": operation}
        if expires is not None:
            body["expires_s"] = expires
        out = self._conn.call("POST", session_path(self._id, "files-url"), json_body=body)
        return self._conn.base_url + str(out["url"])

    def make_dir(self, path: str) -> bool:
        """Creates a directory and its parents. Returns False if it already existed."""
        p = clean_path(path)
        if not p:
            return False
        existed = self.exists(p)
        self._conn.call("PUT", self._file(p), query={"type": "dir"}, body=b"", ok=(200, 201))
        return not existed

    def edit(self, path: str, command: str, *, view_range: Optional[Sequence[int]] = None, file_text: Optional[str] = None,
             old_str: Optional[str] = None, new_str: Optional[str] = None, insert_line: Optional[int] = None,
             request_timeout: Optional[float] = None) -> EditResult:
        """Views or edits a UTF-8 text file, as agents' text-editor tools do.

        ``command`` is ``"view"`` (numbered lines; ``view_range=[start, end]``,
        end -1 for the end of the file), ``"create"`` (``file_text``),
        ``"str_replace"`` (``old_str``, which must occur exactly once, by
        ``new_str``) or ``"insert"`` (``new_str`` after line ``insert_line``,
        0 for the top). Edits are atomic; a failed one changes nothing.
        str_replace with zero or several matches raises ConflictException
        (code ``no_match`` or ``multiple_matches``; the message says how many
        and on which lines).
        """
        return _edit.edit(self._conn, self._id, clean_path(path), command,
                          {"view_range": _edit.view_range_arg(view_range), "file_text": file_text, "old_str": old_str,
                           "new_str": new_str, "insert_line": insert_line}, request_timeout)


def _stream(f: IO[Any]) -> Iterator[bytes]:
    while True:
        chunk = f.read(64 << 10)
        if not chunk:
            return
        yield chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)


__all__ = ["Filesystem", "FileStream", "clean_path", "sandbox_path", "WORKSPACE"]
