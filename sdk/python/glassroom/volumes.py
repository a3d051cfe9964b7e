"""Named volumes: a key's storage that outlives its sandboxes
(``Volume.create("data")``, then ``Sandbox(volumes={"data": "/home/user/data"})``)."""

import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Dict, List, Optional

from ._http import Connection
from .models import parse_time


@dataclass
class Volume:
    """A named volume of this API key: ``size_mb`` is its quota,
    ``used_bytes`` what it holds, ``mounts`` how many live sandboxes mount
    it. Sandboxes mount it at a path under /home/user; another key never
    sees it."""

    name: str
    size_mb: int
    used_bytes: int
    created_at: datetime
    mounts: int

    @classmethod
    def _of(cls, v: Dict[str, Any]) -> "Volume":
        return cls(name=str(v["name"]), size_mb=int(v.get("size_mb") or 0), used_bytes=int(v.get("used_bytes") or 0),
                   created_at=parse_time(v.get("created_at")), mounts=int(v.get("mounts") or 0))

    @classmethod
    def create(cls, name: str, size_mb: Optional[int] = None, api_key: Optional[str] = None,
               base_url: Optional[str] = None, **opts: Any) -> "Volume":
        """Makes a volume (E2B's ``Volume.create``): ``size_mb`` defaults to
        the gateway's (usually 1024); a name taken is a ConflictException."""
        body: Dict[str, Any] = {"name": name}
        if size_mb is not None:
            body["size_mb"] = int(size_mb)
        return cls._of(Connection(api_key, base_url).call("POST", "/v1/volumes", json_body=body, ok=(201,)))

    @classmethod
    def list(cls, api_key: Optional[str] = None, base_url: Optional[str] = None, **opts: Any) -> List["Volume"]:
        """This key's volumes, by name."""
        out = Connection(api_key, base_url).call("GET", "/v1/volumes")
        return [cls._of(v) for v in out.get("volumes") or []]

    @classmethod
    def get(cls, name: str, api_key: Optional[str] = None, base_url: Optional[str] = None, **opts: Any) -> "Volume":
        """One volume (NotFoundException when this key has none of that name)."""
        return cls._of(Connection(api_key, base_url).call("GET", "/v1/volumes/" + urllib.parse.quote(name, safe="")))

    @classmethod
    def destroy(cls, name: str, api_key: Optional[str] = None, base_url: Optional[str] = None, **opts: Any) -> bool:
        """Deletes a volume and what it holds (E2B's ``Volume.destroy``);
        False if there was none; a mounted one is a ConflictException."""
        from .exceptions import NotFoundException
        try:
            Connection(api_key, base_url).call("DELETE", "/v1/volumes/" + urllib.parse.quote(name, safe=""), ok=(204,))
        except NotFoundException:
            return False
        return True
