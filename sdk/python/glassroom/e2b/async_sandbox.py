"""``glassroom.e2b.AsyncSandbox``: the asyncio twin of ``glassroom.e2b.Sandbox``.

Each call runs the synchronous SDK in a worker thread; callbacks, plain or
``async``, run on the event loop.
"""

import asyncio
import functools
import threading
from typing import IO, Any, Awaitable, Callable, Dict, List, Optional, Type, TypeVar, Union

from ..async_sandbox import AsyncCommands, AsyncPty, _on_loop
from ..models import Execution
from .models import Context, EntryInfo, FilesystemEvent, SandboxInfo, SandboxListOrder, SandboxQuery, SnapshotInfo, WriteInfo
from .sandbox import (Filesystem, Sandbox, SandboxPaginator, SnapshotPaginator, WatchHandle, _open_watch, _snapshot_lister,
                      _user)

A = TypeVar("A", bound="AsyncSandbox")
AsyncOutputHandler = Callable[[Any], Union[Any, Awaitable[Any]]]


class AsyncFileStream:
    """A download being read (``await files.read(path, format="stream")``):
    ``async for chunk in stream``, or ``await stream.read(n)``; close it
    (``await stream.aclose()``, or ``async with``) when done. Each read
    runs in a worker thread."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def read(self, n: int = -1) -> bytes:
        return await asyncio.to_thread(self._stream.read, n)

    def __aiter__(self) -> "AsyncFileStream":
        return self

    async def __anext__(self) -> bytes:
        chunk = await asyncio.to_thread(self._stream.read, 64 << 10)
        if not chunk:
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        await asyncio.to_thread(self._stream.close)

    async def __aenter__(self) -> "AsyncFileStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class AsyncWatchHandle:
    """A directory being watched: ``on_event`` is called for each change until ``stop``."""

    def __init__(self, handle: WatchHandle, on_event: AsyncOutputHandler,
                 on_exit: Optional[AsyncOutputHandler], loop: asyncio.AbstractEventLoop) -> None:
        self._handle = handle
        self._stopped = threading.Event()
        emit, exit_ = _on_loop(loop, on_event), _on_loop(loop, on_exit)

        def pump() -> None:
            err: Optional[Exception] = None
            while not self._stopped.is_set():
                try:
                    evs = handle._take()  # pushed events as they come: no sync needed
                except Exception as e:
                    err = None if self._stopped.is_set() else e
                    break
                for ev in evs:
                    try:
                        emit(ev)  # type: ignore[misc]
                    except Exception:
                        pass
                if not evs:
                    self._stopped.wait(0.05)
            if exit_ is not None:
                try:
                    exit_(err)
                except Exception:
                    pass
        self._thread = threading.Thread(target=pump, name="glassroom-watch-pump", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        self._stopped.set()
        await asyncio.to_thread(self._handle.stop)


class AsyncFilesystem:
    """The asyncio twin of ``glassroom.e2b.Filesystem`` (``sbx.files``)."""

    def __init__(self, files: Filesystem) -> None:
        self._files = files

    async def read(self, path: str, format: str = "text", user: Optional[str] = None,
                   request_timeout: Optional[float] = None, **kw: Any) -> Any:
        out = await asyncio.to_thread(self._files.read, path, format, user, request_timeout)
        return AsyncFileStream(out) if format == "stream" else out

    async def write(self, path: str, data: Union[str, bytes, IO[Any]], user: Optional[str] = None,
                    request_timeout: Optional[float] = None, metadata: Optional[Dict[str, str]] = None,
                    **kw: Any) -> WriteInfo:
        return await asyncio.to_thread(self._files.write, path, data, user, request_timeout, metadata=metadata)

    async def write_files(self, files: List[Dict[str, Any]], user: Optional[str] = None,
                          request_timeout: Optional[float] = None, metadata: Optional[Dict[str, str]] = None,
                          **kw: Any) -> List[WriteInfo]:
        return await asyncio.to_thread(self._files.write_files, files, user, request_timeout, metadata=metadata)

    async def list(self, path: str, depth: Optional[int] = 1, user: Optional[str] = None,
                   request_timeout: Optional[float] = None) -> List[EntryInfo]:
        return await asyncio.to_thread(self._files.list, path, depth, user, request_timeout)

    async def exists(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> bool:
        return await asyncio.to_thread(self._files.exists, path, user, request_timeout)

    async def get_info(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> EntryInfo:
        return await asyncio.to_thread(self._files.get_info, path, user, request_timeout)

    async def remove(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> None:
        await asyncio.to_thread(self._files.remove, path, user, request_timeout)

    async def rename(self, old_path: str, new_path: str, user: Optional[str] = None,
                     request_timeout: Optional[float] = None) -> EntryInfo:
        return await asyncio.to_thread(self._files.rename, old_path, new_path, user, request_timeout)

    async def make_dir(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> bool:
        return await asyncio.to_thread(self._files.make_dir, path, user, request_timeout)

    async def watch_dir(self, path: str, on_event: Callable[[FilesystemEvent], Any],
                        on_exit: Optional[Callable[[Optional[Exception]], Any]] = None, user: Optional[str] = None,
                        request_timeout: Optional[float] = None, timeout: Optional[float] = 60, recursive: bool = False,
                        include_entry: bool = False, **kw: Any) -> AsyncWatchHandle:
        """Watches a directory: ``on_event`` (plain or async) gets each change
        until ``stop()`` (see ``Sandbox.files.watch_dir``)."""
        _user(user)
        f = self._files
        ws = await asyncio.to_thread(_open_watch, f._conn, f._id, path, recursive, request_timeout, include_entry)
        return AsyncWatchHandle(WatchHandle(ws), on_event, on_exit, asyncio.get_running_loop())


class _async_class_or_instance:
    """An async method callable on an instance or on the class with a sandbox id first."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: Any = None) -> Callable[..., Any]:
        name = self.name
        if obj is not None:
            async def on_obj(*args: Any, **kw: Any) -> Any:
                return await asyncio.to_thread(getattr(obj._sbx, name), *args, **kw)
            return on_obj

        async def by_id(sandbox_id: str, *args: Any, **kw: Any) -> Any:
            return await asyncio.to_thread(functools.partial(getattr(Sandbox, name), sandbox_id, *args, **kw))
        return by_id


class _async_fork:
    """``await sbx.fork(timeout=None, count=None)``, or
    ``await AsyncSandbox.fork(sandbox_id, ...)``: AsyncSandboxes (or the
    exception each fork met)."""

    def __get__(self, obj: Any, objtype: Any = None) -> Callable[..., Any]:
        cls = objtype or type(obj)

        def wrap(forks: List[Any]) -> List[Any]:
            return [f if isinstance(f, Exception) else cls(f) for f in forks]
        if obj is not None:
            async def on_obj(timeout: Optional[int] = None, count: Optional[int] = None, **opts: Any) -> List[Any]:
                return wrap(await asyncio.to_thread(functools.partial(obj._sbx.fork, timeout, count, **opts)))
            return on_obj

        async def by_id(sandbox_id: str, timeout: Optional[int] = None, count: Optional[int] = None, **opts: Any) -> List[Any]:
            return wrap(await asyncio.to_thread(functools.partial(Sandbox.fork, sandbox_id, timeout, count, **opts)))
        return by_id


class AsyncSandbox:
    """E2B's ``AsyncSandbox`` on a glassroom gateway: ``await AsyncSandbox.create()``."""

    _envd_version: str = Sandbox._envd_version

    default_template = Sandbox.default_template

    def __init__(self, sandbox: Sandbox) -> None:
        self._sbx = sandbox
        self.files = AsyncFilesystem(sandbox.files)  # type: ignore[arg-type]
        self.commands = AsyncCommands(sandbox.commands)
        self.pty = AsyncPty(sandbox.pty)

    @property
    def sandbox_id(self) -> str:
        return self._sbx.sandbox_id

    @property
    def _envd_access_token(self) -> Optional[str]:
        """The sandbox's access token (see ``Sandbox._envd_access_token``)."""
        return self._sbx._envd_access_token

    @property
    def traffic_access_token(self) -> Optional[str]:
        """See ``Sandbox.traffic_access_token``."""
        return self._sbx.traffic_access_token

    @classmethod
    async def create(cls: Type[A], template: Optional[str] = None, timeout: Optional[int] = None,
                     metadata: Optional[Dict[str, str]] = None, envs: Optional[Dict[str, str]] = None, secure: bool = True,
                     allow_internet_access: bool = True, mcp: Optional[Dict[str, Any]] = None,
                     network: Optional[Dict[str, Any]] = None, lifecycle: Optional[Dict[str, Any]] = None,
                     **opts: Any) -> A:
        """Starts a sandbox (see ``Sandbox.create``)."""
        return cls(await asyncio.to_thread(functools.partial(
            Sandbox.create, template, timeout, metadata, envs, secure, allow_internet_access, mcp, network, lifecycle,
            **opts)))

    def __getattribute__(self, name: str) -> Any:
        if name == "connect":
            async def connect_obj(timeout: Optional[int] = None, **opts: Any) -> "AsyncSandbox":
                await asyncio.to_thread(self._sbx.connect, timeout, **opts)
                return self
            return connect_obj
        return object.__getattribute__(self, name)

    @classmethod
    async def connect(cls: Type[A], sandbox_id: str, timeout: Optional[int] = None, **opts: Any) -> A:
        """Attaches to a sandbox by id, resuming it if paused (``await sbx.connect()`` on an instance)."""
        return cls(await asyncio.to_thread(functools.partial(Sandbox.connect, sandbox_id, timeout, **opts)))

    @classmethod
    async def resume(cls: Type[A], sandbox_id: str, timeout: Optional[int] = None, **opts: Any) -> A:
        return cls(await asyncio.to_thread(functools.partial(Sandbox.resume, sandbox_id, timeout, **opts)))

    @classmethod
    def list(cls, query: Optional[SandboxQuery] = None, limit: Optional[int] = None, next_token: Optional[str] = None,
             order: Optional[SandboxListOrder] = None, **opts: Any) -> "AsyncSandboxPaginator":
        """The sandboxes of this key, a page at a time (``await p.next_items()``).
        As E2B's, not a coroutine; awaiting it still gives the paginator."""
        return AsyncSandboxPaginator(query=query, limit=limit, next_token=next_token, order=order, **opts)

    kill = _async_class_or_instance("kill")
    set_timeout = _async_class_or_instance("set_timeout")
    get_info = _async_class_or_instance("get_info")
    get_metrics = _async_class_or_instance("get_metrics")
    pause = _async_class_or_instance("pause")
    beta_pause = _async_class_or_instance("pause")
    update_network = _async_class_or_instance("update_network")
    create_snapshot = _async_class_or_instance("create_snapshot")
    fork = _async_fork()
    # As E2B's, not a coroutine: an AsyncSnapshotPaginator (``await p.next_items()``).
    list_snapshots = _snapshot_lister(lambda **kw: AsyncSnapshotPaginator(**kw))

    @classmethod
    async def delete_snapshot(cls, snapshot_id: str, **opts: Any) -> bool:
        """Deletes a snapshot: True if it was deleted, False if it was not found."""
        return await asyncio.to_thread(functools.partial(Sandbox.delete_snapshot, snapshot_id, **opts))

    async def __aenter__(self: A) -> A:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.kill()

    def get_host(self, port: int) -> str:
        """The host of the preview of ``port`` (see ``Sandbox.get_host``);
        not a coroutine, as E2B's is not."""
        return self._sbx.get_host(port)

    def download_url(self, path: str, user: Optional[str] = None,
                     use_signature_expiration: Optional[int] = None) -> str:
        """A signed download URL (see ``Sandbox.download_url``). Not a
        coroutine, as E2B's is not: it makes one short request."""
        return self._sbx.download_url(path, user, use_signature_expiration)

    def upload_url(self, path: Optional[str] = None, user: Optional[str] = None,
                   use_signature_expiration: Optional[int] = None) -> str:
        """A signed upload URL (see ``Sandbox.upload_url``); not a coroutine."""
        return self._sbx.upload_url(path, user, use_signature_expiration)

    async def is_running(self, request_timeout: Optional[float] = None) -> bool:
        return await asyncio.to_thread(self._sbx.is_running, request_timeout)

    async def create_code_context(self, cwd: Optional[str] = None, language: Optional[str] = None,
                                  request_timeout: Optional[float] = None) -> Context:
        return await asyncio.to_thread(self._sbx.create_code_context, cwd, language, request_timeout)

    async def list_code_contexts(self) -> List[Context]:
        return await asyncio.to_thread(self._sbx.list_code_contexts)

    async def remove_code_context(self, context: Union[Context, str]) -> None:
        await asyncio.to_thread(self._sbx.remove_code_context, getattr(context, "id", context))

    async def restart_code_context(self, context: Union[Context, str]) -> None:
        await asyncio.to_thread(self._sbx.restart_code_context, getattr(context, "id", context))

    async def run_code(self, code: str, language: Optional[str] = None, context: Optional[Context] = None,
                       on_stdout: Optional[AsyncOutputHandler] = None, on_stderr: Optional[AsyncOutputHandler] = None,
                       on_result: Optional[AsyncOutputHandler] = None, on_error: Optional[AsyncOutputHandler] = None,
                       envs: Optional[Dict[str, str]] = None, timeout: Optional[float] = None,
                       request_timeout: Optional[float] = None) -> Execution:
        """Runs code (see ``Sandbox.run_code``); callbacks may be coroutines."""
        loop = asyncio.get_running_loop()
        return await asyncio.to_thread(functools.partial(
            self._sbx.run_code, code, language=language, context=context, on_stdout=_on_loop(loop, on_stdout),
            on_stderr=_on_loop(loop, on_stderr), on_result=_on_loop(loop, on_result), on_error=_on_loop(loop, on_error),
            envs=envs, timeout=timeout, request_timeout=request_timeout))


class AsyncSandboxPaginator:
    """Pages of ``AsyncSandbox.list()``: ``while p.has_next: await p.next_items()``."""

    def __init__(self, **kw: Any) -> None:
        self._p = SandboxPaginator(**kw)

    def __await__(self) -> Any:
        """``await AsyncSandbox.list()`` (glassroom's earlier form) is the paginator itself."""
        if False:  # pragma: no cover - makes this a generator
            yield
        return self

    @property
    def has_next(self) -> bool:
        return self._p.has_next

    @property
    def next_token(self) -> Optional[str]:
        return self._p.next_token

    async def next_items(self, **opts: Any) -> List[SandboxInfo]:
        return await asyncio.to_thread(functools.partial(self._p.next_items, **opts))


class AsyncSnapshotPaginator:
    """Pages of ``AsyncSandbox.list_snapshots()``: ``while p.has_next: await p.next_items()``."""

    def __init__(self, **kw: Any) -> None:
        self._p = SnapshotPaginator(**kw)

    @property
    def has_next(self) -> bool:
        return self._p.has_next

    @property
    def next_token(self) -> Optional[str]:
        return self._p.next_token

    async def next_items(self, **opts: Any) -> List[SnapshotInfo]:
        return await asyncio.to_thread(functools.partial(self._p.next_items, **opts))


__all__ = ["AsyncSandbox", "AsyncFileStream", "AsyncFilesystem", "AsyncWatchHandle", "AsyncSandboxPaginator",
           "AsyncSnapshotPaginator"]
