"""The errors a failed request raises.

A mafsbxfs reply to a failed request names an errno and, in ``type``, the
error class the Python ``maf-sandbox-docker`` backend raises for the same
failure::

    {"ok": false, "error": {"errno": "ENOENT", "type": "LookupError",
                            "message": "no sandbox named ..."}}

The client raises the class of that type: ``except LookupError`` catches
it, as does ``except mafsbx.MafsbxError`` (the base of every class here),
which also gives the errno, the type name and the whole reply. Each class
subclasses the built-in it stands for (``MafsbxFileNotFoundError`` *is a*
``FileNotFoundError``) under a name of its own, so ``from mafsbx.errors
import *`` shadows no built-in. The classes of the upstream backend that are
not built-ins (``SandboxTransferCapExceeded`` and the like) keep upstream's
names and subclass the built-in upstream derives them from.

A timeout has one class per meaning, all of them ``TimeoutError``s:

* :class:`ExecTimeout`: an exec's own ``timeout`` passed (the reply carries
  the command's output, ``timed_out``, and ``sandbox_disposed``: whether the
  sandbox went with it or was kept);
* :class:`EngineTimeout`: a call to the engine timed out (no command ran out
  of time);
* the built-in ``TimeoutError`` itself, never a :class:`MafsbxError`: a
  client-side wait gave up (``Job.wait(timeout)``) and the command runs on.

:class:`ExitCodeError` is not a failed request: ``exec(..., check=True)``
raises it for a command that ran and exited non-zero.

A type this module does not know falls back to the class of its errno
(``ENOENT``: ``MafsbxFileNotFoundError``, ``EACCES``: ``MafsbxPermissionError``,
...), and to ``MafsbxRuntimeError`` when the errno says nothing more. The
names of earlier versions (``mafsbx.errors.LookupError``, ...,
``mafsbx.errors.TimeoutError``) remain as aliases, outside ``__all__``.
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
    "MafsbxValueError",
    "MafsbxLookupError",
    "MafsbxRuntimeError",
    "MafsbxMemoryError",
    "MafsbxOSError",
    "MafsbxFileNotFoundError",
    "MafsbxFileExistsError",
    "MafsbxIsADirectoryError",
    "MafsbxNotADirectoryError",
    "MafsbxPermissionError",
    "MafsbxTimeoutError",
    "ExecTimeout",
    "EngineTimeout",
    "MafsbxBlockingIOError",
    "MafsbxInterruptedError",
    "SandboxTransferCapExceeded",
    "SandboxCapabilityNotSupported",
    "SandboxOsFamilyNotSupported",
    "SandboxEgressNotEnforced",
    "SandboxTransferLimitsNotPermitted",
    "ExitCodeError",
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


class MafsbxValueError(MafsbxError, builtins.ValueError):
    """A malformed request, a refused path (a link on it, an escape), a bad field."""


class MafsbxLookupError(MafsbxError, builtins.LookupError):
    """No such sandbox, or no such engine object."""


class MafsbxRuntimeError(MafsbxError, builtins.RuntimeError):
    """An engine failure, a conflict, an image that cannot be pulled."""


class MafsbxMemoryError(MafsbxError, builtins.MemoryError):
    """The mount's reply budget is spent (too much output held at once)."""


class MafsbxOSError(MafsbxError, builtins.OSError):
    """A system call failed (the errno says which failure)."""


class MafsbxFileNotFoundError(MafsbxError, builtins.FileNotFoundError):
    """The path is absent in the guest."""


class MafsbxFileExistsError(MafsbxError, builtins.FileExistsError):
    """The path exists already."""


class MafsbxIsADirectoryError(MafsbxError, builtins.IsADirectoryError):
    """A directory where a file is needed."""


class MafsbxNotADirectoryError(MafsbxError, builtins.NotADirectoryError):
    """A parent component is not a directory."""


class MafsbxPermissionError(MafsbxError, builtins.PermissionError):
    """Not allowed: another scope's sandbox, or what the guest itself may not do."""


class MafsbxTimeoutError(MafsbxError, builtins.TimeoutError):
    """A request timed out: the base of :class:`ExecTimeout` and :class:`EngineTimeout`."""


class ExecTimeout(MafsbxTimeoutError):
    """An exec's own ``timeout`` passed: the command was killed.

    ``result`` holds what it printed until then. ``sandbox_disposed`` says
    whether the sandbox went with it (the reply's ``sandbox_disposed``; a
    mount whose blocking exec reply does not name it disposed the sandbox).
    """

    @property
    def sandbox_disposed(self) -> bool:
        """Whether the timeout disposed the sandbox (false: it was kept)."""
        reply = self.reply or {}
        value = reply.get("sandbox_disposed")
        if isinstance(value, bool):
            return value
        # A mount that does not name it disposes on a blocking exec's
        # timeout (detached execs' replies always name it).
        return True


class EngineTimeout(MafsbxTimeoutError):
    """A call to the engine timed out (no command's own timeout passed)."""


class MafsbxBlockingIOError(MafsbxError, builtins.BlockingIOError):
    """The resource is temporarily unavailable."""


class MafsbxInterruptedError(MafsbxError, builtins.InterruptedError):
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


class ExitCodeError(builtins.Exception):
    """``exec(..., check=True)``: the command ran and exited non-zero.

    Not a failed request (so not a :class:`MafsbxError`): the command's
    result, as subprocess's ``CalledProcessError`` and E2B's
    ``CommandExitException`` carry it.

    Attributes:
        exit_code: the command's exit code.
        stdout, stderr: what it printed, as text (``result`` has the bytes).
        result: the whole :class:`~mafsbx.ExecResult`.
        command: the argv or command line that ran.
    """

    def __init__(self, command: Any, result: "ExecResult") -> None:
        self.command = command
        self.result = result
        self.exit_code = result.exit_code
        self.stdout = result.stdout
        self.stderr = result.stderr
        tail = result.stderr.strip().splitlines()[-1:] or result.stdout.strip().splitlines()[-1:]
        super().__init__(
            f"command {command!r} exited with {result.exit_code}" + (f": {tail[0]}" if tail else "")
        )

    def __reduce__(self) -> Any:
        return (type(self), (self.command, self.result))


# The names of earlier versions, which shadowed the built-ins: kept for code
# that spells them mafsbx.errors.X, out of __all__ so `import *` takes none.
ValueError = MafsbxValueError
LookupError = MafsbxLookupError
RuntimeError = MafsbxRuntimeError
MemoryError = MafsbxMemoryError
OSError = MafsbxOSError
FileNotFoundError = MafsbxFileNotFoundError
FileExistsError = MafsbxFileExistsError
IsADirectoryError = MafsbxIsADirectoryError
NotADirectoryError = MafsbxNotADirectoryError
PermissionError = MafsbxPermissionError
TimeoutError = MafsbxTimeoutError
BlockingIOError = MafsbxBlockingIOError
InterruptedError = MafsbxInterruptedError

# A reply's type (the upstream class name) to the class raised for it.
_BY_TYPE: Mapping[str, Type[MafsbxError]] = {
    "ValueError": MafsbxValueError,
    "LookupError": MafsbxLookupError,
    "RuntimeError": MafsbxRuntimeError,
    "MemoryError": MafsbxMemoryError,
    "OSError": MafsbxOSError,
    "FileNotFoundError": MafsbxFileNotFoundError,
    "FileExistsError": MafsbxFileExistsError,
    "IsADirectoryError": MafsbxIsADirectoryError,
    "NotADirectoryError": MafsbxNotADirectoryError,
    "PermissionError": MafsbxPermissionError,
    "TimeoutError": EngineTimeout,
    "BlockingIOError": MafsbxBlockingIOError,
    "InterruptedError": MafsbxInterruptedError,
    **{
        cls.__name__: cls
        for cls in (
            SandboxTransferCapExceeded,
            SandboxCapabilityNotSupported,
            SandboxOsFamilyNotSupported,
            SandboxEgressNotEnforced,
            SandboxTransferLimitsNotPermitted,
        )
    },
}

# The type name of each class, as a reply would name it.
_TYPE_OF: Mapping[Type[MafsbxError], str] = {
    **{cls: name for name, cls in _BY_TYPE.items()},
    ExecTimeout: "TimeoutError",
}

# The class of an errno, as Python itself picks it for an OSError.
_BY_ERRNO: Mapping[int, Type[MafsbxError]] = {
    _errno.ENOENT: MafsbxFileNotFoundError,
    _errno.EEXIST: MafsbxFileExistsError,
    _errno.EISDIR: MafsbxIsADirectoryError,
    _errno.ENOTDIR: MafsbxNotADirectoryError,
    _errno.EACCES: MafsbxPermissionError,
    _errno.EPERM: MafsbxPermissionError,
    _errno.ETIMEDOUT: EngineTimeout,
    _errno.EAGAIN: MafsbxBlockingIOError,
    _errno.EINTR: MafsbxInterruptedError,
    _errno.EINVAL: MafsbxValueError,
    _errno.ENOMEM: MafsbxMemoryError,
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
            MafsbxRuntimeError,
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
        MafsbxOSError if type_name == "" else MafsbxRuntimeError
    )
    if cls is EngineTimeout and reply.get("timed_out") is True:
        # the reply carries a command that ran out of its own time
        cls = ExecTimeout
    return _make(cls, number, type_name or _TYPE_OF.get(cls, "OSError"), message, dict(reply))


def error_from_oserror(err: builtins.OSError, what: str) -> MafsbxError:
    """The error for a system call that failed with no reply to explain it."""
    number = err.errno if err.errno else _errno.EIO
    cls = _BY_ERRNO.get(number, MafsbxOSError)
    message = f"{what}: {err.strerror or os.strerror(number)}"
    return _make(cls, number, _TYPE_OF.get(cls, "OSError"), message, None)
