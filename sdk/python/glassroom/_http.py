"""The HTTP side of the SDK: urllib, the API key, error mapping."""

import json
import os
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple, Union

from .exceptions import InvalidArgumentException, SandboxException, TimeoutException, from_status

DEFAULT_URL = "http://127.0.0.1:8888"
DEFAULT_REQUEST_TIMEOUT = 60.0

Body = Union[None, bytes, Iterable[bytes]]


class Connection:
    """Where and how to reach a gateway: base URL, API key, request timeout.

    The key comes from ``api_key`` or ``GLASSROOM_API_KEY``, the URL from
    ``base_url`` or ``GLASSROOM_URL`` (default http://127.0.0.1:8888).
    """

    def __init__(self, api_key: Optional[str] = None, base_url: Optional[str] = None,
                 request_timeout: Optional[float] = None) -> None:
        key = api_key or os.environ.get("GLASSROOM_API_KEY", "")
        if not key:
            raise InvalidArgumentException("an API key is required: pass api_key= or set GLASSROOM_API_KEY")
        if "\n" in key or "\r" in key:
            raise InvalidArgumentException("the API key contains a line break")
        url = (base_url or os.environ.get("GLASSROOM_URL") or DEFAULT_URL).rstrip("/")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidArgumentException(f"base URL {url!r} must be an http(s) URL with a host")
        self.api_key = key
        self.base_url = url
        self.request_timeout = DEFAULT_REQUEST_TIMEOUT if request_timeout is None else request_timeout

    @property
    def ws_url(self) -> str:
        """The base URL with a ws:// or wss:// scheme."""
        return "ws" + self.base_url[len("http"):]

    def open(self, method: str, path: str, *, query: Optional[Mapping[str, str]] = None, body: Body = None,
             json_body: Any = None, content_type: Optional[str] = None, timeout: Any = "default",
             ok: Tuple[int, ...] = (200,), headers: Optional[Mapping[str, str]] = None) -> Any:
        """Does one request and returns the open response (the caller closes it).

        An answer outside ``ok`` raises the matching SandboxException.
        ``timeout`` is seconds per socket operation (None: no limit).
        """
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {**(headers or {}), "Authorization": "Bearer " + self.api_key, "User-Agent": "glassroom-python"}
        data: Any = body
        if json_body is not None:
            data = json.dumps(json_body).encode()
            content_type = "application/json"
        if content_type:
            headers["Content-Type"] = content_type
        if isinstance(data, bytes):
            headers["Content-Length"] = str(len(data))
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        if timeout == "default":
            timeout = self.request_timeout
        try:
            resp = urllib.request.urlopen(req, timeout=timeout)
        except urllib.error.HTTPError as e:
            with e:
                if e.code in ok:  # urllib raises for some codes the caller accepts (e.g. 409 on HEAD)
                    return e
                raise _error(e.code, e.read(64 << 10)) from None
        except (socket.timeout, TimeoutError) as e:
            raise TimeoutException(f"{method} {path}: no answer within {timeout} s") from e
        except urllib.error.URLError as e:
            if isinstance(e.reason, (socket.timeout, TimeoutError)):
                raise TimeoutException(f"{method} {path}: no answer within {timeout} s") from e
            raise SandboxException(f"could not reach the glassroom gateway at {self.base_url}: {e.reason}") from e
        if resp.status not in ok:
            with resp:
                raise _error(resp.status, resp.read(64 << 10))
        return resp

    def call(self, method: str, path: str, *, ok: Tuple[int, ...] = (200,), **kw: Any) -> Any:
        """Does one request and returns its decoded JSON answer (None when empty)."""
        with self.open(method, path, ok=ok, **kw) as resp:
            try:
                raw = resp.read()
            except (socket.timeout, TimeoutError) as e:
                raise TimeoutException(f"{method} {path}: the answer stalled") from e
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise SandboxException(f"{method} {path}: the gateway answered something that is not JSON") from e


def _error(status: int, raw: bytes) -> SandboxException:
    code, message = "", raw.decode("utf-8", "replace").strip()[:512]
    try:
        err = json.loads(raw)["error"]
        code, message = str(err.get("code", "")), str(err.get("message", ""))
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    return from_status(status, code, message or f"HTTP {status}")


def quote_path(path: str) -> str:
    """Percent-encodes a workspace path, keeping '/' as the separator."""
    return urllib.parse.quote(path, safe="/")


def session_path(sandbox_id: str, *rest: str) -> str:
    return "/v1/sessions/" + urllib.parse.quote(sandbox_id, safe="") + "".join("/" + r for r in rest)


def json_object(value: Any) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise SandboxException("the gateway answered an unexpected shape")
    return value
