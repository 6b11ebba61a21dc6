"""The errors a failed request raises.

A mafsbxfs reply to a failed request names an errno and, in ``type``, the
error class the Python ``maf-sandbox-docker`` backend raises for the same
failure::

    {"ok": false, "error": {"errno": "ENOENT", "type": "LookupError",
                            "message": "no sandbox named ..."}}

The client raises exactly that class, with the message: ``except LookupError``
catches it, as does ``except mafsbx.MafsbxError`` (the base of every class
here), which also gives the errno, the type name and the whole reply. Each class
in this module subclasses the built-in of the same name, so
``mafsbx.errors.FileNotFoundError`` *is a* ``FileNotFoundError``. The classes
of the upstream backend that are not built-ins (``SandboxTransferCapExceeded``
and the like) subclass the built-in upstream derives them from.

A type this module does not know falls back to the class of its errno
(``ENOENT``: ``FileNotFoundError``, ``EACCES``: ``PermissionError``, ...), and
to ``RuntimeError`` when the errno says nothing more.
"""

from __future__ import annotations

import builtins
import errno as _errno
import os
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Type

if TYPE_CHECKING:
    from .sandbox import ExecResult

__all__ = [
    "MafsbxError",
    "ValueError",
    "LookupError",
    "RuntimeError",
    "MemoryError",
    "OSError",
    "FileNotFoundError",
    "FileExistsError",
    "IsADirectoryError",
    "NotADirectoryError",
    "PermissionError",
    "TimeoutError",
    "BlockingIOError",
    "InterruptedError",
    "SandboxTransferCapExceeded",
    "SandboxCapabilityNotSupported",
    "SandboxOsFamilyNotSupported",
    "SandboxEgressNotEnforced",
    "SandboxTransferLimitsNotPermitted",
    "error_from_reply",
    "error_from_oserror",
]


class MafsbxError(builtins.Exception):
    """The base of every error raised for a failed request.

    Attributes:
        errno: the errno of the failure (an ``int``, ``errno.ENOENT``...).
        errno_name: the same as the reply names it (``"ENOENT"``).
        error_type: the reply's ``type``: the upstream error class name.
        message: the reply's message (or the system's, when no reply came).
        reply: the whole reply (``None`` when none could be read).
        result: for an exec whose command ran and then failed (a timeout):
            what it printed, as an :class:`~mafsbx.ExecResult`; else ``None``.
    """

    errno: int
    errno_name: str
    error_type: str
    message: str
    reply: Optional[Dict[str, Any]]
    result: Optional["ExecResult"]


# Each shadows the built-in of its name inside this module only: the module
# refers to the built-ins as builtins.X.


class ValueError(MafsbxError, builtins.ValueError):
    """A malformed request, a refused path (a link on it, an escape), a bad field."""


class LookupError(MafsbxError, builtins.LookupError):
    """No such sandbox, or no such engine object."""


class RuntimeError(MafsbxError, builtins.RuntimeError):
    """An engine failure, a conflict, an image that cannot be pulled."""


class MemoryError(MafsbxError, builtins.MemoryError):
    """The mount's reply budget is spent (too much output held at once)."""


class OSError(MafsbxError, builtins.OSError):
    """A system call failed (the errno says which failure)."""


class FileNotFoundError(MafsbxError, builtins.FileNotFoundError):
    """The path is absent in the guest."""


class FileExistsError(MafsbxError, builtins.FileExistsError):
    """The path exists already."""


class IsADirectoryError(MafsbxError, builtins.IsADirectoryError):
    """A directory where a file is needed."""


class NotADirectoryError(MafsbxError, builtins.NotADirectoryError):
    """A parent component is not a directory."""


class PermissionError(MafsbxError, builtins.PermissionError):
    """Not allowed: another scope's sandbox, or what the guest itself may not do."""


class TimeoutError(MafsbxError, builtins.TimeoutError):
    """An engine call or a command timed out (``result.sandbox_disposed`` says whether the sandbox went)."""


class BlockingIOError(MafsbxError, builtins.BlockingIOError):
    """The resource is temporarily unavailable."""


class InterruptedError(MafsbxError, builtins.InterruptedError):
    """The call was interrupted."""


class SandboxTransferCapExceeded(MafsbxError, builtins.RuntimeError):
    """A file over a byte cap (``EFBIG``); upstream's class of that name."""


class SandboxCapabilityNotSupported(MafsbxError, builtins.RuntimeError):
    """A capability the backend does not serve (``EOPNOTSUPP``)."""


class SandboxOsFamilyNotSupported(MafsbxError, builtins.RuntimeError):
    """An OS family the engine does not run."""


class SandboxEgressNotEnforced(MafsbxError, builtins.PermissionError):
    """An egress mode the backend cannot enforce."""


class SandboxTransferLimitsNotPermitted(MafsbxError, builtins.PermissionError):
    """Transfer limits above the backend's ceilings."""


_BY_TYPE: Mapping[str, Type[MafsbxError]] = {
    cls.__name__: cls
    for cls in (
        ValueError,
        LookupError,
        RuntimeError,
        MemoryError,
        OSError,
        FileNotFoundError,
        FileExistsError,
        IsADirectoryError,
        NotADirectoryError,
        PermissionError,
        TimeoutError,
        BlockingIOError,
        InterruptedError,
        SandboxTransferCapExceeded,
        SandboxCapabilityNotSupported,
        SandboxOsFamilyNotSupported,
        SandboxEgressNotEnforced,
        SandboxTransferLimitsNotPermitted,
    )
}

# The class of an errno, as Python itself picks it for an OSError.
_BY_ERRNO: Mapping[int, Type[MafsbxError]] = {
    _errno.ENOENT: FileNotFoundError,
    _errno.EEXIST: FileExistsError,
    _errno.EISDIR: IsADirectoryError,
    _errno.ENOTDIR: NotADirectoryError,
    _errno.EACCES: PermissionError,
    _errno.EPERM: PermissionError,
    _errno.ETIMEDOUT: TimeoutError,
    _errno.EAGAIN: BlockingIOError,
    _errno.EINTR: InterruptedError,
    _errno.EINVAL: ValueError,
    _errno.ENOMEM: MemoryError,
}


def _errno_number(name: object, fallback: int) -> int:
    if isinstance(name, str) and name.startswith("E"):
        value = getattr(_errno, name, None)
        if isinstance(value, int):
            return value
    if isinstance(name, int) and name > 0:
        return name
    return fallback


def _make(
    cls: Type[MafsbxError],
    number: int,
    type_name: str,
    message: str,
    reply: Optional[Dict[str, Any]],
) -> MafsbxError:
    exc: MafsbxError
    if issubclass(cls, builtins.OSError):
        exc = cls(number, message)
    else:
        exc = cls(message)
    exc.errno = number
    exc.errno_name = _errno.errorcode.get(number, f"E{number}")
    exc.error_type = type_name
    exc.message = message
    exc.reply = reply
    exc.result = None
    return exc


def error_from_reply(
    reply: Mapping[str, Any], fallback_errno: int = _errno.EIO, what: str = "request"
) -> MafsbxError:
    """The error a failed reply names: its ``type``'s class, errno and message.

    ``fallback_errno`` is used when the reply names no errno (the errno the
    system call failed with, when there was one).
    """
    err = reply.get("error")
    if not isinstance(err, dict):
        return _make(
            RuntimeError,
            fallback_errno,
            "RuntimeError",
            f"{what}: the reply says it failed but gives no error",
            dict(reply),
        )
    number = _errno_number(err.get("errno"), fallback_errno)
    type_name = err.get("type")
    type_name = type_name if isinstance(type_name, str) and type_name else ""
    message = err.get("message")
    message = message if isinstance(message, str) and message else os.strerror(number)
    cls = _BY_TYPE.get(type_name) or _BY_ERRNO.get(number) or (
        OSError if type_name == "" else RuntimeError
    )
    return _make(cls, number, type_name or cls.__name__, message, dict(reply))


def error_from_oserror(err: builtins.OSError, what: str) -> MafsbxError:
    """The error for a system call that failed with no reply to explain it."""
    number = err.errno if err.errno else _errno.EIO
    cls = _BY_ERRNO.get(number, OSError)
    message = f"{what}: {err.strerror or os.strerror(number)}"
    return _make(cls, number, cls.__name__, message, None)
