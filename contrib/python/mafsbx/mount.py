"""A mafsbxfs mount: acquire, dispose and list its sandboxes.

The client does not mount anything: ``Mount`` names a mount point that
``mafsbxfs`` serves. As a context manager (``with Mount(path) as m:``) it is
closed at the end of the block, as a file or docker-py's ``DockerClient``:
the mount stays mounted and its sandboxes stay (``with`` on a
:class:`~mafsbx.Sandbox` disposes of one), but the closed ``Mount`` refuses
further requests with ``ValueError``, so a call made after the block by
mistake fails instead of reaching the mount.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Type, TypeVar, Union

from . import _wire
from .errors import error_from_oserror
from .sandbox import Disposal, Sandbox

__all__ = ["Mount", "SANDBOX_PREFIX"]

#: Every sandbox's name starts with this, followed by 12 hex digits.
SANDBOX_PREFIX = "maf-sandbox-docker-"


def _jsonable(value: Any) -> Any:
    """A request field as JSON can carry it (sets become sorted lists)."""
    if isinstance(value, (set, frozenset)):
        return sorted(_jsonable(v) for v in value)
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


_M = TypeVar("_M", bound="Mount")


class Mount:
    """A mafsbxfs mount point.

    Holds nothing but its path: every call is a transaction of its own on a
    file opened for it, so one ``Mount`` may serve any number of threads at
    once (the mount runs up to ``-o max_requests`` requests in parallel; more
    wait their turn).
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """``path`` is the mount point; ``FileNotFoundError`` if it is not a mafsbxfs mount."""
        self.path = Path(os.path.abspath(os.fspath(path)))
        #: Set by :meth:`close`: requests are refused from then on.
        self.closed = False
        if not os.path.isdir(self.path / ".ctl"):
            raise error_from_oserror(
                OSError(errno.ENOENT, "not a mafsbxfs mount (no .ctl directory)"), str(self.path)
            )

    @classmethod
    def unchecked(cls: Type[_M], path: Union[str, "os.PathLike[str]"]) -> _M:
        """The mount at ``path`` without looking at it (no file I/O: for an
        event loop; the first request tells whether it is a mount)."""
        self = cls.__new__(cls)
        self.path = Path(os.path.abspath(os.fspath(path)))
        self.closed = False
        return self

    def __repr__(self) -> str:
        return f"Mount({str(self.path)!r}{', closed' if self.closed else ''})"

    def __enter__(self: _M) -> _M:
        self._check_open()
        return self

    def __exit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: Any) -> None:
        self.close()

    def close(self) -> None:
        """Refuse further requests through this object. Nothing is unmounted
        and no sandbox is disposed: the object holds no open file (each call
        opens its own), so closing releases nothing but the right to call."""
        self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError(f"{self!r}: the Mount is closed (its with block ended)")

    def transaction(self, op: str, request: Mapping[str, Any]) -> Dict[str, Any]:
        """One raw request on ``.ctl/OP`` (``acquire``, ``dispose`` or ``exec``).

        Returns the reply of a request that succeeded; raises the error the
        reply names for one that failed (:mod:`mafsbx.errors`).
        """
        if op not in ("acquire", "dispose", "exec"):
            raise ValueError(f"no control file .ctl/{op} (want acquire, dispose or exec)")
        self._check_open()
        return _wire.transaction(str(self.path), op, request)

    def acquire(self, *, scope: str, thread: str, agent: str, kind: str, **fields: Any) -> Sandbox:
        """Get or create the sandbox of a key and kind.

        ``fields`` are the other acquire fields: ``image``, ``call``,
        ``work_dir``, ``capabilities``, ``egress``, ``egress_allow``,
        ``outputs``, ``env``, ``labels``, ``isolation_scope``,
        ``requires_os_family``, ``limits``, ``image_id``. An unknown one is
        refused with ``ValueError`` naming it. ``image`` may be left out when
        the mount was given ``-o image``.
        """
        req: Dict[str, Any] = {"scope": scope, "thread": thread, "agent": agent, "kind": kind}
        for key, value in fields.items():
            if key in req:
                raise TypeError(f"acquire: {key!r} given twice")
            req[key] = _jsonable(value)
        reply = self.transaction("acquire", req)
        name = reply.get("name")
        if not isinstance(name, str):
            raise error_from_oserror(OSError(errno.EIO, "the reply names no sandbox"), ".ctl/acquire")
        return Sandbox(self, name, reply)

    def dispose(
        self,
        *,
        scope: str,
        thread: str,
        agent: Optional[str] = None,
        kind: Optional[str] = None,
        call: Optional[str] = None,
    ) -> Disposal:
        """Dispose by key: the whole conversation ``(scope, thread)``, or with
        ``agent`` that agent's sandboxes (every kind, or ``kind``; every call,
        or ``call``). Disposing what is already gone is success (0 disposed).
        """
        req: Dict[str, Any] = {"scope": scope, "thread": thread}
        for key, value in (("agent", agent), ("kind", kind), ("call", call)):
            if value is not None:
                req[key] = value
        return Disposal.from_reply(self.transaction("dispose", req))

    def sandbox(self, name: str) -> Sandbox:
        """The sandbox named ``name`` (not checked: :meth:`Sandbox.status` tells)."""
        if not name.startswith(SANDBOX_PREFIX) or "/" in name:
            raise ValueError(f"{name!r} is not a sandbox name (want {SANDBOX_PREFIX}<12 hex>)")
        return Sandbox(self, name)

    def sandboxes(self) -> List[Sandbox]:
        """Every sandbox the mount shows (all of its scope, or all on the engine)."""
        self._check_open()
        try:
            names = sorted(n for n in os.listdir(self.path) if n.startswith(SANDBOX_PREFIX))
        except OSError as e:
            raise error_from_oserror(e, str(self.path)) from None
        return [Sandbox(self, n) for n in names]

    def declarations(self) -> Dict[str, Any]:
        """``.ctl/declarations``: isolation, capabilities, egress_modes, limits..."""
        self._check_open()
        return _wire.read_json(str(self.path / ".ctl" / "declarations"))

    def engine(self) -> Dict[str, Any]:
        """``.ctl/engine``: the endpoint, its kind, the file plane, the versions."""
        self._check_open()
        return _wire.read_json(str(self.path / ".ctl" / "engine"))
