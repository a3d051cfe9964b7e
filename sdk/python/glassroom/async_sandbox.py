"""``AsyncSandbox``: the asyncio twin of ``Sandbox``.

Each call runs the synchronous SDK in a worker thread
(``asyncio.to_thread``); callbacks, plain or ``async``, run on the event
loop, in order, before the output that follows them is read.
"""

import asyncio
import inspect
from typing import IO, Any, Awaitable, Callable, Dict, List, Mapping, Optional, Type, TypeVar, Union

from ._edit import EditResult
from .files import Filesystem
from .models import Context, EntryInfo, Execution, SandboxInfo, WriteInfo
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


class AsyncSandbox:
    """The asyncio twin of ``Sandbox``: ``await AsyncSandbox.create()``,
    ``await sbx.run_code(...)``, ``async with``."""

    def __init__(self, sandbox: Sandbox) -> None:
        """Wraps a connected ``Sandbox`` (use ``create`` or ``connect``)."""
        self._sbx = sandbox
        self.files = AsyncFilesystem(sandbox.files)

    @classmethod
    async def create(cls: Type[A], api_key: Optional[str] = None, base_url: Optional[str] = None, timeout: Optional[float] = None,
                     envs: Optional[Mapping[str, str]] = None, limits: Optional[Mapping[str, Any]] = None,
                     request_timeout: Optional[float] = None, language: Optional[str] = None) -> A:
        """Starts a new session (see ``Sandbox``)."""
        return cls(await asyncio.to_thread(Sandbox.create, api_key, base_url, timeout, envs, limits, request_timeout, language))

    @classmethod
    async def connect(cls: Type[A], sandbox_id: str, api_key: Optional[str] = None, base_url: Optional[str] = None,
                      request_timeout: Optional[float] = None) -> A:
        """Attaches to an existing session by id."""
        return cls(await asyncio.to_thread(Sandbox.connect, sandbox_id, api_key, base_url, request_timeout))

    @property
    def sandbox_id(self) -> str:
        return self._sbx.sandbox_id

    async def __aenter__(self: A) -> A:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.kill()

    async def kill(self) -> bool:
        return bool(await asyncio.to_thread(self._sbx.kill))

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
                       envs: Optional[Dict[str, str]] = None, cwd: Optional[str] = None) -> Execution:
        """Runs code (see ``Sandbox.run_code``); callbacks may be coroutines."""
        loop = asyncio.get_running_loop()

        def on_loop(cb: Optional[AsyncOutputHandler]) -> Optional[Callable[[Any], None]]:
            if cb is None:
                return None

            async def call(item: Any) -> None:
                r = cb(item)
                if inspect.isawaitable(r):
                    await r

            def wrapped(item: Any) -> None:
                asyncio.run_coroutine_threadsafe(call(item), loop).result()
            return wrapped

        kw: Dict[str, Any] = dict(language=language, context=context, on_stdout=on_loop(on_stdout), on_stderr=on_loop(on_stderr),
                                  on_result=on_loop(on_result), on_error=on_loop(on_error), timeout=timeout,
                                  request_timeout=request_timeout, envs=envs, cwd=cwd)
        return await asyncio.to_thread(self._sbx.run_code, code, **kw)
