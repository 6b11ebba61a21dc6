"""A sandbox of a mount, its command results, and its detached commands.

A :class:`Job` follows its command's output as the guest writes it
(:meth:`Job.stream`, :meth:`Job.lines`) by reading the growing
``NAME/execs/ID/stdout`` and ``stderr`` files: FUSE has no inotify, so the
reader looks again after a pause that starts at 10 ms and doubles while
nothing comes, up to ``interval`` (100 ms by default), and ends when the
job's ``status`` says it ended and the files are read to their end.
"""

from __future__ import annotations

import base64
import errno
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterator,
    List,
    Literal,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    TypedDict,
    Union,
    overload,
)

from . import _wire
from .errors import ExitCodeError, MafsbxError, error_from_oserror, error_from_reply

if TYPE_CHECKING:
    from .mount import Mount

__all__ = [
    "Sandbox",
    "SandboxStatus",
    "ExecResult",
    "Job",
    "JobStatus",
    "Disposal",
    "DisposalFailure",
    "Command",
    "OutputChunk",
]

#: What :meth:`Sandbox.exec` runs: an argv (run as given, no shell) or a
#: command line (run through ``sh -c``).
Command = Union[str, Sequence[str]]


class SandboxStatus(TypedDict, total=False):
    """``MOUNT/NAME/status``: what the engine says about a sandbox."""

    name: str
    id: str
    state: str
    paused: bool
    created: str
    image: str
    key: Dict[str, str]
    kind: str
    work_dir: str
    outputs: List[str]
    capabilities: List[str]
    egress: str
    identity: Dict[str, Any]
    plane: str


class JobStatus(TypedDict, total=False):
    """``MOUNT/NAME/execs/ID/status``: a snapshot of a detached command."""

    exec: str
    sandbox: str
    running: bool
    exit_code: Optional[int]
    timed_out: bool
    cancelled: bool
    started: str
    duration_ms: int
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    sandbox_disposed: bool
    error: str


def _b64(reply: Mapping[str, Any], key: str) -> bytes:
    raw = reply.get(key + "_b64")
    if isinstance(raw, str):
        return base64.b64decode(raw)
    text = reply.get(key)
    return text.encode("utf-8") if isinstance(text, str) else b""


@dataclass(frozen=True)
class ExecResult:
    """What a command did: its exit code and the exact bytes it printed.

    A non-zero exit code is a result, not an error. 126 and 127 are the
    runtime's "cannot run" and "not found", as ``docker exec`` reports them.
    """

    exit_code: int
    stdout_bytes: bytes
    stderr_bytes: bytes
    timed_out: bool = False
    duration_ms: int = 0
    #: Output past the mount's cap (8 MiB per stream) was dropped.
    truncated: bool = False
    #: A detached command ended by :meth:`Job.cancel`.
    cancelled: bool = False
    #: A timeout disposed the sandbox (``on_timeout="dispose"``, or a remote
    #: engine); false when the command was killed and the sandbox kept.
    sandbox_disposed: bool = False

    @property
    def stdout(self) -> str:
        """The standard output as text (UTF-8, invalid bytes replaced)."""
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        """The standard error as text (UTF-8, invalid bytes replaced)."""
        return self.stderr_bytes.decode("utf-8", "replace")

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> "ExecResult":
        """The result carried by an exec reply (or a detached command's ``wait``)."""
        code = reply.get("exit_code")
        duration = reply.get("duration_ms")
        return cls(
            exit_code=code if isinstance(code, int) else -1,
            stdout_bytes=_b64(reply, "stdout"),
            stderr_bytes=_b64(reply, "stderr"),
            timed_out=reply.get("timed_out") is True,
            duration_ms=duration if isinstance(duration, int) else 0,
            truncated=reply.get("truncated") is True,
            cancelled=reply.get("cancelled") is True,
            sandbox_disposed=reply.get("sandbox_disposed") is True,
        )


def _carries_result(reply: Optional[Mapping[str, Any]]) -> bool:
    return reply is not None and "stdout_b64" in reply and "exit_code" in reply


@dataclass(frozen=True)
class DisposalFailure:
    """Why a sandbox may still be there: ``code`` is one of ``unreachable``,
    ``timeout``, ``refused``, ``unlisted``, ``unknown``; ``detail`` is for a log."""

    code: str
    detail: str


@dataclass(frozen=True)
class Disposal:
    """What a dispose did: how many sandboxes went, and why any is still there.

    Disposing what is already gone is success with ``disposed == 0``.
    """

    disposed: int
    failures: Tuple[DisposalFailure, ...] = ()

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> "Disposal":
        fails = reply.get("failures")
        items: List[DisposalFailure] = []
        if isinstance(fails, list):
            for f in fails:
                if isinstance(f, dict):
                    items.append(DisposalFailure(str(f.get("code", "unknown")), str(f.get("detail", ""))))
        count = reply.get("disposed")
        return cls(disposed=count if isinstance(count, int) else 0, failures=tuple(items))


def _exec_request(
    name: str,
    command: Command,
    cwd: Union[str, "os.PathLike[str]", None],
    env: Optional[Mapping[str, str]],
    stdin: Union[str, bytes, None],
    timeout: Optional[float],
    user: Optional[str],
    on_timeout: Optional[str] = None,
) -> Dict[str, Any]:
    req: Dict[str, Any] = {"sandbox": name}
    if isinstance(command, str):
        req["command"] = command
    elif isinstance(command, (bytes, bytearray, memoryview)):
        raise TypeError("exec: give an argv (a sequence of str) or a command line (a str), not bytes")
    else:
        argv = list(command)
        for i, arg in enumerate(argv):
            if not isinstance(arg, str):
                raise TypeError(f"exec: argv[{i}] is {type(arg).__name__}, not str")
        req["argv"] = argv
    if cwd is not None:
        req["cwd"] = os.fspath(cwd)
    if env is not None:
        req["env"] = dict(env)
    if stdin is not None:
        data = stdin.encode("utf-8") if isinstance(stdin, str) else bytes(stdin)
        req["stdin_b64"] = base64.b64encode(data).decode("ascii")
    if timeout is not None:
        req["timeout"] = timeout
    if user is not None:
        req["user"] = user
    if on_timeout is not None:
        req["on_timeout"] = on_timeout
    return req


class OutputChunk(NamedTuple):
    """Bytes a detached command wrote, in the order they were read:
    ``stream`` is ``"stdout"`` or ``"stderr"``."""

    stream: str
    data: bytes

    @property
    def text(self) -> str:
        """The bytes as text (UTF-8, invalid bytes replaced; a character cut
        between two chunks shows as replacement characters: use
        :meth:`Job.lines` for text)."""
        return self.data.decode("utf-8", "replace")


#: The first pause of a follower that found nothing new; it doubles up to the
#: caller's interval while nothing comes, and starts again at each new byte.
_FIRST_PAUSE = 0.01


class _Follower:
    """One pass at a time over a job's growing output files (shared by
    :meth:`Job.stream` and :meth:`mafsbx.aio.AsyncJob.stream`).

    :meth:`poll` never waits: it reads what is new and, when nothing is,
    looks at ``status``; the caller sleeps between passes. The files stay open
    from the first pass to :meth:`close` (they are direct-I/O files: a read at
    an offset sees what the guest wrote since).
    """

    def __init__(self, job: "Job", streams: Sequence[str]) -> None:
        self.job = job
        self.streams = list(streams)
        self.fds: Dict[str, int] = {}
        self.offsets: Dict[str, int] = {name: 0 for name in self.streams}
        self.ended = False

    def _open(self) -> None:
        for name in self.streams:
            if name not in self.fds:
                where = str(self.job.path / name)
                try:
                    self.fds[name] = os.open(where, os.O_RDONLY | os.O_CLOEXEC)
                except OSError as e:
                    raise error_from_oserror(e, where) from None

    def _drain(self) -> List[OutputChunk]:
        chunks: List[OutputChunk] = []
        for name in self.streams:
            while True:
                try:
                    data = os.pread(self.fds[name], _wire._READ_CHUNK, self.offsets[name])
                except OSError as e:
                    raise error_from_oserror(e, str(self.job.path / name)) from None
                if not data:
                    break
                self.offsets[name] += len(data)
                chunks.append(OutputChunk(name, data))
        return chunks

    def poll(self) -> Tuple[List[OutputChunk], bool]:
        """What is new since the last pass, and whether the command has ended
        and everything it wrote has been returned."""
        if self.ended:
            return [], True
        self._open()
        chunks = self._drain()
        if chunks:
            return chunks, False
        try:
            running = self.job.status().get("running") is not False
        except FileNotFoundError:   # cancelled and forgotten: nothing more comes
            running = False
        if running:
            return [], False
        # Ended: what it wrote before the end is in the files now.
        self.ended = True
        return self._drain(), True

    def close(self) -> None:
        fds, self.fds = self.fds, {}
        for fd in fds.values():
            os.close(fd)


def _split_lines(pending: bytes, data: bytes) -> Tuple[List[str], bytes]:
    """The complete lines of ``pending + data`` (as text, without their
    newline) and the bytes of a line not complete yet."""
    buf = pending + data
    *done, rest = buf.split(b"\n")
    return [line.decode("utf-8", "replace") for line in done], rest


class Job:
    """A command started with ``detach=True``: ``MOUNT/NAME/execs/ID/``.

    Its output grows in ``stdout`` and ``stderr`` as the guest writes, and it
    is kept after the end until :meth:`cancel` (the mount keeps the last 32 of
    a sandbox). A remount forgets it.
    """

    def __init__(self, sandbox: "Sandbox", exec_id: str, path: Path) -> None:
        self.sandbox = sandbox
        #: The exec ID (hex).
        self.id = exec_id
        #: ``MOUNT/NAME/execs/ID``.
        self.path = path

    def __repr__(self) -> str:
        return f"Job({self.sandbox.name!r}, {self.id!r})"

    def status(self) -> JobStatus:
        """A snapshot: running, exit_code, timed_out, cancelled, byte counts..."""
        return _wire.read_json(str(self.path / "status"))  # type: ignore[return-value]

    def done(self) -> bool:
        """Whether the command has ended."""
        return self.status().get("running") is False

    def stdout_bytes(self, offset: int = 0) -> bytes:
        """Every byte the command wrote to stdout so far (from ``offset``)."""
        return _wire.read_bytes(str(self.path / "stdout"), offset)

    def stderr_bytes(self, offset: int = 0) -> bytes:
        """Every byte the command wrote to stderr so far (from ``offset``)."""
        return _wire.read_bytes(str(self.path / "stderr"), offset)

    def stdout(self) -> str:
        """The standard output so far, as text (a character cut at the end
        of what has arrived shows as a replacement character)."""
        return self.stdout_bytes().decode("utf-8", "replace")

    def stderr(self) -> str:
        """The standard error so far, as text."""
        return self.stderr_bytes().decode("utf-8", "replace")

    def stream(
        self, *, stdout: bool = True, stderr: bool = True, interval: float = 0.1
    ) -> Iterator[OutputChunk]:
        """The command's output as it is written, chunk by chunk, from its
        first byte to its end (or its cancel).

        A pass reads what is new; when nothing is, the next one comes after a
        pause that starts at 10 ms and doubles up to ``interval`` seconds
        (FUSE files have no inotify). The iteration ends once the job's
        ``status`` says it ended and every byte has been yielded.
        """
        if interval <= 0:
            raise ValueError(f"stream: interval must be positive, not {interval!r}")
        names = [n for n, on in (("stdout", stdout), ("stderr", stderr)) if on]
        follower = _Follower(self, names)
        pause = _FIRST_PAUSE
        try:
            while True:
                chunks, ended = follower.poll()
                yield from chunks
                if ended:
                    return
                if chunks:
                    pause = _FIRST_PAUSE
                else:
                    time.sleep(pause)
                    pause = min(pause * 2, interval)
        finally:
            follower.close()

    def lines(self, which: Literal["stdout", "stderr"] = "stdout", *, interval: float = 0.1) -> Iterator[str]:
        """The lines of one stream as they are written, as text without the
        newline (a last line without one comes at the end)."""
        pending = b""
        for chunk in self.stream(stdout=which == "stdout", stderr=which == "stderr", interval=interval):
            done, pending = _split_lines(pending, chunk.data)
            yield from done
        if pending:
            yield pending.decode("utf-8", "replace")

    def wait(self, timeout: Optional[float] = None) -> ExecResult:
        """Block until the command ends; its result, as a blocking exec's.

        A command that failed as a request (its own ``timeout`` passed) raises
        what the reply names (``TimeoutError``), with the result in
        ``error.result``. ``timeout`` here bounds only this wait: when it
        passes, the built-in ``TimeoutError`` is raised and the command runs on.
        """
        if timeout is not None:
            deadline = time.monotonic() + timeout
            pause = 0.02
            while not self.done():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _gave_up(f"job {self.id} of {self.sandbox.name} still runs after {timeout} s")
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.25)
        where = str(self.path / "wait")
        data = _wire.read_bytes(where)
        return _job_result(_wire.parse_reply(data), where, raise_failure=True)

    def cancel(self) -> ExecResult:
        """End the command if it runs (``cancelled`` in the result), and forget it.

        The result is returned, never raised, whatever the command's outcome.
        Its files are gone afterwards. On a remote engine, where the command
        cannot be killed from the host, cancelling disposes the sandbox.
        """
        where = str(self.path / "wait")
        try:
            fd = os.open(where, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            raise error_from_oserror(e, where) from None
        try:
            try:
                os.rmdir(self.path)
            except OSError as e:
                raise error_from_oserror(e, f"cancel {self.path}") from None
            # The open `wait` still reads the ended command's reply.
            try:
                data = _wire.read_all(fd)
            except OSError as e:
                raise error_from_oserror(e, where) from None
        finally:
            os.close(fd)
        return _job_result(_wire.parse_reply(data), where, raise_failure=False)


def _gave_up(message: str) -> TimeoutError:
    """The built-in TimeoutError: a wait that gave up (no request failed)."""
    return TimeoutError(errno.ETIMEDOUT, message)


def _job_result(reply: Optional[Dict[str, Any]], where: str, raise_failure: bool) -> ExecResult:
    if reply is None:
        raise error_from_oserror(OSError(errno.EIO, "no valid reply"), where)
    if reply.get("ok") is True or (not raise_failure and _carries_result(reply)):
        return ExecResult.from_reply(reply)
    exc = error_from_reply(reply, errno.EIO, where)
    if _carries_result(reply):
        exc.result = ExecResult.from_reply(reply)
    raise exc


class Sandbox:
    """One sandbox of a mount: ``MOUNT/NAME/``.

    Attributes from the acquire reply (``id``, ``state``, ``work_dir``, ``uid``,
    ``gid``) are ``None`` on a sandbox found by :meth:`Mount.sandboxes`;
    :meth:`status` has them all.
    """

    def __init__(self, mount: "Mount", name: str, reply: Optional[Mapping[str, Any]] = None) -> None:
        self.mount = mount
        #: The container name, ``maf-sandbox-docker-<12 hex>``.
        self.name = name
        #: ``MOUNT/NAME``.
        self.path = mount.path / name
        #: ``MOUNT/NAME/work``: the sandbox's working directory (read, write, list, remove).
        self.work = self.path / "work"
        #: ``MOUNT/NAME/root``: the guest's whole root filesystem, read-only.
        self.root = self.path / "root"
        r: Mapping[str, Any] = reply or {}
        self.id: Optional[str] = _opt(r.get("id"), str)
        #: ``created``, ``started`` or ``reused``.
        self.state: Optional[str] = _opt(r.get("state"), str)
        #: The guest path ``work`` shows.
        self.work_dir: Optional[str] = _opt(r.get("work_dir"), str)
        self.uid: Optional[int] = _opt(r.get("uid"), int)
        self.gid: Optional[int] = _opt(r.get("gid"), int)

    def __repr__(self) -> str:
        return f"Sandbox({self.name!r}, mount={str(self.mount.path)!r})"

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: Any) -> None:
        """Dispose of the sandbox at the end of a ``with`` block, an exception
        or not. A disposal that fails while an exception is already on its
        way is a warning, so the exception that ended the block is the one
        raised; a disposal that reports failures is a ``ResourceWarning``."""
        try:
            disposal = self.dispose()
        except MafsbxError as e:
            if exc is None:
                raise
            warnings.warn(f"{self.name} may still exist: {e}", ResourceWarning, stacklevel=2)
            return
        if disposal.failures:
            warnings.warn(f"{self.name} may still exist: {disposal.failures}", ResourceWarning, stacklevel=2)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sandbox) and (other.mount.path, other.name) == (self.mount.path, self.name)

    def __hash__(self) -> int:
        return hash((self.mount.path, self.name))

    def status(self) -> SandboxStatus:
        """``MOUNT/NAME/status``: name, id, state, image, key, kind, work_dir, plane..."""
        return _wire.read_json(str(self.path / "status"))  # type: ignore[return-value]

    @overload
    def exec(
        self,
        argv_or_command: Command,
        cwd: Union[str, "os.PathLike[str]", None] = None,
        env: Optional[Mapping[str, str]] = None,
        stdin: Union[str, bytes, None] = None,
        timeout: Optional[float] = None,
        *,
        check: bool = False,
        detach: Literal[False] = False,
        user: Optional[str] = None,
        on_timeout: Optional[str] = None,
    ) -> ExecResult: ...

    @overload
    def exec(
        self,
        argv_or_command: Command,
        cwd: Union[str, "os.PathLike[str]", None] = None,
        env: Optional[Mapping[str, str]] = None,
        stdin: Union[str, bytes, None] = None,
        timeout: Optional[float] = None,
        *,
        check: bool = False,
        detach: Literal[True],
        user: Optional[str] = None,
        on_timeout: Optional[str] = None,
    ) -> Job: ...

    def exec(
        self,
        argv_or_command: Command,
        cwd: Union[str, "os.PathLike[str]", None] = None,
        env: Optional[Mapping[str, str]] = None,
        stdin: Union[str, bytes, None] = None,
        timeout: Optional[float] = None,
        *,
        check: bool = False,
        detach: bool = False,
        user: Optional[str] = None,
        on_timeout: Optional[str] = None,
    ) -> Union[ExecResult, Job]:
        """Run a command in the sandbox.

        Args:
            argv_or_command: a sequence of str runs as given (no shell); a str
                runs through ``sh -c``.
            cwd: a relative directory resolves under the work dir (the default);
                an absolute one may name any directory of the guest.
            env: extra environment variables.
            stdin: the command's standard input (str as UTF-8); empty if None.
            timeout: seconds; the mount's ``-o exec_timeout`` (300) when
                None, at most its ``-o max_exec_timeout`` (24 h; a longer one
                raises ``ValueError``). A blocking exec that times out raises
                ``TimeoutError`` (the output so far on ``error.result``); a
                timeout kills the command and keeps the sandbox where the
                engine runs on the mount's host, and disposes it elsewhere.
            detach: return a :class:`Job` at once instead of waiting.
            user: run as this user (``NAME``, ``UID``, ``NAME:GROUP``...),
                as ``docker exec -u``.
            on_timeout: ``"kill"`` (the mount's default: the sandbox kept
                where it can be) or ``"dispose"``: a timeout disposes the
                sandbox, as the Python backend does.

        Returns:
            the :class:`ExecResult` (any exit code), or the :class:`Job`.

        With ``check=True`` (a blocking exec only), a command that exits
        non-zero raises :class:`~mafsbx.errors.ExitCodeError`, with the exit
        code and the output, as ``subprocess.run(check=True)`` does.
        """
        req = _exec_request(self.name, argv_or_command, cwd, env, stdin, timeout, user, on_timeout)
        if detach:
            if check:
                raise TypeError("exec: check=True needs the exit code, which a detached exec does not wait for")
            req["detach"] = True
            reply = self.mount.transaction("exec", req)
            exec_id = reply.get("exec")
            if not isinstance(exec_id, str):
                raise error_from_oserror(OSError(errno.EIO, "the reply names no exec ID"), ".ctl/exec")
            rel = reply.get("path")
            path = self.mount.path / rel if isinstance(rel, str) else self.path / "execs" / exec_id
            return Job(self, exec_id, path)
        try:
            reply = self.mount.transaction("exec", req)
        except MafsbxError as e:
            if _carries_result(e.reply):
                assert e.reply is not None
                e.result = ExecResult.from_reply(e.reply)
            raise
        result = ExecResult.from_reply(reply)
        if check and result.exit_code != 0:
            raise ExitCodeError(argv_or_command, result)
        return result

    def jobs(self) -> List[Job]:
        """The detached commands of this sandbox started through this mount."""
        execs = self.path / "execs"
        try:
            names = sorted(os.listdir(execs))
        except OSError as e:
            raise error_from_oserror(e, str(execs)) from None
        return [Job(self, n, execs / n) for n in names]

    def dispose(self) -> Disposal:
        """Remove the sandbox (container, and its proxy and network if any)."""
        return Disposal.from_reply(self.mount.transaction("dispose", {"name": self.name}))


def _opt(value: Any, kind: type) -> Any:
    return value if isinstance(value, kind) and not isinstance(value, bool) else None
