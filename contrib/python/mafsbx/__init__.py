"""mafsbx: the Python client of a mafsbxfs mount (standard library only).

A mafsbxfs mount shows Docker sandboxes as directories; this package drives
it from Python::

    import mafsbx

    with mafsbx.Mount("/tmp/sbx") as m:
        with m.acquire(scope="demo", thread="t1", agent="analyst", kind="python",
                       image="mafsbx/busybox:latest") as sbx:   # disposed at the end
            (sbx.work / "in.txt").write_text("42\\n")       # a pathlib.Path into the mount
            r = sbx.exec("echo $(( $(cat in.txt) + 1 ))", check=True)   # through sh -c
            print(r.exit_code, r.stdout)                   # 0 43
            job = sbx.exec(["sh", "-c", "echo a; sleep 1; echo b"], detach=True)
            for line in job.lines():                       # as the guest prints them
                print(line)

A failed request raises the class its reply names (a ``LookupError``,
``FileNotFoundError``, ``TimeoutError``, ...; see :mod:`mafsbx.errors`);
``check=True`` raises :class:`ExitCodeError` for a non-zero exit.
Every call is one transaction on a file of its own, so one ``Mount`` serves
many threads at once. :mod:`mafsbx.aio` is the same API for asyncio, and
:mod:`mafsbx.maf` plugs the mount into maf-sandbox's ``SandboxRouter`` as a
backend (imported only on request: it needs the ``maf_sandbox`` package).
"""

from .errors import EngineTimeout, ExecTimeout, ExitCodeError, MafsbxError
from .mount import SANDBOX_PREFIX, Mount
from .sandbox import (
    Command,
    Disposal,
    DisposalFailure,
    ExecResult,
    Job,
    JobStatus,
    OutputChunk,
    Sandbox,
    SandboxStatus,
)

__version__ = "0.1.0"

__all__ = [
    "Command",
    "Disposal",
    "DisposalFailure",
    "EngineTimeout",
    "ExecResult",
    "ExecTimeout",
    "ExitCodeError",
    "Job",
    "JobStatus",
    "MafsbxError",
    "Mount",
    "OutputChunk",
    "SANDBOX_PREFIX",
    "Sandbox",
    "SandboxStatus",
    "__version__",
]
