"""mafsbx: the Python client of a mafsbxfs mount (standard library only).

A mafsbxfs mount shows Docker sandboxes as directories; this package drives
it from Python::

    import mafsbx

    m = mafsbx.Mount("/tmp/sbx")
    sbx = m.acquire(scope="demo", thread="t1", agent="analyst", kind="python",
                    image="mafsbx/busybox:latest")
    (sbx.work / "in.txt").write_text("42\\n")           # a pathlib.Path into the mount
    r = sbx.exec("echo $(( $(cat in.txt) + 1 ))")      # through sh -c
    print(r.exit_code, r.stdout)                       # 0 43
    job = sbx.exec(["sleep", "5"], detach=True)        # runs on: MOUNT/NAME/execs/ID
    print(job.status()["running"], job.wait().exit_code)
    sbx.dispose()

A failed request raises the class its reply names (``LookupError``,
``FileNotFoundError``, ``TimeoutError``, ...; see :mod:`mafsbx.errors`).
Every call is one transaction on a file of its own, so one ``Mount`` serves
many threads at once. :mod:`mafsbx.aio` is the same API for asyncio, and
:mod:`mafsbx.maf` plugs the mount into maf-sandbox's ``SandboxRouter`` as a
backend (imported only on request: it needs the ``maf_sandbox`` package).
"""

from .errors import MafsbxError
from .mount import SANDBOX_PREFIX, Mount
from .sandbox import (
    Command,
    Disposal,
    DisposalFailure,
    ExecResult,
    Job,
    JobStatus,
    Sandbox,
    SandboxStatus,
)

__version__ = "0.1.0"

__all__ = [
    "Command",
    "Disposal",
    "DisposalFailure",
    "ExecResult",
    "Job",
    "JobStatus",
    "MafsbxError",
    "Mount",
    "SANDBOX_PREFIX",
    "Sandbox",
    "SandboxStatus",
    "__version__",
]
