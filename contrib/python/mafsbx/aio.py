"""The client for asyncio: the same API, each call awaited.

Every call that touches the mount runs the blocking client in a worker
thread (``asyncio.to_thread``): no file I/O on the event loop, which keeps
serving while a command runs, and many calls proceed at once::

    from mafsbx import aio

    async def main() -> None:
        async with aio.AsyncMount("/tmp/sbx") as m:
            async with await m.acquire(scope="demo", thread="t1", agent="a", kind="python") as sbx:
                results = await asyncio.gather(*(sbx.exec(["echo", str(i)]) for i in range(8)))
                job = await sbx.exec(["sh", "-c", "echo a; sleep 1; echo b"], detach=True)
                async for line in job.lines():
                    print(line)

Waiting is done on the loop, not in a thread: :meth:`AsyncJob.wait` and
:meth:`AsyncJob.stream` look at the job between ``asyncio.sleep`` pauses
(10 ms, doubling up to 100 ms for a stream and 250 ms for a wait), so a
thousand waiting jobs hold no thread. A
blocking :meth:`AsyncSandbox.exec` holds one worker thread of the loop's
default executor until the command ends; for many at once, give the loop a
larger executor, or use ``detach=True``.

Cancelling the awaiting task does not stop a request already sent: its
thread finishes the transaction (a blocking exec runs to its end or its
timeout). Use ``detach=True`` and :meth:`AsyncJob.cancel` to stop a command.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any, AsyncIterator, Dict, List, Literal, Mapping, Optional, Union, overload

from .mount import Mount
from .sandbox import (
    _FIRST_PAUSE,
    Command,
    Disposal,
    ExecResult,
    Job,
    JobStatus,
    OutputChunk,
    Sandbox,
    SandboxStatus,
    _Follower,
    _gave_up,
    _split_lines,
)

__all__ = ["AsyncMount", "AsyncSandbox", "AsyncJob"]


class AsyncJob:
    """:class:`mafsbx.Job` for asyncio."""

    def __init__(self, job: Job, sandbox: "AsyncSandbox") -> None:
        #: The blocking job underneath.
        self.sync = job
        self.sandbox = sandbox
        self.id = job.id
        self.path = job.path

    def __repr__(self) -> str:
        return f"AsyncJob({self.sandbox.name!r}, {self.id!r})"

    async def status(self) -> JobStatus:
        return await asyncio.to_thread(self.sync.status)

    async def done(self) -> bool:
        return await asyncio.to_thread(self.sync.done)

    async def stdout(self) -> str:
        return await asyncio.to_thread(self.sync.stdout)

    async def stderr(self) -> str:
        return await asyncio.to_thread(self.sync.stderr)

    async def stdout_bytes(self, offset: int = 0) -> bytes:
        return await asyncio.to_thread(self.sync.stdout_bytes, offset)

    async def stderr_bytes(self, offset: int = 0) -> bytes:
        return await asyncio.to_thread(self.sync.stderr_bytes, offset)

    async def wait(self, timeout: Optional[float] = None) -> ExecResult:
        """As :meth:`mafsbx.Job.wait`: the result once the command ended (the
        built-in ``TimeoutError`` when ``timeout`` passes first, the command
        running on). Waits on the loop, between looks at ``status``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = _FIRST_PAUSE
        while not await self.done():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise _gave_up(f"job {self.id} of {self.sandbox.name} still runs after {timeout} s")
            await asyncio.sleep(pause if left is None else min(pause, left))
            pause = min(pause * 2, 0.25)
        return await asyncio.to_thread(self.sync.wait)

    async def stream(
        self, *, stdout: bool = True, stderr: bool = True, interval: float = 0.1
    ) -> AsyncIterator[OutputChunk]:
        """As :meth:`mafsbx.Job.stream`: ``async for chunk in job.stream()``.
        Each read runs in a worker thread; the pauses are ``asyncio.sleep``."""
        if interval <= 0:
            raise ValueError(f"stream: interval must be positive, not {interval!r}")
        names = [n for n, on in (("stdout", stdout), ("stderr", stderr)) if on]
        follower = _Follower(self.sync, names)
        pause = _FIRST_PAUSE
        try:
            while True:
                chunks, ended = await asyncio.to_thread(follower.poll)
                for chunk in chunks:
                    yield chunk
                if ended:
                    return
                if chunks:
                    pause = _FIRST_PAUSE
                else:
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, interval)
        finally:
            await asyncio.to_thread(follower.close)

    async def lines(
        self, which: Literal["stdout", "stderr"] = "stdout", *, interval: float = 0.1
    ) -> AsyncIterator[str]:
        """As :meth:`mafsbx.Job.lines`: ``async for line in job.lines()``."""
        pending = b""
        async for chunk in self.stream(stdout=which == "stdout", stderr=which == "stderr", interval=interval):
            done, pending = _split_lines(pending, chunk.data)
            for line in done:
                yield line
        if pending:
            yield pending.decode("utf-8", "replace")

    async def cancel(self) -> ExecResult:
        return await asyncio.to_thread(self.sync.cancel)


class AsyncSandbox:
    """:class:`mafsbx.Sandbox` for asyncio (the paths and attributes are the same)."""

    def __init__(self, sandbox: Sandbox, mount: "AsyncMount") -> None:
        #: The blocking sandbox underneath.
        self.sync = sandbox
        self.mount = mount
        self.name = sandbox.name
        self.path: Path = sandbox.path
        self.work: Path = sandbox.work
        self.root: Path = sandbox.root
        self.id = sandbox.id
        self.state = sandbox.state
        self.work_dir = sandbox.work_dir
        self.uid = sandbox.uid
        self.gid = sandbox.gid

    def __repr__(self) -> str:
        return f"AsyncSandbox({self.name!r}, mount={str(self.mount.path)!r})"

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: Any) -> None:
        """As :meth:`mafsbx.Sandbox.__exit__`: disposes of the sandbox."""
        await asyncio.to_thread(self.sync.__exit__, exc_type, exc, tb)

    async def status(self) -> SandboxStatus:
        return await asyncio.to_thread(self.sync.status)

    @overload
    async def exec(
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
    async def exec(
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
    ) -> AsyncJob: ...

    async def exec(
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
    ) -> Union[ExecResult, AsyncJob]:
        """As :meth:`mafsbx.Sandbox.exec`."""
        sync = self.sync
        if detach and check:
            raise TypeError("exec: check=True needs the exit code, which a detached exec does not wait for")
        if detach:
            job = await asyncio.to_thread(
                lambda: sync.exec(
                    argv_or_command, cwd, env, stdin, timeout, detach=True, user=user, on_timeout=on_timeout
                )
            )
            return AsyncJob(job, self)
        return await asyncio.to_thread(
            lambda: sync.exec(
                argv_or_command,
                cwd,
                env,
                stdin,
                timeout,
                check=check,
                detach=False,
                user=user,
                on_timeout=on_timeout,
            )
        )

    async def jobs(self) -> List[AsyncJob]:
        return [AsyncJob(j, self) for j in await asyncio.to_thread(self.sync.jobs)]

    async def dispose(self) -> Disposal:
        return await asyncio.to_thread(self.sync.dispose)


class AsyncMount:
    """:class:`mafsbx.Mount` for asyncio."""

    def __init__(self, path: Union[str, "os.PathLike[str]", Mount]) -> None:
        """No file I/O here (this runs on the loop): a path that is not a
        mount fails the first request, or ``async with``, with
        ``FileNotFoundError``; :meth:`open` checks at once."""
        #: The blocking mount underneath.
        self.sync = path if isinstance(path, Mount) else Mount.unchecked(path)
        self.path: Path = self.sync.path

    @classmethod
    async def open(cls, path: Union[str, "os.PathLike[str]"]) -> "AsyncMount":
        """The mount at ``path``, checked in a worker thread as ``Mount(path)`` checks it."""
        return cls(await asyncio.to_thread(Mount, path))

    def __repr__(self) -> str:
        return f"AsyncMount({str(self.path)!r})"

    async def __aenter__(self) -> "AsyncMount":
        self.sync._check_open()
        await asyncio.to_thread(Mount, self.path)   # the check Mount(path) makes
        return self

    async def __aexit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: Any) -> None:
        """As :meth:`mafsbx.Mount.__exit__`: closes this object, nothing more."""
        self.sync.close()

    async def transaction(self, op: str, request: Mapping[str, Any]) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.transaction, op, request)

    async def acquire(self, *, scope: str, thread: str, agent: str, kind: str, **fields: Any) -> AsyncSandbox:
        sbx = await asyncio.to_thread(
            lambda: self.sync.acquire(scope=scope, thread=thread, agent=agent, kind=kind, **fields)
        )
        return AsyncSandbox(sbx, self)

    async def dispose(
        self,
        *,
        scope: str,
        thread: str,
        agent: Optional[str] = None,
        kind: Optional[str] = None,
        call: Optional[str] = None,
    ) -> Disposal:
        return await asyncio.to_thread(
            lambda: self.sync.dispose(scope=scope, thread=thread, agent=agent, kind=kind, call=call)
        )

    def sandbox(self, name: str) -> AsyncSandbox:
        return AsyncSandbox(self.sync.sandbox(name), self)

    async def sandboxes(self) -> List[AsyncSandbox]:
        return [AsyncSandbox(s, self) for s in await asyncio.to_thread(self.sync.sandboxes)]

    async def declarations(self) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.declarations)

    async def engine(self) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.engine)
