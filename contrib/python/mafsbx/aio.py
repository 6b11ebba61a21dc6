"""The client for asyncio: the same API, each call awaited.

Every call runs the blocking client in a worker thread
(``asyncio.to_thread``), so an event loop keeps serving while a command runs
and many calls proceed at once::

    from mafsbx import aio

    async def main() -> None:
        m = aio.AsyncMount("/tmp/sbx")
        sbx = await m.acquire(scope="demo", thread="t1", agent="a", kind="python")
        results = await asyncio.gather(*(sbx.exec(["echo", str(i)]) for i in range(8)))
        await sbx.dispose()

Cancelling the awaiting task does not stop a request already sent: its
thread finishes the transaction (a blocking exec runs to its end or its
timeout). Use ``detach=True`` and :meth:`AsyncJob.cancel` to stop a command.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Dict, List, Literal, Mapping, Optional, Union, overload

from .mount import Mount
from .sandbox import Command, Disposal, ExecResult, Job, JobStatus, Sandbox, SandboxStatus

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
        return await asyncio.to_thread(self.sync.wait, timeout)

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
        detach: bool = False,
        user: Optional[str] = None,
        on_timeout: Optional[str] = None,
    ) -> Union[ExecResult, AsyncJob]:
        """As :meth:`mafsbx.Sandbox.exec`."""
        sync = self.sync
        if detach:
            job = await asyncio.to_thread(
                lambda: sync.exec(
                    argv_or_command, cwd, env, stdin, timeout, detach=True, user=user, on_timeout=on_timeout
                )
            )
            return AsyncJob(job, self)
        return await asyncio.to_thread(
            lambda: sync.exec(
                argv_or_command, cwd, env, stdin, timeout, detach=False, user=user, on_timeout=on_timeout
            )
        )

    async def jobs(self) -> List[AsyncJob]:
        return [AsyncJob(j, self) for j in await asyncio.to_thread(self.sync.jobs)]

    async def dispose(self) -> Disposal:
        return await asyncio.to_thread(self.sync.dispose)


class AsyncMount:
    """:class:`mafsbx.Mount` for asyncio."""

    def __init__(self, path: Union[str, "os.PathLike[str]", Mount]) -> None:
        #: The blocking mount underneath.
        self.sync = path if isinstance(path, Mount) else Mount(path)
        self.path: Path = self.sync.path

    def __repr__(self) -> str:
        return f"AsyncMount({str(self.path)!r})"

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
