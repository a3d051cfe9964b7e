"""``AsyncSandbox``: the asyncio twin of ``Sandbox``.

Each call runs the synchronous SDK in a worker thread
(``asyncio.to_thread``); callbacks, plain or ``async``, run on the event
loop, in order, before the output that follows them is read.
"""

import asyncio
import inspect
import threading
from typing import IO, Any, Awaitable, Callable, Dict, List, Mapping, Optional, Tuple, Type, TypeVar, Union

from ._edit import EditResult
from .commands import DEFAULT_TIMEOUT, CommandHandle, Commands, Pty, PtySize
from .files import Filesystem
from .exceptions import SandboxException
from .models import (CommandResult, Context, EntryInfo, Execution, Port, Preview, ProcessInfo, RestoreReport, SandboxInfo, Snapshot,
                     WriteInfo)
from .sandbox import Sandbox

A = TypeVar("A", bound="AsyncSandbox")
AsyncOutputHandler = Callable[[Any], Union[Any, Awaitable[Any]]]


class AsyncFilesystem:
    """The asyncio twin of ``Filesystem`` (``sbx.files``)."""

    def __init__(self, files: Filesystem) -> None:
        self._files = files

    async def read(self, path: str, format: str = "text", request_timeout: Optional[float] = None) -> Any:
        """Reads a file as text, bytes (bytearray) or a stream (a FileStream whose reads block: read it in a thread)."""
        return await asyncio.to_thread(self._files.read, path, format, request_timeout)  # type: ignore[call-overload]

    async def write(self, path: str, data: Union[str, bytes, bytearray, IO[Any]], request_timeout: Optional[float] = None) -> WriteInfo:
        return await asyncio.to_thread(self._files.write, path, data, request_timeout)

    async def list(self, path: str = ".", depth: int = 1) -> List[EntryInfo]:
        return await asyncio.to_thread(self._files.list, path, depth)

    async def exists(self, path: str) -> bool:
        return await asyncio.to_thread(self._files.exists, path)

    async def get_info(self, path: str) -> EntryInfo:
        return await asyncio.to_thread(self._files.get_info, path)

    async def remove(self, path: str) -> None:
        await asyncio.to_thread(self._files.remove, path)

    async def make_dir(self, path: str) -> bool:
        return await asyncio.to_thread(self._files.make_dir, path)

    async def edit(self, path: str, command: str, **kwargs: Any) -> EditResult:
        """Views or edits a text file (see ``Filesystem.edit``)."""
        return await asyncio.to_thread(lambda: self._files.edit(path, command, **kwargs))


def _on_loop(loop: asyncio.AbstractEventLoop, cb: Optional[AsyncOutputHandler]) -> Optional[Callable[[Any], None]]:
    """A plain callback, for a worker thread, that runs cb (plain or async) on loop and waits for it."""
    if cb is None:
        return None

    async def call(item: Any) -> None:
        r = cb(item)
        if inspect.isawaitable(r):
            await r

    def wrapped(item: Any) -> None:
        asyncio.run_coroutine_threadsafe(call(item), loop).result()
    return wrapped


class AsyncCommandHandle:
    """The asyncio twin of ``CommandHandle``: a command running in the
    background. Its output is read from the moment it starts, by a thread
    of its own, and handed to the callbacks given to ``run`` on the event
    loop; ``await handle.wait()`` returns the CommandResult (or raises
    CommandExitException / TimeoutException)."""

    def __init__(self, handle: CommandHandle, on_stdout: Optional[AsyncOutputHandler] = None,
                 on_stderr: Optional[AsyncOutputHandler] = None) -> None:
        self._handle = handle
        loop = asyncio.get_running_loop()
        self._done: "asyncio.Future[CommandResult]" = loop.create_future()
        out, err = _on_loop(loop, on_stdout), _on_loop(loop, on_stderr)

        def settle(fn: Callable[[Any], Any], value: Any) -> None:
            if not self._done.done():
                fn(value)

        def run() -> None:
            try:
                r = handle.wait(on_stdout=out, on_stderr=err)
                ok: Tuple[Callable[[Any], Any], Any] = (self._done.set_result, r)
            except BaseException as e:  # handed to whoever awaits wait()
                ok = (self._done.set_exception, e)
            try:
                loop.call_soon_threadsafe(settle, *ok)
            except RuntimeError:
                pass  # the loop has closed
        # Its own thread, not the default executor: a long background
        # command must not hold one of the few workers every to_thread shares.
        threading.Thread(target=run, name=f"glassroom-command-{handle.pid}", daemon=True).start()
        self._done.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved, if nobody waits

    @property
    def pid(self) -> int:
        return self._handle.pid

    @property
    def stdout(self) -> str:
        return self._handle.stdout

    @property
    def stderr(self) -> str:
        return self._handle.stderr

    @property
    def exit_code(self) -> Optional[int]:
        return self._handle.exit_code

    @property
    def error(self) -> Optional[str]:
        return self._handle.error

    async def wait(self) -> CommandResult:
        """Waits for the command to end (see ``CommandHandle.wait``)."""
        return await asyncio.shield(self._done)

    async def kill(self) -> bool:
        return await asyncio.to_thread(self._handle.kill)

    async def send_stdin(self, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        await asyncio.to_thread(self._handle.send_stdin, data, request_timeout)

    async def close_stdin(self, request_timeout: Optional[float] = None) -> None:
        await asyncio.to_thread(self._handle.close_stdin, request_timeout)

    async def disconnect(self) -> None:
        """Stops receiving the command's output (it keeps running); ``wait`` then raises SandboxException."""
        self._handle.disconnect()


class AsyncCommands:
    """The asyncio twin of ``Commands`` (``sbx.commands``)."""

    def __init__(self, commands: Commands) -> None:
        self._commands = commands

    async def run(self, cmd: str, background: Optional[bool] = None, envs: Optional[Dict[str, str]] = None,
                  user: Optional[str] = None, cwd: Optional[str] = None, on_stdout: Optional[AsyncOutputHandler] = None,
                  on_stderr: Optional[AsyncOutputHandler] = None, stdin: Union[None, bool, str, bytes] = None,
                  timeout: Optional[float] = DEFAULT_TIMEOUT, request_timeout: Optional[float] = None) -> Any:
        """Runs a command (see ``Commands.run``); callbacks may be coroutines.
        Foreground: returns its CommandResult. ``background=True``: an
        AsyncCommandHandle whose callbacks run as output arrives."""
        if background:
            h = await asyncio.to_thread(self._commands.run, cmd, True, envs, user, cwd, None, None, stdin, timeout,
                                        request_timeout)
            return AsyncCommandHandle(h, on_stdout, on_stderr)
        loop = asyncio.get_running_loop()
        return await asyncio.to_thread(self._commands.run, cmd, False, envs, user, cwd, _on_loop(loop, on_stdout),
                                       _on_loop(loop, on_stderr), stdin, timeout, request_timeout)

    async def connect(self, pid: int, on_stdout: Optional[AsyncOutputHandler] = None,
                      on_stderr: Optional[AsyncOutputHandler] = None) -> AsyncCommandHandle:
        """A handle on a command already started (see ``Commands.connect``)."""
        return AsyncCommandHandle(await asyncio.to_thread(self._commands.connect, pid), on_stdout, on_stderr)

    async def list(self, include_finished: bool = False, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        return await asyncio.to_thread(self._commands.list, include_finished, request_timeout)

    async def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        return await asyncio.to_thread(self._commands.kill, pid, request_timeout)

    async def send_stdin(self, pid: int, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        await asyncio.to_thread(self._commands.send_stdin, pid, data, request_timeout)

    async def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        await asyncio.to_thread(self._commands.close_stdin, pid, request_timeout)


def _as_bytes(cb: Any) -> Any:
    """A text output handler that hands ``cb`` (a PTY's on_data, maybe a coroutine) UTF-8 bytes."""
    if cb is None:
        return None
    if asyncio.iscoroutinefunction(cb):
        async def call_async(text: str) -> None:
            await cb(text.encode("utf-8"))
        return call_async
    return lambda text: cb(text.encode("utf-8"))


class AsyncPty:
    """The asyncio twin of ``Pty`` (``sbx.pty``); ``on_data`` may be a coroutine."""

    def __init__(self, pty: Pty) -> None:
        self._pty = pty

    async def create(self, size: PtySize, on_data: Any = None, user: Optional[str] = None, cwd: Optional[str] = None,
                     envs: Optional[Dict[str, str]] = None, timeout: Optional[float] = 60,
                     request_timeout: Optional[float] = None) -> AsyncCommandHandle:
        h = await asyncio.to_thread(self._pty.create, size, None, user, cwd, envs, timeout, request_timeout)
        return AsyncCommandHandle(h, _as_bytes(on_data), None)

    async def connect(self, pid: int, on_data: Any = None, timeout: Optional[float] = 60,
                      request_timeout: Optional[float] = None) -> AsyncCommandHandle:
        h = await asyncio.to_thread(self._pty.connect, pid, None, timeout, request_timeout)
        return AsyncCommandHandle(h, _as_bytes(on_data), None)

    async def send_stdin(self, pid: int, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        await asyncio.to_thread(self._pty.send_stdin, pid, data, request_timeout)

    async def resize(self, pid: int, size: PtySize, request_timeout: Optional[float] = None) -> None:
        await asyncio.to_thread(self._pty.resize, pid, size, request_timeout)

    async def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        return await asyncio.to_thread(self._pty.kill, pid, request_timeout)


class _AsyncSnapshotLister:
    """``await sbx.list_snapshots()`` (this sandbox's), or
    ``await AsyncSandbox.list_snapshots(sandbox_id=None, api_key=...)``."""

    def __get__(self, obj: Any, objtype: Any = None) -> Callable[..., Awaitable[List[Snapshot]]]:
        if obj is not None:
            async def of_this() -> List[Snapshot]:
                return await asyncio.to_thread(obj._sbx.list_snapshots)  # type: ignore[no-any-return]
            return of_this

        async def of_every(sandbox_id: Optional[str] = None, **kw: Any) -> List[Snapshot]:
            return await asyncio.to_thread(lambda: Sandbox.list_snapshots(sandbox_id, **kw))  # type: ignore[no-any-return]
        return of_every


class AsyncSandbox:
    """The asyncio twin of ``Sandbox``: ``await AsyncSandbox.create()``,
    ``await sbx.run_code(...)``, ``async with``."""

    def __init__(self, sandbox: Sandbox) -> None:
        """Wraps a connected ``Sandbox`` (use ``create`` or ``connect``)."""
        self._sbx = sandbox
        self.files = AsyncFilesystem(sandbox.files)
        self.commands = AsyncCommands(sandbox.commands)
        self.pty = AsyncPty(sandbox.pty)

    @classmethod
    async def create(cls: Type[A], api_key: Optional[str] = None, base_url: Optional[str] = None, timeout: Optional[float] = None,
                     envs: Optional[Mapping[str, str]] = None, limits: Optional[Mapping[str, Any]] = None,
                     request_timeout: Optional[float] = None, language: Optional[str] = None,
                     volumes: Optional[Mapping[str, str]] = None, snapshot: Optional[str] = None) -> A:
        """Starts a new session (see ``Sandbox``); with ``snapshot``, from that snapshot."""
        return cls(await asyncio.to_thread(lambda: Sandbox.create(
            api_key, base_url, timeout, envs, limits, request_timeout, language, volumes=volumes, snapshot=snapshot)))

    @classmethod
    async def connect(cls: Type[A], sandbox_id: str, api_key: Optional[str] = None, base_url: Optional[str] = None,
                      request_timeout: Optional[float] = None) -> A:
        """Attaches to an existing session by id."""
        return cls(await asyncio.to_thread(Sandbox.connect, sandbox_id, api_key, base_url, request_timeout))

    @property
    def sandbox_id(self) -> str:
        return self._sbx.sandbox_id

    @property
    def restore(self) -> Optional[RestoreReport]:
        """What a sandbox started from a snapshot or by ``fork`` got of it (see ``Sandbox.restore``)."""
        return self._sbx.restore

    async def pause(self, keep_memory: bool = True) -> None:
        """Pauses the session; ``keep_memory=False`` hibernates it (see ``Sandbox.pause``)."""
        await asyncio.to_thread(self._sbx.pause, keep_memory)

    async def resume(self) -> None:
        """Thaws a paused session or wakes a hibernated one (see ``Sandbox.resume``)."""
        await asyncio.to_thread(self._sbx.resume)

    async def create_snapshot(self, name: Optional[str] = None) -> Snapshot:
        """Captures the sandbox's files and variables (see ``Sandbox.create_snapshot``)."""
        return await asyncio.to_thread(self._sbx.create_snapshot, name)  # type: ignore[no-any-return]

    list_snapshots = _AsyncSnapshotLister()

    @classmethod
    async def get_snapshot(cls, snapshot_id: str, api_key: Optional[str] = None, base_url: Optional[str] = None,
                           request_timeout: Optional[float] = None) -> Snapshot:
        return await asyncio.to_thread(Sandbox.get_snapshot, snapshot_id, api_key, base_url, request_timeout)

    @classmethod
    async def delete_snapshot(cls, snapshot_id: str, api_key: Optional[str] = None, base_url: Optional[str] = None,
                              request_timeout: Optional[float] = None) -> bool:
        """Deletes a snapshot; False if there was none."""
        return await asyncio.to_thread(Sandbox.delete_snapshot, snapshot_id, api_key, base_url, request_timeout)

    async def fork(self: A, count: int = 1) -> "List[Union[A, SandboxException]]":
        """Starts ``count`` sandboxes from a capture of this one (see ``Sandbox.fork``)."""
        forks = await asyncio.to_thread(self._sbx.fork, count)
        return [f if isinstance(f, SandboxException) else type(self)(f) for f in forks]

    async def __aenter__(self: A) -> A:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.kill()

    async def kill(self) -> bool:
        return bool(await asyncio.to_thread(self._sbx.kill))

    async def ports(self) -> List[Port]:
        """The TCP ports the sandbox listens on (see ``Sandbox.ports``)."""
        return await asyncio.to_thread(self._sbx.ports)

    async def preview(self, port: int, expires: Optional[float] = None) -> Preview:
        """The preview of ``port`` (see ``Sandbox.preview``)."""
        return await asyncio.to_thread(self._sbx.preview, port, expires)

    def get_host(self, port: int) -> str:
        """The preview's host (E2B's ``get_host``); not a coroutine, as
        E2B's is not: it makes one short request."""
        return self._sbx.get_host(port)

    async def close(self) -> bool:
        return await self.kill()

    async def set_timeout(self, timeout: float) -> None:
        await asyncio.to_thread(self._sbx.set_timeout, timeout)

    async def get_info(self) -> SandboxInfo:
        return await asyncio.to_thread(self._sbx.get_info)  # type: ignore[no-any-return]

    async def is_running(self) -> bool:
        return await asyncio.to_thread(self._sbx.is_running)

    async def interrupt(self, context: Optional[Union[Context, str]] = None) -> None:
        await asyncio.to_thread(self._sbx.interrupt, context)

    async def restart(self) -> None:
        await asyncio.to_thread(self._sbx.restart)

    async def create_code_context(self, cwd: Optional[str] = None, language: Optional[str] = None,
                                  request_timeout: Optional[float] = None) -> Context:
        """Starts a new context (see ``Sandbox.create_code_context``)."""
        return await asyncio.to_thread(self._sbx.create_code_context, cwd, language, request_timeout)

    async def list_code_contexts(self) -> List[Context]:
        return await asyncio.to_thread(self._sbx.list_code_contexts)

    async def remove_code_context(self, context: Union[Context, str]) -> None:
        await asyncio.to_thread(self._sbx.remove_code_context, context)

    async def restart_code_context(self, context: Union[Context, str]) -> None:
        await asyncio.to_thread(self._sbx.restart_code_context, context)

    async def run_code(self, code: str, language: Optional[str] = None, context: Optional[Union[Context, str]] = None,
                       on_stdout: Optional[AsyncOutputHandler] = None, on_stderr: Optional[AsyncOutputHandler] = None,
                       on_result: Optional[AsyncOutputHandler] = None, on_error: Optional[AsyncOutputHandler] = None,
                       timeout: Optional[float] = None, request_timeout: Optional[float] = None,
                       envs: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
                       user_expressions: Optional[Mapping[str, str]] = None) -> Execution:
        """Runs code (see ``Sandbox.run_code``); callbacks may be coroutines."""
        loop = asyncio.get_running_loop()

        def on_loop(cb: Optional[AsyncOutputHandler]) -> Optional[Callable[[Any], None]]:
            return _on_loop(loop, cb)

        kw: Dict[str, Any] = dict(language=language, context=context, on_stdout=on_loop(on_stdout), on_stderr=on_loop(on_stderr),
                                  on_result=on_loop(on_result), on_error=on_loop(on_error), timeout=timeout,
                                  request_timeout=request_timeout, envs=envs, cwd=cwd, user_expressions=user_expressions)
        return await asyncio.to_thread(self._sbx.run_code, code, **kw)
