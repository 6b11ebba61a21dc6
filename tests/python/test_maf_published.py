"""mafsbx.maf against the published maf-sandbox 0.21, through a real mount.

The package is the vendored copy beside the checkout (../shared/vendor/
maf-extensions, read-only; meson defines this test only where it is there and
puts it first on PYTHONPATH, ahead of the stand-in). What is checked: the
adapter imports and finds the 0.21 generation; the declarations are the
backend's attributes, which 0.21's router reads and accepts; ``call_id`` and
``isolation_scope`` are absent and not needed; ``dispose`` returns None and
``dispose_scope`` an int; and upstream's own conformance probes
(``maf_sandbox.conformance``: files-out with the listing probes, files-in,
exec, files-delete) all run and pass, none skipped.
"""

from __future__ import annotations

import asyncio
import os
import sys
import unittest
import warnings
from typing import Any, Awaitable, Callable, Tuple, TypeVar

# Python puts this file's directory first on sys.path, where the stand-in
# (tests/python/maf_sandbox) would shadow the published package: the order
# is PYTHONPATH's (the vendored package first, then this directory).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here] + [_here]

with warnings.catch_warnings():  # 0.21 warns that it is experimental, on import
    warnings.simplefilter("ignore")
    import maf_sandbox as ms
    from maf_sandbox import conformance

import mafsbx.maf as adapter
from mafsbx.maf import MafsbxBackend, MafsbxSandbox

from mountcase import MountCase, container_exists, main

assert not getattr(ms, "STAND_IN", False), "the published package must come first on PYTHONPATH"

T = TypeVar("T")
W = "/maf-sandbox/work"


def run(coro: Awaitable[T]) -> T:
    async def wrap() -> T:
        return await coro

    return asyncio.run(wrap())


class PublishedTest(MountCase):
    backend: MafsbxBackend

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.backend = MafsbxBackend(cls.mnt)

    def key(self, thread: str) -> Any:
        return ms.SandboxKey(scope=self.scope, thread_id=thread, agent_dir="agent")

    def acquire(self, thread: str, **kw: Any) -> MafsbxSandbox:
        return run(self.backend.acquire(self.key(thread), ms.SandboxSpec(kind="probe", work_dir=W, **kw)))

    def test_the_generation_and_its_declarations(self) -> None:
        self.assertEqual(adapter.PROTOCOL, "0.21")
        self.assertFalse(hasattr(ms, "BackendDeclarations"))
        b = self.backend
        self.assertIsInstance(b, ms.SandboxBackend)
        self.assertFalse(hasattr(b, "declarations"))  # 0.21 reads the attributes
        C = ms.Capability
        self.assertEqual(b.capabilities, frozenset({C.EXEC, C.FILES_IN, C.FILES_OUT, C.FILES_DELETE,
                                                    C.FILES_LIST, C.HOST_TOOLS}))
        self.assertEqual(b.os_families, frozenset({ms.OsFamily.POSIX}))
        self.assertIn(ms.Egress.CLOSED, b.egress_modes)
        ceiling = ms.TransferLimits(64 << 20, 256 << 20, 256)
        self.assertEqual(b.limits, ms.SandboxLimits(ceiling, ceiling))
        # 0.21's router takes it (the isolation floor) and matches a spec
        # asking for listing against the attributes
        router = ms.SandboxRouter([b], min_isolation=ms.Isolation.CONTAINER)
        spec = ms.SandboxSpec(kind="probe", requires=frozenset({C.EXEC, C.FILES_LIST}))
        router.ensure_can_serve(spec)
        with self.assertRaises(ms.SandboxCapabilityNotSupported):
            router.ensure_can_serve(ms.SandboxSpec(kind="probe", requires=frozenset({C.RUN_CODE})))

    def test_a_round_trip_and_the_disposals_return_types(self) -> None:
        key = self.key("round")
        self.assertFalse(hasattr(key, "call_id"))
        sbx = self.acquire("round", requires=frozenset({ms.Capability.EXEC, ms.Capability.FILES_LIST}))
        self.assertEqual(sbx.container_name, sbx.name)
        self.assertTrue(container_exists(sbx.container_name))
        run(sbx.write_file("a/b.txt", "naïve\n", working_directory=W))
        r = run(sbx.exec(["cat", "a/b.txt"], working_directory=W, timeout=30))
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (0, "naïve\n", ""))  # 0.21's text result
        self.assertEqual(run(sbx.list_dir("a", working_directory=W)),
                         (ms.SandboxEntry("a/b.txt", ms.EntryKind.FILE, 7),))
        self.assertEqual(run(self.backend.acquire(key, ms.SandboxSpec(kind="probe", work_dir=W))).name, sbx.name)
        self.assertIsNone(run(self.backend.dispose(key)))
        self.assertFalse(container_exists(sbx.name))
        self.acquire("purge")
        self.acquire("purge")  # warm: the same sandbox
        n = run(self.backend.dispose_scope(self.scope, "purge"))
        self.assertIs(type(n), int)
        self.assertEqual(n, 1)
        self.assertEqual(run(self.backend.dispose_scope(self.scope, "purge")), 0)

    def probes(self, thread: str, suite: Callable[[Any], Awaitable[Tuple[Any, ...]]]) -> None:
        sbx = self.acquire(thread)
        subject = conformance.PosixGuestSubject(sandbox=sbx, working_directory=W,
                                                capabilities=self.backend.capabilities)
        results = run(suite(subject))
        failed = {r.probe.name: r.failure for r in results if r.failure}
        skipped = {r.probe.name: r.skipped for r in results if r.skipped}
        self.assertEqual(failed, {})
        self.assertEqual(skipped, {})  # FILES_LIST declared: the listing probes run too
        self.assertTrue(results)
        print(f"{thread}: {len(results)} of {len(results)} probes passed")

    def test_files_out_probes(self) -> None:
        self.probes("files-out", conformance.run_files_out_probes)

    def test_files_in_probes(self) -> None:
        self.probes("files-in", conformance.run_files_in_probes)

    def test_files_delete_probes(self) -> None:
        self.probes("files-delete", conformance.run_files_delete_probes)

    def test_exec_probes(self) -> None:
        # last probe: a 1 s bound on `sleep 30` raises TimeoutError (the sandbox goes)
        self.probes("exec", conformance.run_exec_probes)


if __name__ == "__main__":
    main()
