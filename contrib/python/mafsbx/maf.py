"""A maf-sandbox backend over a mafsbxfs mount.

maf-sandbox (the sandbox router of Microsoft Agent Framework hosts) talks to
its backends through one protocol: ``SandboxBackend.acquire``, ``dispose``,
``dispose_scope``, ``declarations``, and sandboxes with ``exec``,
``write_file``, ``stat_file``, ``read_file``, ``remove`` and ``reclaim``.
:class:`MafsbxBackend` serves that protocol from a mount, with the Python
Docker backend's semantics and error classes, so a host swaps one for the
other by changing one constructor::

    from mafsbx.maf import MafsbxBackend
    backend = MafsbxBackend("/run/mafsbx")       # was: DockerSandboxBackend(...)

Both see and manage the same sandboxes (same names and labels on one engine).

This module needs the ``maf_sandbox`` package; the rest of :mod:`mafsbx`
does not, and ``import mafsbx`` never imports this module.

Two generations of the protocol are served, told apart at import
(:data:`PROTOCOL`): 0.26+ (one ``BackendDeclarations``, ``SandboxKey.call_id``,
``SandboxSpec.isolation_scope``; ``dispose`` returns a ``DisposalFailure`` or
None, ``dispose_scope`` a ``ScopePurge``) and the published 0.21 (the
declarations as the backend's ``capabilities``, ``limits``, ``egress_modes``
and ``os_families`` attributes, which the backend has under 0.26+ too;
``dispose`` returns None and ``dispose_scope`` the number disposed, a failure
being logged). A sandbox's ``container_name`` is its ``name``, as the Docker
backend's sandboxes have it.

How each call is served:

* ``exec`` is the mount's exec with ``"on_timeout": "dispose"``: a timeout
  raises ``TimeoutError`` and disposes the sandbox, as upstream (the mount
  alone would kill the command and keep the sandbox). The mount's
  ``-o max_exec_timeout`` (24 h) is the ceiling: a longer ``timeout`` is
  refused with ``ValueError``.
  Output past the mount's cap (8 MiB per stream) raises ``RuntimeError``
  rather than returning a cut result. ``TimeoutError`` comes only from the
  exec's own bound (the client's ``ExecTimeout``); an engine call the mount
  gave up on (``EngineTimeout``) is a ``RuntimeError``. The ``timeout`` goes
  to the mount as given (fractions too): any value the mount takes is the
  command's bound.
* ``stat_file`` and ``read_file`` read ``MOUNT/NAME/work`` (or ``root`` for a
  guest path outside the work dir), where the mount refuses a link anywhere on
  the path; the final component is described by ``lstat``, as upstream.
* ``list_dir`` (``FILES_LIST``, declared by the adapter: the mount lists
  directories on both planes; it is not asked of the mount at acquire) lists
  the same directories through a descriptor opened without following a link:
  the directory and its parents must be real directories (a link is
  ``ValueError``), and an entry that is a link is listed as one.
* ``write_file`` under the work dir writes through ``work/`` (the mount
  writes at the guest's authority and replaces the file atomically),
  creating missing directories (0755); a target outside the work dir, which
  the mount shows read-only, is written by the guest's own ``cat`` after the
  same checks (at most 700 KiB that way).
* ``remove`` checks the path through the mount, then runs the guest's own
  ``rm`` at the guest's authority, as upstream does when it cannot prove the
  path is root's (the mount shows no guest ownership).
* ``reclaim`` is the mount's reclaim (``.ctl/dispose`` with ``reclaim``); the
  directory must lie under the work dir.
* ``reap`` runs ``mafsbx reap --json`` against the mount's engine.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import errno
import inspect
import json
import logging
import math
import os
import posixpath
import shutil
import stat
import subprocess
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, NoReturn, Optional, Sequence, Tuple, Type, TypeVar, Union, cast

from .errors import EngineTimeout, ExecTimeout, MafsbxError
from .mount import Mount
from .sandbox import DisposalFailure as _MountDisposalFailure
from .sandbox import ExecResult as MountExecResult
from .sandbox import Sandbox as MountSandbox


def _fold_failures(failures: Sequence[Any]) -> Optional[Any]:
    """0.21 has no fold_disposal_failures (its disposals report no failure):
    the failures of one request as one, for a log and for reap's result."""
    if not failures:
        return None
    if len(failures) == 1:
        return failures[0]
    return _MountDisposalFailure(failures[0].code, "; ".join(f.detail for f in failures))


try:
    import maf_sandbox
    from maf_sandbox import (
        Capability,
        Egress,
        EntryKind,
        ExecResult,
        Isolation,
        OsFamily,
        SandboxEntry,
        SandboxKey,
        SandboxLimits,
        SandboxSpec,
        SandboxTransferCapExceeded,
        TransferLimits,
    )
except ImportError as _missing:  # pragma: no cover - depends on the host
    raise ImportError(
        "mafsbx.maf adapts a mafsbxfs mount to maf-sandbox's backend protocol and needs "
        "the maf_sandbox package (maf-sandbox), which is not installed; the rest of "
        f"mafsbx works without it ({_missing})"
    ) from _missing

# Two generations of the protocol are in use. 0.26+ (the seed's target) has
# one BackendDeclarations object, SandboxKey.call_id, SandboxSpec.isolation_scope,
# and disposals that return what failed; the published 0.21 has the four
# declarations as backend attributes, none of those fields, and a
# dispose_scope that returns a count. The names 0.21 lacks are read here
# once; the type checker sees the 0.26+ ones.
if TYPE_CHECKING:
    from maf_sandbox import (
        BackendDeclarations,
        DisposalFailure,
        IsolationScope,
        ScopePurge,
        fold_disposal_failures,
    )
else:
    BackendDeclarations = getattr(maf_sandbox, "BackendDeclarations", None)
    IsolationScope = getattr(maf_sandbox, "IsolationScope", None)
    ScopePurge = getattr(maf_sandbox, "ScopePurge", None)
    DisposalFailure = getattr(maf_sandbox, "DisposalFailure", None) or _MountDisposalFailure
    fold_disposal_failures = getattr(maf_sandbox, "fold_disposal_failures", None) or _fold_failures

#: Which protocol the installed maf_sandbox speaks: ``"0.26"`` (a
#: ``declarations`` object) or ``"0.21"`` (declarations as attributes).
PROTOCOL = "0.26" if BackendDeclarations is not None else "0.21"


__all__ = ["BACKEND_NAME", "PROTOCOL", "MafsbxBackend", "MafsbxSandbox", "ReapResult"]

#: The name the backend registers under by default: the Python Docker
#: backend's, since both serve the same sandboxes of the same engine.
BACKEND_NAME = "docker"

#: The guest path a spec without ``work_dir`` gets.
DEFAULT_WORK_DIR = "/maf-sandbox/work"

# A write outside the work dir travels as an exec's stdin, inside a request
# of at most 1 MiB (base64: 4/3 of the bytes).
_EXEC_WRITE_MAX = 700 * 1024

_E = TypeVar("_E", bound=enum.Enum)

_log = logging.getLogger(__name__)


# ---- helpers -----------------------------------------------------------------


def _text(value: Any) -> str:
    """An enum member's value, or the string itself."""
    return str(value.value) if isinstance(value, enum.Enum) else str(value)


def _members(cls: Type[_E], values: Any) -> "frozenset[_E]":
    """The members of ``cls`` among ``values`` (names this protocol version lacks are skipped)."""
    out = set()
    for v in values if isinstance(values, list) else []:
        try:
            out.add(cls(v))
        except ValueError:
            continue
    return frozenset(out)


def _parameters(cls: type) -> "frozenset[str]":
    if dataclasses.is_dataclass(cls):
        return frozenset(f.name for f in dataclasses.fields(cls))
    try:
        return frozenset(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return frozenset()


def _construct(cls: Any, **fields: Any) -> Any:
    """``cls(**fields)`` without the fields this version of ``cls`` does not take."""
    names = _parameters(cls)
    return cls(**{k: v for k, v in fields.items() if not names or k in names})


def _exec_result(out: bytes, err: bytes, code: int) -> ExecResult:
    """maf_sandbox's ExecResult: from the exact bytes where it keeps them (0.22),
    else as text (UTF-8 with replacement, as older versions decode)."""
    make = cast(Any, ExecResult)
    if "stdout_bytes" in _parameters(ExecResult):
        return cast(ExecResult, make(stdout_bytes=out, stderr_bytes=err, exit_code=code))
    return cast(ExecResult, make(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), code))


def _reraise(exc: MafsbxError) -> NoReturn:
    """Raise the maf_sandbox class a reply's ``type`` names, where maf_sandbox
    has it (``SandboxCapabilityNotSupported``...), else ``exc`` itself (a
    subclass of the built-in the type names)."""
    cls = getattr(maf_sandbox, exc.error_type, None)
    if isinstance(cls, type) and issubclass(cls, Exception) and not isinstance(exc, cls):
        try:
            mapped = cls(exc.message)
        except TypeError:
            raise exc from None
        raise mapped from exc
    raise exc


def _disposal_code(exc: BaseException) -> str:
    number = getattr(exc, "errno", None)
    if number in (errno.ENOTCONN, errno.ECONNREFUSED, errno.ENOENT, errno.EHOSTUNREACH):
        return "unreachable"
    if number == errno.ETIMEDOUT:
        return "timeout"
    if number in (errno.EACCES, errno.EPERM):
        return "refused"
    return "unknown"


def _failures(reply: Mapping[str, Any], message_key: str) -> List[DisposalFailure]:
    out = []
    for f in reply.get("failures") or []:
        if isinstance(f, dict):
            out.append(DisposalFailure(str(f.get("code") or "unknown"), str(f.get(message_key) or "")))
    return out


def _single_rooted(path: str) -> str:
    """POSIX normpath with exactly one leading slash (normpath keeps two)."""
    p = posixpath.normpath(path)
    return "/" + p.lstrip("/") if p.startswith("//") else p


def _inside(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _confine(path: str, wd: str) -> str:
    """The guest path ``path`` names under the working directory ``wd``
    (the name check: pure text). ValueError for a backslash or an escape."""
    if not isinstance(path, str):
        raise TypeError(f"path must be str, not {type(path).__name__}")
    if "\\" in path:
        raise ValueError(f"{path!r}: a backslash is refused")
    if "\0" in path:
        raise ValueError(f"{path!r}: a NUL byte is refused")
    resolved = _single_rooted(posixpath.join(wd, path))
    if not _inside(resolved, wd):
        raise ValueError(f"{path!r} resolves outside working directory {wd}")
    return resolved


def _special(host: Path, st: os.stat_result) -> bool:
    """Whether a "regular" entry is the mount's stand-in for a fifo, socket or
    device: an empty file with mode 0000 whose open is refused with EPERM (a
    real empty file of mode 0000 opens: the mount reads at its own authority)."""
    if not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) != 0 or st.st_size != 0:
        return False
    try:
        os.close(os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC))
    except OSError as e:
        return e.errno == errno.EPERM
    return False


def _describe(st: Optional[os.stat_result], rel: str, host: Path) -> Optional[SandboxEntry]:
    if st is None:
        return None
    if stat.S_ISREG(st.st_mode) and not _special(host, st):
        return SandboxEntry(path=rel, kind=EntryKind.FILE, size_bytes=st.st_size)
    if stat.S_ISDIR(st.st_mode):
        kind = EntryKind.DIRECTORY
    elif stat.S_ISLNK(st.st_mode):
        kind = EntryKind.SYMLINK
    else:
        kind = EntryKind.OTHER
    return SandboxEntry(path=rel, kind=kind, size_bytes=None)


def _file_error(e: OSError, verb: str, path: str) -> BaseException:
    """The protocol's class for a file call the mount refused."""
    n = e.errno
    if n == errno.ELOOP:
        return ValueError(f"{path!r}: a directory on the path is a link rather than a real directory")
    if n == errno.ENOTDIR:
        return NotADirectoryError(n, f"{path!r}: a parent is not a directory")
    if n == errno.ENOENT:
        return FileNotFoundError(n, f"{path!r}: no such file in the sandbox")
    if n == errno.ETIMEDOUT:
        return TimeoutError(n, f"could not {verb} {path!r}: the engine call timed out")
    if n == errno.EFBIG:
        return SandboxTransferCapExceeded(f"{path!r} is over the mount's cap (-o max_read/max_write)")
    if n in (errno.EACCES, errno.EPERM):
        return PermissionError(n, f"could not {verb} {path!r}: the guest itself may not")
    if n == errno.EXDEV:
        return OSError(n, f"{path!r} crosses into another mount of the guest, which is not served")
    return RuntimeError(f"could not {verb} {path!r}: {e.strerror or os.strerror(n or errno.EIO)}")


def _exec_failure(exc: MafsbxError, name: str, timeout: float) -> BaseException:
    """What a failed exec raises. ``TimeoutError`` only when the exec's own
    bound expired (the client's ``ExecTimeout``: the reply says ``timed_out``):
    the protocol reserves it for that. An engine call the mount gave up on
    (``EngineTimeout``) is a ``RuntimeError``, so a caller never reads it as its
    budget spent. Anything else is raised as it is."""
    if isinstance(exc, ExecTimeout):
        return TimeoutError(errno.ETIMEDOUT, f"exec in {name} ran past its timeout of {timeout:g} s")
    if isinstance(exc, EngineTimeout):
        return RuntimeError(f"exec in {name}: {exc.message} (the engine's timeout, not the exec's)")
    return exc


def _is_link(st: Optional[os.stat_result]) -> bool:
    return st is not None and stat.S_ISLNK(st.st_mode)


# ---- the sandbox ---------------------------------------------------------------


class MafsbxSandbox:
    """One sandbox, as maf-sandbox's ``Sandbox`` protocol.

    Attributes: ``name`` (the container name), ``instance_id``, ``uid`` and
    ``gid`` (None when the image's user did not resolve), ``work_dir``, and
    ``handle``, the :class:`mafsbx.Sandbox` underneath.
    """

    def __init__(self, handle: MountSandbox, work_dir: str) -> None:
        self.handle = handle
        self.name = handle.name
        self.instance_id = handle.id
        self.uid = handle.uid
        self.gid = handle.gid
        self.work_dir = _single_rooted(work_dir)

    def __repr__(self) -> str:
        return f"MafsbxSandbox({self.name!r})"

    @property
    def container_name(self) -> str:
        """The container's name, as the Docker backend's sandboxes call it."""
        return self.name

    # -- paths

    def _wd(self, working_directory: str) -> str:
        if not isinstance(working_directory, str):
            raise TypeError(f"working_directory must be str, not {type(working_directory).__name__}")
        if "\\" in working_directory:
            raise ValueError(f"working directory {working_directory!r}: a backslash is refused")
        return _single_rooted(posixpath.join(self.work_dir, working_directory))

    def _host(self, guest: str) -> Path:
        """Where the mount shows guest path ``guest``: under work/ or root/."""
        if _inside(guest, self.work_dir):
            rel = posixpath.relpath(guest, self.work_dir)
            return self.handle.work if rel == "." else self.handle.work / rel
        rest = guest.lstrip("/")
        return self.handle.root / rest if rest else self.handle.root

    def _lstat(self, guest: str, verb: str, path: str) -> Optional[os.stat_result]:
        try:
            return os.lstat(self._host(guest))
        except FileNotFoundError:
            return None
        except OSError as e:
            raise _file_error(e, verb, path) from None

    def _run(self, command: Sequence[str], stdin: Optional[bytes] = None) -> MountExecResult:
        try:
            return self.handle.exec(command, cwd="/", stdin=stdin)
        except MafsbxError as e:
            _reraise(e)

    # -- exec

    async def exec(
        self, command: Union[str, Sequence[str]], *, working_directory: str, timeout: float
    ) -> ExecResult:
        """Run ``command`` (argv, or a ``sh -c`` string) in ``working_directory``.

        ``TimeoutError`` means the caller's ``timeout`` passed, and nothing
        else (an engine call that timed out is a ``RuntimeError``); the
        sandbox is then disposed, as upstream.
        """
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        cwd = self._wd(working_directory)

        def run() -> MountExecResult:
            try:
                # upstream's semantics: a timeout disposes the sandbox
                return self.handle.exec(command, cwd=cwd, timeout=timeout, on_timeout="dispose")
            except MafsbxError as e:
                _reraise(e)

        try:
            r = await asyncio.to_thread(run)
        except MafsbxError as e:
            mapped = _exec_failure(e, self.name, timeout)
            if mapped is e:
                raise
            raise mapped from e
        if r.truncated:
            raise RuntimeError(
                f"exec in {self.name}: the output passed the mount's cap of 8 MiB per stream "
                f"(the command ran to its end, exit code {r.exit_code})"
            )
        return _exec_result(r.stdout_bytes, r.stderr_bytes, r.exit_code)

    async def run_code(self, code: str, *, timeout: float) -> ExecResult:
        raise NotImplementedError("this backend does not declare RUN_CODE: use exec")

    async def list_dir(self, path: str, *, working_directory: str) -> Tuple[SandboxEntry, ...]:
        """The entries directly under the directory ``path``, sorted by name; a
        link is listed as a link; the directory itself and every parent must be
        real directories (a link there is refused with ``ValueError``)."""
        return await asyncio.to_thread(self._list_dir, path, working_directory)

    def _list_dir(self, path: str, working_directory: str) -> Tuple[SandboxEntry, ...]:
        wd = self._wd(working_directory)
        guest = _confine(path, wd)
        st = self._lstat(guest, "list", path)
        if _is_link(st):
            raise ValueError(f"{path!r} is a link rather than a real directory: a listing never follows one")
        if st is None:
            raise FileNotFoundError(errno.ENOENT, f"{path!r}: no such directory in the sandbox")
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, f"{path!r} is not a directory")
        host = self._host(guest)
        # Listed through a descriptor opened without following: a link put in
        # its place after the lstat is refused rather than listed.
        try:
            fd = os.open(host, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise ValueError(f"{path!r} was replaced by a link or a file while being listed") from None
            raise _file_error(e, "list", path) from None
        try:
            with os.scandir(fd) as it:
                found = [(e.name, e.stat(follow_symlinks=False)) for e in it]
        except OSError as e:
            raise _file_error(e, "list", path) from None
        finally:
            os.close(fd)
        base = posixpath.relpath(guest, wd)
        out = []
        for name, est in sorted(found):
            rel = name if base == "." else posixpath.join(base, name)
            entry = _describe(est, rel, host / name)
            if entry is not None:
                out.append(entry)
        return tuple(out)

    async def reset(self, *, timeout: float) -> None:
        raise NotImplementedError("this backend does not declare SNAPSHOT")

    # -- the file plane

    async def stat_file(self, path: str, *, working_directory: str) -> Optional[SandboxEntry]:
        """Describe ``path`` (a final link is described, not followed), or None."""
        return await asyncio.to_thread(self._stat_file, path, working_directory)

    def _stat_file(self, path: str, working_directory: str) -> Optional[SandboxEntry]:
        wd = self._wd(working_directory)
        guest = _confine(path, wd)
        st = self._lstat(guest, "stat", path)
        if guest == wd and _is_link(st):
            raise ValueError(f"working directory {wd} is a link rather than a real directory")
        return _describe(st, posixpath.relpath(guest, wd), self._host(guest))

    async def read_file(self, path: str, *, working_directory: str, max_bytes: int) -> bytes:
        """The bytes of the regular file ``path``; over ``max_bytes`` is refused."""
        return await asyncio.to_thread(self._read_file, path, working_directory, max_bytes)

    def _read_file(self, path: str, working_directory: str, max_bytes: int) -> bytes:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative int, not {max_bytes!r}")
        wd = self._wd(working_directory)
        guest = _confine(path, wd)
        st = self._lstat(guest, "read", path)
        if guest == wd and _is_link(st):
            raise ValueError(f"working directory {wd} is a link rather than a real directory")
        if st is None:
            raise FileNotFoundError(errno.ENOENT, f"{path!r}: no such file in the sandbox")
        if not stat.S_ISREG(st.st_mode) or _special(self._host(guest), st):
            raise OSError(f"{path!r} is not a regular file and is refused")
        if st.st_size > max_bytes:
            raise SandboxTransferCapExceeded(f"{path!r} is {st.st_size} bytes and the caller allowed {max_bytes}")
        host = self._host(guest)
        try:
            fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            if e.errno == errno.ELOOP and _is_link(self._lstat(guest, "read", path)):
                raise OSError(f"{path!r} is not a regular file and is refused") from None
            raise _file_error(e, "read", path) from None
        try:
            chunks: List[bytes] = []
            have = 0
            while have <= max_bytes:
                chunk = os.read(fd, min(1 << 20, max_bytes + 1 - have))
                if not chunk:
                    break
                chunks.append(chunk)
                have += len(chunk)
        except OSError as e:
            raise _file_error(e, "read", path) from None
        finally:
            os.close(fd)
        if have > max_bytes:
            raise SandboxTransferCapExceeded(f"{path!r} grew past the {max_bytes} bytes the caller allowed")
        return b"".join(chunks)

    async def write_file(self, path: str, content: Union[str, bytes], *, working_directory: str) -> None:
        """Write ``content`` (str as UTF-8) to ``path``, creating parents (0755)."""
        await asyncio.to_thread(self._write_file, path, content, working_directory)

    def _write_file(self, path: str, content: Union[str, bytes], working_directory: str) -> None:
        if isinstance(content, str):
            data = content.encode("utf-8")
        elif isinstance(content, (bytes, bytearray, memoryview)):
            data = bytes(content)
        else:
            raise TypeError(f"content must be str or bytes, not {type(content).__name__}")
        wd = self._wd(working_directory)
        guest = _confine(path, wd)
        if guest == wd:
            raise ValueError(f"{path!r}: refusing to write over the working directory itself")
        if _inside(guest, self.work_dir):
            self._write_in_work(guest, data, path)
        else:
            self._write_by_guest(guest, data, path)

    def _check_dir(self, st: Optional[os.stat_result], guest_dir: str, path: str) -> None:
        if st is None:
            return
        if stat.S_ISLNK(st.st_mode):
            raise ValueError(f"{path!r}: {guest_dir} is a link rather than a real directory")
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, f"{path!r}: {guest_dir} is not a directory")

    def _check_leaf(self, guest: str, path: str) -> None:
        st = self._lstat(guest, "write", path)
        if _is_link(st):
            raise ValueError(f"{path!r} names a link: a write never replaces or follows one")
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise RuntimeError(f"could not write {path!r}: a directory stands there")

    def _write_in_work(self, guest: str, data: bytes, path: str) -> None:
        parts = posixpath.relpath(guest, self.work_dir).split("/")
        cur = self.work_dir
        for part in parts[:-1]:
            cur = posixpath.join(cur, part)
            st = self._lstat(cur, "write", path)
            if st is None:
                try:
                    os.mkdir(self._host(cur), 0o755)
                except FileExistsError:
                    st = self._lstat(cur, "write", path)
                except OSError as e:
                    raise _file_error(e, "write", path) from None
            self._check_dir(st, cur, path)
        self._check_leaf(guest, path)
        host = self._host(guest)
        try:
            fd = os.open(host, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise _file_error(e, "write", path) from None
        failure: Optional[OSError] = None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError as e:
            failure = e
        # The engine plane sends the file on close, and close() says whether it landed.
        try:
            os.close(fd)
        except OSError as e:
            failure = failure or e
        if failure is not None:
            raise _file_error(failure, "write", path) from None

    def _write_by_guest(self, guest: str, data: bytes, path: str) -> None:
        parent = posixpath.dirname(guest)
        cur = ""
        for part in [p for p in parent.split("/") if p]:
            cur = f"{cur}/{part}"
            st = self._lstat(cur, "write", path)
            if st is None:
                break
            self._check_dir(st, cur, path)
        self._check_leaf(guest, path)
        if len(data) > _EXEC_WRITE_MAX:
            raise RuntimeError(
                f"could not write {path!r}: outside the work dir {self.work_dir} a write goes "
                f"through the guest's own cat, at most {_EXEC_WRITE_MAX} bytes ({len(data)} given)"
            )
        r = self._run(["sh", "-c", 'umask 022 && mkdir -p -- "$1" && cat > "$2"', "sh", parent, guest], data)
        if r.exit_code != 0:
            raise RuntimeError(f"could not write {path!r}: {r.stderr.strip()} (exit {r.exit_code})")

    async def remove(self, path: str, *, working_directory: str, recursive: bool = False) -> None:
        """Delete ``path`` (everything under it when ``recursive``); absent is success;
        a link is removed, never followed; a directory needs ``recursive``."""
        await asyncio.to_thread(self._remove, path, working_directory, recursive)

    def _remove(self, path: str, working_directory: str, recursive: bool) -> None:
        wd = self._wd(working_directory)
        guest = _confine(path, wd)
        if guest == wd:
            raise ValueError(f"{path!r}: refusing to remove the working directory itself")
        parent = posixpath.dirname(guest)
        self._check_dir(self._lstat(parent, "remove", path), parent, path)
        r = self._run(["rm", "-rf" if recursive else "-f", "--", guest])
        if r.exit_code != 0:
            raise OSError(f"could not remove {path!r}: rm exited {r.exit_code} \u2014 {r.stderr.strip()}")

    async def reclaim(self, directory: str, *, working_directory: str, timeout: float) -> None:
        """Remove ``directory`` and everything under it (the framework's cleanup)."""
        wd = self._wd(working_directory)
        if "\\" in directory:
            raise ValueError(f"{directory!r}: a backslash is refused")
        target = _single_rooted(posixpath.join(wd, directory))
        if not posixpath.isabs(directory) and not _inside(target, wd):
            raise ValueError(f"{directory!r} resolves outside working directory {wd}")
        if target == wd:
            raise ValueError(f"{directory!r}: refusing to reclaim the working directory itself")
        if len([p for p in target.split("/") if p]) < 2:
            raise ValueError(f"{directory!r}: fewer than two components below the root")

        def run() -> None:
            try:
                self.handle.mount.transaction("dispose", {"name": self.name, "reclaim": target})
            except MafsbxError as e:
                _reraise(e)

        try:
            await asyncio.wait_for(asyncio.to_thread(run), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(errno.ETIMEDOUT, f"reclaim of {target} passed {timeout} s") from None


# ---- the backend ---------------------------------------------------------------


@dataclass(frozen=True)
class ReapResult:
    """What :meth:`MafsbxBackend.reap` removed (upstream's ``DockerReapResult``)."""

    disposed: int = 0
    proxies_removed: int = 0
    networks_removed: int = 0
    failures: Tuple[DisposalFailure, ...] = ()


class MafsbxBackend:
    """maf-sandbox's ``SandboxBackend`` over a mafsbxfs mount.

    Args:
        mount: the mount point (or a :class:`mafsbx.Mount`).
        name: the name the router knows the backend by (default ``"docker"``,
            the Python Docker backend's, whose sandboxes these are).
        mafsbx: the ``mafsbx`` program :meth:`reap` runs.
        reap_timeout: seconds a reap may take before it reports a timeout.
    """

    def __init__(
        self,
        mount: Union[str, "os.PathLike[str]", Mount],
        *,
        name: str = BACKEND_NAME,
        mafsbx: str = "mafsbx",
        reap_timeout: float = 600.0,
    ) -> None:
        self.mount = mount if isinstance(mount, Mount) else Mount(mount)
        self._name = name
        self._mafsbx = mafsbx
        self._reap_timeout = reap_timeout
        # Read once: the router reads declarations synchronously, before any sandbox.
        self._declared = self._read_declarations(self.mount.declarations())

    def __repr__(self) -> str:
        return f"MafsbxBackend({str(self.mount.path)!r})"

    @property
    def name(self) -> str:
        return self._name

    @property
    def isolation(self) -> Isolation:
        """Always ``container``, whatever the hardening options."""
        return Isolation.CONTAINER

    @property
    def declarations(self) -> BackendDeclarations:
        """What the mount serves, from ``.ctl/declarations`` (read at
        construction), as 0.26+ reads it. On 0.21, which has no such object,
        an ``AttributeError``: that generation reads the four attributes below."""
        if BackendDeclarations is None:
            raise AttributeError("maf_sandbox 0.21 has no BackendDeclarations: read capabilities, limits, ...")
        return cast(BackendDeclarations, _construct(BackendDeclarations, **self._declared))

    # 0.21 reads the declarations as attributes of the backend (by getattr);
    # 0.26+ ignores them. The same values either way.

    @property
    def capabilities(self) -> "frozenset[Capability]":
        return cast("frozenset[Capability]", self._declared["capabilities"])

    @property
    def limits(self) -> SandboxLimits:
        return cast(SandboxLimits, self._declared["limits"])

    @property
    def egress_modes(self) -> "frozenset[Egress]":
        return cast("frozenset[Egress]", self._declared["egress_modes"])

    @property
    def os_families(self) -> "frozenset[OsFamily]":
        return cast("frozenset[OsFamily]", self._declared["os_families"])

    @staticmethod
    def _read_declarations(d: Mapping[str, Any]) -> Dict[str, Any]:
        raw = d.get("limits")
        limits: Dict[str, Any] = raw if isinstance(raw, dict) else {}

        def transfer(key: str) -> TransferLimits:
            side = limits.get(key)
            t: Dict[str, Any] = side if isinstance(side, dict) else {}
            return TransferLimits(
                max_bytes_per_file=int(t.get("max_bytes_per_file", 0)),
                max_total_bytes=int(t.get("max_total_bytes", 0)),
                max_files=int(t.get("max_files", 0)),
            )

        caps = _members(Capability, d.get("capabilities"))
        # Listing is this adapter's (list_dir reads the mount's directories,
        # on both planes), not a capability the mount is asked for.
        caps |= {Capability.FILES_LIST}
        declared: Dict[str, Any] = {
            "capabilities": caps,
            "limits": SandboxLimits(files_in=transfer("files_in"), files_out=transfer("files_out")),
            "egress_modes": _members(Egress, d.get("egress_modes")),
            "os_families": _members(OsFamily, d.get("os_families")),
            # The mount keeps the proxy's decisions (NAME/egress), but this
            # adapter reports none to an observer.
            "observes_egress": False,
        }
        if IsolationScope is not None:
            declared["isolation_scopes"] = _members(IsolationScope, d.get("isolation_scopes"))
        return declared

    @staticmethod
    def _acquire_fields(key: SandboxKey, spec: SandboxSpec) -> Dict[str, Any]:
        f: Dict[str, Any] = {"scope": key.scope, "thread": key.thread_id, "agent": key.agent_dir, "kind": spec.kind}
        call = getattr(key, "call_id", "")  # 0.26+
        if call:
            f["call"] = call
        if spec.image is not None:
            f["image"] = spec.image
        if spec.image_id is not None:
            f["image_id"] = spec.image_id
        if spec.work_dir is not None:
            f["work_dir"] = spec.work_dir
        required: Iterable[Any] = getattr(spec, "required_capabilities", None) or spec.requires
        # FILES_LIST is served here, not by the mount (which refuses it at acquire).
        f["capabilities"] = sorted({_text(c) for c in required} - {_text(Capability.FILES_LIST)})
        f["egress"] = _text(spec.egress)
        if spec.egress_allow:
            f["egress_allow"] = list(spec.egress_allow)
        if spec.declared_outputs:
            f["outputs"] = [o.path for o in spec.declared_outputs]
        if spec.labels:
            f["labels"] = dict(spec.labels)
        scope = getattr(spec, "isolation_scope", None)  # 0.26+; 0.21 is per conversation
        if scope is not None:
            f["isolation_scope"] = _text(scope)
        if spec.requires_os_family is not None:
            f["requires_os_family"] = _text(spec.requires_os_family)
        f["limits"] = {
            side: {
                "max_bytes_per_file": t.max_bytes_per_file,
                "max_total_bytes": t.max_total_bytes,
                "max_files": t.max_files,
            }
            for side, t in (("files_in", spec.files_in), ("files_out", spec.files_out))
        }
        return f

    async def acquire(self, key: SandboxKey, spec: SandboxSpec) -> MafsbxSandbox:
        """Get or create the sandbox of ``(key, spec.kind)`` (the mount serialises
        acquires of one key, so concurrent ones get one sandbox)."""
        fields = self._acquire_fields(key, spec)

        def run() -> MountSandbox:
            try:
                return self.mount.acquire(**fields)
            except MafsbxError as e:
                _reraise(e)

        handle = await asyncio.to_thread(run)
        return MafsbxSandbox(handle, handle.work_dir or spec.work_dir or DEFAULT_WORK_DIR)

    async def _dispose_request(self, request: Mapping[str, Any]) -> Tuple[int, Optional[DisposalFailure]]:
        try:
            reply = await asyncio.to_thread(self.mount.transaction, "dispose", request)
        except MafsbxError as e:
            return 0, DisposalFailure(_disposal_code(e), e.message)
        except Exception as e:  # never raises: a failure is reported
            return 0, DisposalFailure(_disposal_code(e), f"{type(e).__name__}: {e}")
        count = reply.get("disposed")
        return (count if isinstance(count, int) else 0), fold_disposal_failures(_failures(reply, "detail"))

    async def dispose(
        self, key: SandboxKey, *, kind: Optional[str] = None, instance_id: Optional[str] = None
    ) -> Optional[DisposalFailure]:
        """Dispose the key's sandboxes (every kind, or ``kind``); never raises:
        returns a ``DisposalFailure`` when one may still be there, else None
        (always None on 0.21, whose dispose returns nothing: the failure is logged)."""
        req: Dict[str, Any] = {"scope": key.scope, "thread": key.thread_id, "agent": key.agent_dir}
        call = getattr(key, "call_id", "")  # 0.26+
        if call:
            req["call"] = call
        if kind is not None:
            req["kind"] = kind
        if instance_id is not None:
            req["instance_id"] = instance_id
        failure = (await self._dispose_request(req))[1]
        if PROTOCOL == "0.21":
            if failure is not None:
                _log.warning("dispose of %s/%s/%s left a sandbox: %s", key.scope, key.thread_id, key.agent_dir, failure)
            return None
        return failure

    async def dispose_scope(self, scope: str, thread_id: str) -> ScopePurge:
        """Dispose every sandbox of the conversation, found by label (also those
        this process never made); never raises. A ``ScopePurge`` on 0.26+; on
        0.21 the count disposed (an ``int``, as that protocol says; a failure
        is logged)."""
        count, failure = await self._dispose_request({"scope": scope, "thread": thread_id})
        if ScopePurge is None:
            if failure is not None:
                _log.warning("dispose of scope %s thread %s left sandboxes: %s", scope, thread_id, failure)
            return cast(ScopePurge, count)
        return ScopePurge(disposed=count, undisposed=failure)

    async def reap(self, older_than: timedelta, *, scope: Optional[str] = None) -> ReapResult:
        """Remove sandboxes (with their proxies and networks) created more than
        ``older_than`` ago, as upstream's reap (``mafsbx reap``). A non-positive
        age raises ``ValueError`` before any engine call; failures are returned."""
        if not isinstance(older_than, timedelta):
            raise TypeError(f"older_than must be a timedelta, not {type(older_than).__name__}")
        if older_than <= timedelta(0):
            raise ValueError("older_than must be a positive timedelta")
        program = shutil.which(self._mafsbx)
        if program is None:
            raise RuntimeError(f"{self._mafsbx} was not found on PATH (reap runs `mafsbx reap`)")
        engine = await asyncio.to_thread(self.mount.engine)
        if isinstance(engine.get("context"), str) and engine["context"]:
            where = ["--context", engine["context"]]
        else:
            where = ["-H", str(engine.get("endpoint", ""))]
        seconds = max(1, math.ceil(older_than.total_seconds()))  # up: never younger than asked
        argv = [program, "reap", "--older-than", f"{seconds}s", "--json", *where]
        if scope is not None:
            argv += ["--scope", scope]
        def run() -> "subprocess.CompletedProcess[bytes]":
            return subprocess.run(argv, capture_output=True, timeout=self._reap_timeout, stdin=subprocess.DEVNULL)

        try:
            done = await asyncio.to_thread(run)
        except subprocess.TimeoutExpired:
            return ReapResult(failures=(DisposalFailure("timeout", f"mafsbx reap ran past {self._reap_timeout} s"),))
        try:
            out = json.loads(done.stdout.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            out = None
        if not isinstance(out, dict):
            why = done.stderr.decode("utf-8", "replace").strip()
            raise RuntimeError(f"mafsbx reap exited {done.returncode}: {why}")

        def count(k: str) -> int:
            v = out.get(k)
            return v if isinstance(v, int) else 0

        return ReapResult(
            disposed=count("disposed"),
            proxies_removed=count("proxies_removed"),
            networks_removed=count("networks_removed"),
            failures=tuple(_failures(out, "message")),
        )
