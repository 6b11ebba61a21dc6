"""mafsbx.maf, the maf-sandbox backend over a mount, against a real mount.

maf-sandbox cannot be installed here: these tests import the stand-in of its
protocol types (tests/python/maf_sandbox/). What they check is the protocol's
behaviour as the Python Docker backend gives it: the conformance probes of
the files-out, files-in, exec and files-delete suites over the hostile layout,
the round trip, declarations, disposal, reap, and the error classes.
"""

from __future__ import annotations

import asyncio
import os
import time
import unittest
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Awaitable, Tuple, Type, TypeVar

import maf_sandbox as ms
import mafsbx
import mafsbx.maf as adapter
from mafsbx.maf import MafsbxBackend, MafsbxSandbox

from mountcase import MountCase, container_exists, main, scope_containers

assert getattr(ms, "STAND_IN", False), "these tests are written against the stand-in"

T = TypeVar("T")
W = "/maf-sandbox/work"
O = W + "-outside"  # a sibling sharing the prefix
SECRET = b"the guest must not reach this\n"


def run(coro: Awaitable[T]) -> T:
    async def wrap() -> T:
        return await coro

    return asyncio.run(wrap())


class AdapterTest(MountCase):
    backend: MafsbxBackend

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.backend = MafsbxBackend(cls.mnt)

    def key(self, thread: str, call: str = "") -> ms.SandboxKey:
        return ms.SandboxKey(self.scope, thread, "agent", call)

    def spec(self, kind: str = "probe", **kw: Any) -> ms.SandboxSpec:
        kw.setdefault("requires", frozenset({ms.Capability.EXEC, ms.Capability.FILES_IN,
                                             ms.Capability.FILES_OUT, ms.Capability.FILES_DELETE}))
        return ms.SandboxSpec(kind=kind, **kw)

    def acquire(self, thread: str, kind: str = "probe", **kw: Any) -> MafsbxSandbox:
        return run(self.backend.acquire(self.key(thread), self.spec(kind, **kw)))

    def sh(self, sbx: MafsbxSandbox, script: str) -> ms.ExecResult:
        r = run(sbx.exec(script, working_directory=".", timeout=60))
        self.assertEqual(r.exit_code, 0, r.stderr_text)
        return r

    def plant(self, sbx: MafsbxSandbox) -> None:
        """The hostile layout: W and O (W-outside), links from W into O."""
        self.sh(sbx, f"""set -e
            mkdir -p {W}/real {O}/sub
            printf 'a legitimate output\\n' > {W}/real/inside.txt
            printf 'not a directory\\n' > {W}/plain.txt
            printf 'the guest must not reach this\\n' > {O}/secret.txt
            printf 'the guest must not reach this\\n' > {O}/sub/leaf.txt
            ln -sfn {O} {W}/link-dir
            ln -sfn {O}/secret.txt {W}/link-file""")

    def refuses(self, cls: Type[BaseException], coro: Awaitable[Any]) -> BaseException:
        """The call raises exactly the family the protocol names."""
        with self.assertRaises(cls) as cm:
            run(coro)
        return cm.exception

    def guest_cat(self, sbx: MafsbxSandbox, path: str) -> bytes:
        r = run(sbx.exec(["cat", path], working_directory="/", timeout=30))
        return r.stdout_bytes if r.exit_code == 0 else b"<absent>"

    # ---- identity, declarations -------------------------------------------------

    def test_backend_identity(self) -> None:
        b = self.backend
        self.assertIsInstance(b, ms.SandboxBackend)
        self.assertEqual(b.name, "docker")
        self.assertEqual(MafsbxBackend(self.mnt, name="mafsbxfs").name, "mafsbxfs")
        self.assertIs(b.isolation, ms.Isolation.CONTAINER)
        d = b.declarations
        self.assertIsInstance(d, ms.BackendDeclarations)
        C = ms.Capability
        self.assertEqual(adapter.PROTOCOL, "0.26")
        # FILES_LIST: the adapter lists through the mount (list_dir), on both planes
        self.assertEqual(d.capabilities, frozenset({C.EXEC, C.FILES_IN, C.FILES_OUT, C.FILES_DELETE,
                                                    C.FILES_LIST, C.HOST_TOOLS, C.RECLAIM}))
        # the same values as 0.21 reads them, from attributes of the backend
        self.assertEqual((b.capabilities, b.limits, b.egress_modes, b.os_families),
                         (d.capabilities, d.limits, d.egress_modes, d.os_families))
        ceiling = ms.TransferLimits(64 << 20, 256 << 20, 256)
        self.assertEqual(d.limits, ms.SandboxLimits(ceiling, ceiling))
        self.assertIn(ms.Egress.CLOSED, d.egress_modes)
        self.assertNotIn(ms.Egress.UNRESTRICTED, d.egress_modes)
        served = set(mafsbx.Mount(self.mnt).declarations()["egress_modes"])
        self.assertEqual({str(e) for e in d.egress_modes}, served)
        self.assertEqual(d.os_families, frozenset({ms.OsFamily.POSIX}))
        self.assertEqual(d.isolation_scopes, frozenset({ms.IsolationScope.CONVERSATION, ms.IsolationScope.CALL}))
        self.assertFalse(d.observes_egress)

    # ---- round trip (the Docker e2e scenario) -----------------------------------

    def test_round_trip(self) -> None:
        key, spec = self.key("round"), self.spec("round")
        # two acquires of one key in flight at once: one sandbox
        async def both() -> Tuple[MafsbxSandbox, MafsbxSandbox]:
            a, b = await asyncio.gather(self.backend.acquire(key, spec), self.backend.acquire(key, spec))
            return a, b
        sbx, twin = run(both())
        self.assertIsInstance(sbx, ms.Sandbox)
        self.assertEqual(sbx.name, twin.name)
        self.assertEqual(sbx.container_name, sbx.name)  # what upstream's tests read
        self.assertEqual(len(sbx.instance_id or ""), 64)
        self.assertEqual(sbx.work_dir, W)
        run(sbx.write_file("nested/deep/main.txt", "param naïve string\n", working_directory=W))
        r = run(sbx.exec(["cat", "nested/deep/main.txt"], working_directory=".", timeout=30))
        self.assertEqual(r.stdout_bytes, "param naïve string\n".encode())
        self.assertEqual(r.stdout, "param naïve string\n")
        self.assertEqual(run(sbx.exec("exit 7", working_directory=".", timeout=30)).exit_code, 7)
        self.assertEqual(run(self.backend.acquire(key, spec)).name, sbx.name)
        self.assertIsNone(run(self.backend.dispose(key)))
        self.assertFalse(container_exists(sbx.name))
        self.assertIsNone(run(self.backend.dispose(key)))  # already gone: success

    # ---- exec probes -------------------------------------------------------------

    def test_exec_probes(self) -> None:
        sbx = self.acquire("exec")
        ex = lambda cmd, wd=".", t=30.0: run(sbx.exec(cmd, working_directory=wd, timeout=t))  # noqa: E731
        r = ex(["printf", "ok-ran"])
        self.assertEqual((r.exit_code, r.stdout_bytes), (0, b"ok-ran"))
        self.assertEqual(ex("exit 7").exit_code, 7)
        r = ex(["sh", "-c", "printf '%s' \"$1\"", "probe", "a b$(echo injected)c"])
        self.assertEqual(r.stdout_bytes, b"a b$(echo injected)c")
        self.assertEqual(ex(["pwd"]).stdout_bytes, f"{W}\n".encode())
        self.assertEqual(ex(["pwd"], wd="/tmp").stdout_bytes, b"/tmp\n")
        r = ex("printf out; printf err >&2")
        self.assertEqual((r.stdout_bytes, r.stderr_bytes), (b"out", b"err"))
        r = ex("printf '\\377\\000\\r\\nx'")
        self.assertEqual(r.stdout_bytes, b"\xff\x00\r\nx")
        with self.assertRaises(ValueError):
            ex(["true"], t=0)
        with self.assertRaises(ValueError):
            ex(["true"], t=100000)  # over the mount's ceiling: refused, not a TimeoutError
        # run_code is not declared
        self.refuses(NotImplementedError, sbx.run_code("1", timeout=5))
        # any timeout the mount takes is the command's: fractions, and past
        # the mount's default (-o exec_timeout, 300 s) up to its ceiling
        self.assertEqual(ex(["true"], t=0.5).exit_code, 0)
        self.assertEqual(ex(["true"], t=3600).exit_code, 0)
        # the timeout probe (last: it discards the container)
        t0 = time.monotonic()
        with self.assertRaises(TimeoutError):
            ex(["sleep", "30"], t=1)
        took = time.monotonic() - t0
        self.assertGreaterEqual(took, 0.5)
        self.assertLessEqual(took, 4.0)
        self.assertFalse(container_exists(sbx.name))
        purge = run(self.backend.dispose_scope(self.scope, "exec"))
        self.assertEqual(purge, ms.ScopePurge(0, None))

    # ---- files-out probes ----------------------------------------------------------

    def test_files_out_probes(self) -> None:
        sbx = self.acquire("files-out")
        self.plant(sbx)
        stat = lambda p, wd=W: run(sbx.stat_file(p, working_directory=wd))  # noqa: E731
        read = lambda p, wd=W, n=1 << 20: sbx.read_file(p, working_directory=wd, max_bytes=n)  # noqa: E731

        self.assertEqual(stat("real/inside.txt"), ms.SandboxEntry("real/inside.txt", ms.EntryKind.FILE, 20))
        self.assertEqual(run(read("real/inside.txt")), b"a legitimate output\n")
        self.assertEqual(stat("link-file"), ms.SandboxEntry("link-file", ms.EntryKind.SYMLINK, None))
        e = self.refuses(OSError, read("link-file"))
        self.assertIn("not a regular file", str(e))
        self.assertIn("real directory", str(self.refuses(ValueError, sbx.stat_file(
            "link-dir/secret.txt", working_directory=W))))
        self.refuses(ValueError, read("link-dir/secret.txt"))
        self.refuses(ValueError, sbx.stat_file("secret.txt", working_directory=f"{W}/link-dir"))
        self.refuses(ValueError, read("secret.txt", f"{W}/link-dir"))
        self.refuses(ValueError, sbx.stat_file(".", working_directory=f"{W}/link-dir"))
        self.refuses(ValueError, sbx.stat_file("leaf.txt", working_directory=f"{W}/link-dir/sub"))
        self.refuses(ValueError, read("leaf.txt", f"{W}/link-dir/sub"))
        self.refuses(NotADirectoryError, sbx.stat_file("plain.txt/deeper.txt", working_directory=W))
        # escapes and backslashes: refused by name, the sibling sharing the prefix too
        self.refuses(ValueError, sbx.stat_file("../work-outside/secret.txt", working_directory=W))
        self.refuses(ValueError, read(f"{O}/secret.txt"))
        self.refuses(ValueError, sbx.stat_file("real\\inside.txt", working_directory=W))
        # kinds, sizes, absence; a missing middle component: None / FileNotFoundError
        self.assertEqual(stat("real"), ms.SandboxEntry("real", ms.EntryKind.DIRECTORY, None))
        self.assertIsNone(stat("nothing/here.txt"))
        self.refuses(FileNotFoundError, read("nothing/here.txt"))
        self.refuses(OSError, read("real"))
        self.sh(sbx, "mkfifo fifo")
        self.assertEqual(stat("fifo"), ms.SandboxEntry("fifo", ms.EntryKind.OTHER, None))
        self.assertIn("not a regular file", str(self.refuses(OSError, read("fifo"))))
        self.sh(sbx, ": > locked; chmod 000 locked")  # an empty mode-0000 file is still a file
        self.assertEqual(stat("locked"), ms.SandboxEntry("locked", ms.EntryKind.FILE, 0))
        self.assertEqual(run(read("locked")), b"")
        # paths are reported relative to the working directory as spelled
        self.assertEqual(stat("inside.txt", f"{W}/real/."), ms.SandboxEntry("inside.txt", ms.EntryKind.FILE, 20))
        self.assertEqual(stat(f"{W}/real/inside.txt", f"{W}/real"), ms.SandboxEntry("inside.txt", ms.EntryKind.FILE, 20))
        self.assertEqual(stat("inside.txt", "real"), ms.SandboxEntry("inside.txt", ms.EntryKind.FILE, 20))  # relative: under the base
        # a PNG-like payload, exact; a cap is a refusal, never a truncation
        png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
        run(sbx.write_file("img.png", png, working_directory=W))
        self.assertEqual(stat("img.png"), ms.SandboxEntry("img.png", ms.EntryKind.FILE, len(png)))
        self.assertEqual(run(read("img.png")), png)
        self.assertEqual(run(read("img.png", n=len(png))), png)
        self.sh(sbx, "head -c 5000 /dev/zero > big.bin")
        e = self.refuses(ms.SandboxTransferCapExceeded, read("big.bin", n=100))
        self.assertIn("5000", str(e))
        self.refuses(ValueError, read("big.bin", n=-1))
        # an absolute link at the leaf and a link to a directory as a parent
        self.sh(sbx, "ln -s /etc/passwd link; ln -sfn /etc out")
        self.assertEqual(stat("link").kind, ms.EntryKind.SYMLINK)  # type: ignore[union-attr]
        self.refuses(OSError, read("link"))
        self.assertIn("real directory", str(self.refuses(ValueError, sbx.stat_file(
            "out/hostname", working_directory=W))))
        self.refuses(ValueError, read("out/hostname"))
        # outside the work dir (root/): readable where the name check allows it
        self.assertEqual(run(read("secret.txt", O)), SECRET)
        self.assertEqual(run(sbx.stat_file("sub", working_directory=O)).kind,  # type: ignore[union-attr]
                         ms.EntryKind.DIRECTORY)

    # ---- listing (FILES_LIST) --------------------------------------------------------

    def test_listing_probes(self) -> None:
        # a spec requiring FILES_LIST is served (the mount is not asked for it)
        sbx = self.acquire("listing", requires=frozenset({ms.Capability.EXEC, ms.Capability.FILES_IN,
                                                          ms.Capability.FILES_LIST}))
        self.plant(sbx)
        ls = lambda p, wd=W: run(sbx.list_dir(p, working_directory=wd))  # noqa: E731
        E, K = ms.SandboxEntry, ms.EntryKind
        top = {e.path: e for e in ls(".")}
        self.assertEqual(top["link-file"], E("link-file", K.SYMLINK, None))  # named, as a link
        self.assertEqual(top["link-dir"], E("link-dir", K.SYMLINK, None))
        self.assertEqual(top["plain.txt"], E("plain.txt", K.FILE, 16))
        self.assertEqual(top["real"], E("real", K.DIRECTORY, None))
        self.assertEqual(ls("real"), (E("real/inside.txt", K.FILE, 20),))
        self.assertEqual(ls(".", f"{W}/real"), (E("inside.txt", K.FILE, 20),))
        # a linked directory, a linked parent, a linked ancestor of the working directory
        self.assertIn("link", str(self.refuses(ValueError, sbx.list_dir("link-dir", working_directory=W))))
        self.refuses(ValueError, sbx.list_dir("link-dir/sub", working_directory=W))
        self.refuses(ValueError, sbx.list_dir(".", working_directory=f"{W}/link-dir/sub"))
        self.refuses(ValueError, sbx.list_dir(".", working_directory=f"{W}/link-dir"))
        self.refuses(ValueError, sbx.list_dir("..", working_directory=W))  # an escape by name
        self.refuses(NotADirectoryError, sbx.list_dir("plain.txt", working_directory=W))
        self.refuses(FileNotFoundError, sbx.list_dir("nothing", working_directory=W))
        # kinds: a fifo is other; outside the work dir (root/) lists as well
        self.sh(sbx, "mkfifo real/fifo")
        self.assertEqual(ls("real")[0], E("real/fifo", K.OTHER, None))
        self.assertEqual(ls(".", O), (E("secret.txt", K.FILE, len(SECRET)), E("sub", K.DIRECTORY, None)))

    # ---- files-in probes -----------------------------------------------------------

    def test_files_in_probes(self) -> None:
        sbx = self.acquire("files-in")
        self.plant(sbx)
        write = lambda p, c, wd=W: sbx.write_file(p, c, working_directory=wd)  # noqa: E731

        run(write("real/written.txt", "written"))
        self.sh(sbx, f"test -f {W}/real/written.txt")
        self.assertEqual(self.guest_cat(sbx, f"{W}/real/written.txt"), b"written")
        text = "ünïcödé→payload" + "".join(chr(i) for i in range(1, 128))
        run(write("bytes.txt", text.encode("utf-8")))
        self.assertEqual(self.guest_cat(sbx, f"{W}/bytes.txt").decode("utf-8"), text)
        run(write("str.txt", "naïve"))
        self.assertEqual(self.guest_cat(sbx, f"{W}/str.txt"), "naïve".encode())
        run(write("again.txt", "first"))
        run(write("again.txt", "second"))
        self.assertEqual(self.guest_cat(sbx, f"{W}/again.txt"), b"second")
        run(write("deep/er/est/leaf.txt", "x"))
        self.sh(sbx, f"test -f {W}/deep/er/est/leaf.txt")
        # missing directories are made 0755, the file 0644
        r = self.sh(sbx, f"stat -c %a {W}/deep/er {W}/deep/er/est/leaf.txt")
        self.assertEqual(r.stdout_bytes, b"755\n644\n")

        self.refuses(ValueError, write("../work-outside/planted.txt", "x"))
        self.assertEqual(self.guest_cat(sbx, f"{O}/planted.txt"), b"<absent>")
        self.refuses(ValueError, write("link-dir/landed.txt", "x"))
        self.assertEqual(self.guest_cat(sbx, f"{O}/landed.txt"), b"<absent>")
        self.sh(sbx, f"printf known > {O}/target.txt; ln -sfn {O}/target.txt {W}/link-target")
        self.refuses(ValueError, write("link-target", "overwritten"))
        self.assertEqual(self.guest_cat(sbx, f"{O}/target.txt"), b"known")
        run(write("control.txt", "control"))
        self.refuses(ValueError, write(".", "x"))
        self.assertEqual(self.guest_cat(sbx, f"{W}/control.txt"), b"control")
        self.refuses(ValueError, write("sub\\file.txt", "x"))
        self.refuses(ValueError, write("landed.txt", "x", f"{W}/link-dir"))
        self.refuses(ValueError, write("landed.txt", "x", f"{W}/link-dir/sub"))
        self.assertEqual(self.guest_cat(sbx, f"{O}/sub/landed.txt"), b"<absent>")
        self.refuses(NotADirectoryError, write("plain.txt/x.txt", "x"))
        self.refuses(RuntimeError, write("real", "x"))  # a directory stands there
        self.refuses(TypeError, write("n.txt", 42))

        # outside the work dir (the conformance harness plants files there):
        # written by the guest after the same checks
        run(write(f"{O}/planted/deeper.txt", b"planted\x00", "/"))
        self.assertEqual(self.guest_cat(sbx, f"{O}/planted/deeper.txt"), b"planted\x00")
        run(write("planted.txt", "second", O))
        self.assertEqual(self.guest_cat(sbx, f"{O}/planted.txt"), b"second")
        self.sh(sbx, f"ln -sfn {W} {O}/back")
        self.refuses(ValueError, write("back/x.txt", "x", O))
        self.refuses(ValueError, write("x.txt", "x", f"{O}/back"))
        self.refuses(ValueError, write("back", "x", O))

    # ---- files-delete probes -------------------------------------------------------

    def test_files_delete_probes(self) -> None:
        sbx = self.acquire("files-delete")
        self.plant(sbx)
        rm = lambda p, rec=False, wd=W: sbx.remove(p, working_directory=wd, recursive=rec)  # noqa: E731
        exists = lambda p: self.guest_cat(sbx, p) != b"<absent>"  # noqa: E731

        self.sh(sbx, "printf t > target.txt; printf b > bystander.txt")
        run(rm("target.txt"))
        self.assertFalse(exists(f"{W}/target.txt"))
        self.assertTrue(exists(f"{W}/bystander.txt"))
        run(rm("target.txt"))  # missing: success, twice
        for rec in (False, True):
            self.sh(sbx, f"printf t > {O}/target.txt; ln -sfn {O}/target.txt {W}/a-link")
            run(rm("a-link", rec))
            self.assertEqual(self.sh(sbx, "test -L a-link || echo gone").stdout, "gone\n")
            self.assertTrue(exists(f"{O}/target.txt"))
            self.refuses(ValueError, rm("link-dir/target.txt", rec))
            self.assertTrue(exists(f"{O}/target.txt"))
            self.refuses(ValueError, rm(".", rec))
            self.refuses(ValueError, rm("../work-outside/target.txt", rec))
            self.assertTrue(exists(f"{O}/target.txt"))
        self.assertTrue(exists(f"{W}/bystander.txt"))
        self.sh(sbx, "mkdir -p dir empty tree/sub; printf c > dir/content; printf l > tree/leaf.txt; printf s > sibling")
        e = self.refuses(OSError, rm("dir"))
        self.assertIn("rm exited", str(e))
        self.assertTrue(exists(f"{W}/dir/content"))
        self.refuses(OSError, rm("empty"))
        run(rm("empty", True))
        self.assertEqual(self.sh(sbx, "test -d empty || echo gone").stdout, "gone\n")
        run(rm("tree", True))
        self.assertFalse(exists(f"{W}/tree/leaf.txt"))
        self.assertTrue(exists(f"{W}/sibling"))
        self.sh(sbx, f"mkdir -p linked-tree; printf i > {O}/interior-target.txt; "
                     f"ln -sfn {O}/interior-target.txt linked-tree/inside-link")
        run(rm("linked-tree", True))
        self.assertEqual(self.sh(sbx, "test -e linked-tree || echo gone").stdout, "gone\n")
        self.assertTrue(exists(f"{O}/interior-target.txt"))
        self.refuses(NotADirectoryError, rm("plain.txt/x"))

    # ---- reclaim -------------------------------------------------------------------

    def test_reclaim(self) -> None:
        sbx = self.acquire("reclaim")
        self.sh(sbx, "mkdir -p run-1/deep; printf x > run-1/deep/f; printf k > keep")
        run(sbx.reclaim("run-1", working_directory=W, timeout=60))
        self.assertEqual(self.sh(sbx, "test -e run-1 || echo gone; cat keep").stdout, "gone\nk")
        run(sbx.reclaim("run-1", working_directory=W, timeout=60))  # missing: success
        run(sbx.reclaim(f"{W}/nothing", working_directory="/", timeout=60))
        self.refuses(ValueError, sbx.reclaim(".", working_directory=W, timeout=60))
        self.refuses(ValueError, sbx.reclaim("/a", working_directory="/", timeout=60))
        self.refuses(ValueError, sbx.reclaim("../x", working_directory=W, timeout=60))

    # ---- errors, disposal, reap ----------------------------------------------------

    def test_refusals_name_the_protocols_classes(self) -> None:
        key = self.key("refusals")
        e = self.refuses(ms.SandboxCapabilityNotSupported, self.backend.acquire(
            key, self.spec("rc", requires=frozenset({ms.Capability.EXEC, ms.Capability.RUN_CODE}))))
        self.assertIsInstance(e.__cause__, mafsbx.MafsbxError)
        self.refuses(ms.SandboxEgressNotEnforced, self.backend.acquire(
            key, self.spec("eg", egress=ms.Egress.UNRESTRICTED)))
        over = ms.TransferLimits(64 << 20, 256 << 20, 257)
        self.refuses(ms.SandboxTransferLimitsNotPermitted, self.backend.acquire(
            key, self.spec("lim", files_in=over)))
        self.refuses(ValueError, self.backend.acquire(key, self.spec("cs", isolation_scope="call")))
        self.assertEqual(scope_containers(self.scope + "-none"), [])

    def test_dispose(self) -> None:
        a = self.acquire("dispose", kind="one")
        b = self.acquire("dispose", kind="two")
        self.assertIsNone(run(self.backend.dispose(self.key("dispose"), kind="one")))
        self.assertFalse(container_exists(a.name))
        self.assertTrue(container_exists(b.name))
        # call scope: its own sandbox, disposed apart from the conversation's
        call = run(self.backend.acquire(self.key("dispose", "c1"),
                                        self.spec("two", isolation_scope=ms.IsolationScope.CALL)))
        self.assertNotEqual(call.name, b.name)
        self.assertIsNone(run(self.backend.dispose(self.key("dispose", "c1"))))
        self.assertFalse(container_exists(call.name))
        self.assertTrue(container_exists(b.name))
        # by instance id: a wrong id removes nothing
        self.assertIsNone(run(self.backend.dispose(self.key("dispose"), instance_id="0" * 64)))
        self.assertTrue(container_exists(b.name))
        # a second backend (another process, say) purges what it never made
        other = MafsbxBackend(mafsbx.Mount(self.mnt))
        purge = run(other.dispose_scope(self.scope, "dispose"))
        self.assertEqual(purge, ms.ScopePurge(1, None))
        self.assertFalse(container_exists(b.name))
        # never raises: a refusal comes back as a DisposalFailure
        failure = run(self.backend.dispose(ms.SandboxKey(self.scope + "-other", "t", "a")))
        self.assertIsInstance(failure, ms.DisposalFailure)
        assert failure is not None
        self.assertEqual(failure.code, "refused")
        purge = run(self.backend.dispose_scope(self.scope + "-other", "t"))
        self.assertEqual(purge.disposed, 0)
        self.assertEqual(purge.undisposed.code, "refused")  # type: ignore[union-attr]

    def test_reap(self) -> None:
        cli = os.environ.get("MAFSBX_CLI")
        if not cli:
            self.skipTest("MAFSBX_CLI is not set (meson sets it)")
        b = MafsbxBackend(self.mnt, mafsbx=cli)
        self.refuses(ValueError, b.reap(timedelta(0)))
        self.refuses(ValueError, b.reap(timedelta(seconds=-5)))
        self.refuses(RuntimeError, MafsbxBackend(self.mnt, mafsbx="no-such-mafsbx-program").reap(
            timedelta(days=1)))
        sbx = self.acquire("reap")
        young = run(b.reap(timedelta(days=1), scope=self.scope))
        self.assertEqual(young, adapter.ReapResult(0, 0, 0, ()))
        self.assertTrue(container_exists(sbx.name))
        time.sleep(2.2)
        old = run(b.reap(timedelta(seconds=1), scope=self.scope))
        self.assertGreaterEqual(old.disposed, 1)
        self.assertEqual(old.failures, ())
        self.assertFalse(container_exists(sbx.name))


class ShapesTest(unittest.TestCase):
    """The adapter against other shapes of the protocol's types (no mount)."""

    def test_a_text_only_exec_result(self) -> None:
        @dataclass(frozen=True)
        class TextResult:  # maf-sandbox before results kept bytes
            stdout: str
            stderr: str = ""
            exit_code: int = 0

        saved = adapter.ExecResult
        adapter.ExecResult = TextResult  # type: ignore[misc, assignment]
        try:
            r = adapter._exec_result(b"ok \xff", b"", 3)
        finally:
            adapter.ExecResult = saved  # type: ignore[misc]
        self.assertEqual(r, TextResult("ok \ufffd", "", 3))
        self.assertEqual(adapter._exec_result(b"\xff", b"e", 1), ms.ExecResult(b"\xff", b"e", 1))

    def test_only_the_execs_own_bound_is_a_timeout(self) -> None:
        def failure(reply: Any) -> BaseException:
            return adapter._exec_failure(mafsbx.errors.error_from_reply(reply), "sbx", 1)

        base = {"ok": False, "error": {"errno": "ETIMEDOUT", "type": "TimeoutError", "message": "timed out"}}
        own = failure({**base, "stdout_b64": "", "stderr_b64": "", "exit_code": -1, "timed_out": True})
        self.assertIsInstance(own, TimeoutError)
        engine = failure(base)  # an engine call that timed out: not the caller's budget
        self.assertNotIsInstance(engine, TimeoutError)
        self.assertIsInstance(engine, RuntimeError)
        other = mafsbx.errors.error_from_reply(
            {"ok": False, "error": {"errno": "EINVAL", "type": "ValueError", "message": "bad"}})
        self.assertIs(adapter._exec_failure(other, "sbx", 1), other)

    def test_confinement_by_name(self) -> None:
        self.assertEqual(adapter._confine("a/../b", W), f"{W}/b")
        self.assertEqual(adapter._confine(f"{W}/x", W), f"{W}/x")
        self.assertEqual(adapter._confine(".", W), W)
        self.assertEqual(adapter._single_rooted("//maf-sandbox/work"), W)
        for bad in ("../work-outside/x", "/etc/passwd", "a\\b", "..", "x\0y"):
            with self.assertRaises(ValueError, msg=bad):
                adapter._confine(bad, W)


if __name__ == "__main__":
    main()
