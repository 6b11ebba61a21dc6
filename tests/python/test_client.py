"""The mafsbx package (contrib/python) through a real mafsbxfs mount.

The story of a sandbox, the errors as their replies name them, 32 threads at
once on one Mount, detached jobs, the asyncio wrapper, the context managers
(``with mount.acquire(...) as sb:`` leaves no container, on an exception
too), following a job's output as it is written (a line every 0.2 s arrives
within a generous 1.5 s of its printing, measured against the guest's
/proc/uptime, which is the host's CLOCK_BOOTTIME; 32 jobs at once on one
event loop, which never blocks for more than a generous 250 ms), check=True,
one exception class per timeout, and the package itself (version, py.typed,
mafsbx.maf imported only on request, no built-in names exported).

The measured figures go to stderr (meson's log).
"""

from __future__ import annotations

import asyncio
import errno
import os
import pickle
import subprocess
import sys
import threading
import time
import unittest
from typing import Dict, List, Tuple

import mafsbx
from mafsbx import aio
from mafsbx.errors import MafsbxError

from mountcase import IMAGE, MountCase, container_exists, is_mounted, main

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(os.path.abspath(mafsbx.__file__))

# A guest loop printing "I UPTIME" every 0.2 s: UPTIME is /proc/uptime's, the
# host's CLOCK_BOOTTIME to 10 ms (no time namespace), read by the shell itself.
TICKS = ("i=0; while [ $i -lt {n} ]; do read up idle < /proc/uptime; echo \"$i $up\"; "
         "i=$((i+1)); sleep 0.2; done")
# How late a line may arrive on this loaded machine (the aim is 0.5 s).
LATE = 1.5


def boottime() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def lateness(line: str, now: float) -> Tuple[int, float]:
    """(line number, seconds from its printing to now) of a TICKS line."""
    i, up = line.split()
    return int(i), now - float(up)


class ClientTest(MountCase):
    m: mafsbx.Mount

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.m = mafsbx.Mount(cls.mnt)

    def acquire(self, thread: str, kind: str = "python", **fields: object) -> mafsbx.Sandbox:
        return self.m.acquire(scope=self.scope, thread=thread, agent="analyst", kind=kind, **fields)

    def test_story(self) -> None:
        sbx = self.acquire("story", outputs=["result.json"])
        self.assertTrue(sbx.name.startswith(mafsbx.SANDBOX_PREFIX), sbx.name)
        self.assertEqual(len(sbx.id or ""), 64)
        self.assertEqual(sbx.state, "created")
        self.assertEqual(sbx.work_dir, "/maf-sandbox/work")
        self.assertIsInstance(sbx.uid, int)
        self.assertEqual(sbx.path, self.m.path / sbx.name)
        self.assertEqual(sbx.work, self.m.path / sbx.name / "work")
        self.assertEqual(sbx.root, self.m.path / sbx.name / "root")
        again = self.acquire("story")
        self.assertEqual((again.name, again.state), (sbx.name, "reused"))
        self.assertEqual(again, sbx)
        self.assertIn(sbx, self.m.sandboxes())

        st = sbx.status()
        self.assertEqual(st["name"], sbx.name)
        self.assertEqual(st["id"], sbx.id)
        self.assertEqual(st["kind"], "python")
        self.assertEqual(st["outputs"], ["result.json"])
        self.assertIn(st["plane"], ("local", "engine"))

        # work/ is a pathlib.Path into the mount; the command sees the file.
        (sbx.work / "in.txt").write_bytes(b"hello\x00world\n")
        r = sbx.exec("tr a-z A-Z < in.txt > out.txt; echo done; echo warn >&2; exit 3")
        self.assertIsInstance(r, mafsbx.ExecResult)
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (3, "done\n", "warn\n"))
        self.assertEqual((r.stdout_bytes, r.stderr_bytes), (b"done\n", b"warn\n"))
        self.assertFalse(r.timed_out)
        self.assertFalse(r.truncated)
        self.assertGreaterEqual(r.duration_ms, 0)
        self.assertEqual((sbx.work / "out.txt").read_bytes(), b"HELLO\x00WORLD\n")

        # argv (no shell), exact stdin bytes, env, an absolute cwd; bytes that
        # are not UTF-8 stay exact in stdout_bytes and are replaced in stdout.
        r = sbx.exec(["sh", "-c", 'cat; printf "%s" "$K"; pwd'], cwd="/", env={"K": "v $x"},
                     stdin=b"\xff\xfe in\n")
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(r.stdout_bytes, b"\xff\xfe in\nv $x/\n")
        self.assertEqual(r.stdout, "\ufffd\ufffd in\nv $x/\n")
        # an argv runs as given: no shell splits or expands it
        r = sbx.exec(["printf", "%s", "a b$(echo injected)c"])
        self.assertEqual(r.stdout, "a b$(echo injected)c")
        # a relative cwd resolves under the work dir; str stdin is UTF-8
        (sbx.work / "sub").mkdir()
        r = sbx.exec(["sh", "-c", "pwd; cat"], cwd="sub", stdin="naïve")
        self.assertEqual(r.stdout, "/maf-sandbox/work/sub\nnaïve")
        r = sbx.exec(["id", "-u"], user="1234")
        self.assertEqual(r.stdout, "1234\n")
        # a command the runtime cannot start is a result (127, 126), not an error
        self.assertEqual(sbx.exec(["no-such-program"]).exit_code, 127)
        self.assertEqual(sbx.exec(["true"], cwd="/no/such/dir").exit_code, 126)

        # root/ is the guest's whole filesystem, read-only
        self.assertTrue((sbx.root / "bin" / "busybox").is_file())
        self.assertTrue((sbx.root / "bin" / "sh").is_symlink())  # shown, never followed
        with self.assertRaises(OSError) as cm:
            (sbx.root / "etc" / "planted").write_text("x")
        self.assertEqual(cm.exception.errno, errno.EROFS)

        d = sbx.dispose()
        self.assertEqual(d, mafsbx.Disposal(disposed=1, failures=()))
        self.assertFalse(sbx.path.exists())
        self.assertFalse(container_exists(sbx.name))
        self.assertEqual(sbx.dispose().disposed, 0)

        # a conversation, by key: every agent and kind of (scope, thread)
        a = self.acquire("conv", kind="one")
        b = self.acquire("conv", kind="two")
        self.assertNotEqual(a.name, b.name)
        d = self.m.dispose(scope=self.scope, thread="conv", agent="analyst", kind="one")
        self.assertEqual(d.disposed, 1)
        self.assertTrue(b.path.exists())
        self.assertEqual(self.m.dispose(scope=self.scope, thread="conv").disposed, 1)
        left = self.m.sandboxes()
        self.assertNotIn(a, left)
        self.assertNotIn(b, left)

    def test_errors(self) -> None:
        ghost = self.m.sandbox("maf-sandbox-docker-000000000000")
        with self.assertRaises(LookupError) as cm:
            ghost.exec(["true"])
        e = cm.exception
        self.assertIsInstance(e, MafsbxError)
        self.assertIsInstance(e, mafsbx.errors.LookupError)
        assert isinstance(e, MafsbxError)
        self.assertEqual((e.errno, e.errno_name, e.error_type), (errno.ENOENT, "ENOENT", "LookupError"))
        self.assertIn("no sandbox named maf-sandbox-docker-000000000000", str(e))
        self.assertEqual(e.message, str(e))
        self.assertIsNotNone(e.reply)
        assert e.reply is not None
        self.assertIs(e.reply["ok"], False)
        self.assertIsNone(e.result)
        # the error survives pickling (a worker process may send it on)
        copy = pickle.loads(pickle.dumps(e))
        self.assertIs(type(copy), type(e))

        # an unknown field: ValueError naming it
        with self.assertRaises(ValueError) as cm2:
            self.acquire("errors", bogus_field=1)
        self.assertIn("bogus_field", str(cm2.exception))
        self.assertEqual(getattr(cm2.exception, "errno", None), errno.EINVAL)
        # another scope, on a mount of one scope: PermissionError (EACCES)
        with self.assertRaises(PermissionError) as cm3:
            self.m.acquire(scope=self.scope + "-other", thread="t", agent="a", kind="k")
        self.assertEqual(cm3.exception.errno, errno.EACCES)
        # an egress mode never served: upstream's class, a PermissionError
        with self.assertRaises(PermissionError) as cm4:
            self.acquire("errors", egress="unrestricted")
        self.assertIsInstance(cm4.exception, mafsbx.errors.SandboxEgressNotEnforced)
        # a capability the backend does not serve
        with self.assertRaises(RuntimeError) as cm5:
            self.acquire("errors", capabilities=["exec", "run_code"])
        self.assertIsInstance(cm5.exception, mafsbx.errors.SandboxCapabilityNotSupported)
        # what the client itself refuses: TypeError before any request
        sbx = self.acquire("errors")
        with self.assertRaises(TypeError):
            sbx.exec(b"true")  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            sbx.exec(["echo", 1])  # type: ignore[list-item]
        with self.assertRaises(ValueError) as cm6:
            sbx.exec(["true"], timeout=100000)
        self.assertIn("ceiling", str(cm6.exception))
        with self.assertRaises(FileNotFoundError):
            mafsbx.Mount(self.tmp)
        with self.assertRaises(ValueError):
            self.m.sandbox("../etc")

        # A timeout past the old 300 s ceiling is taken (24 h by default).
        self.assertEqual(sbx.exec(["true"], timeout=900).exit_code, 0)
        with self.assertRaises(ValueError):
            sbx.exec(["true"], on_timeout="later")

        # A timeout fails the request with TimeoutError; the result rides on
        # the error. On this host's engine the command is killed and the
        # sandbox kept, its files too.
        (sbx.work / "kept.txt").write_text("kept\n")
        t0 = time.monotonic()
        with self.assertRaises(TimeoutError) as cm7:
            sbx.exec(["sh", "-c", "echo before; sleep 30"], timeout=1)
        took = time.monotonic() - t0
        self.assertLess(took, 20)
        te = cm7.exception
        assert isinstance(te, MafsbxError)
        self.assertEqual(te.errno, errno.ETIMEDOUT)
        self.assertIsNotNone(te.result)
        assert te.result is not None
        self.assertTrue(te.result.timed_out)
        self.assertFalse(te.result.sandbox_disposed)
        self.assertEqual(te.result.stdout, "before\n")
        self.assertEqual(sbx.status()["state"], "running")
        self.assertEqual((sbx.work / "kept.txt").read_text(), "kept\n")

        # on_timeout="dispose": the sandbox is disposed, as the Python backend does.
        with self.assertRaises(TimeoutError) as cm8:
            sbx.exec(["sh", "-c", "echo before; sleep 30"], timeout=1, on_timeout="dispose")
        te = cm8.exception
        assert isinstance(te, MafsbxError) and te.result is not None
        self.assertTrue(te.result.timed_out)
        self.assertTrue(te.result.sandbox_disposed)
        with self.assertRaises(FileNotFoundError):
            sbx.status()
        self.assertFalse(container_exists(sbx.name))

    def test_threads(self) -> None:
        """32 threads on one Mount at once: acquires of four keys (each key
        one sandbox), then 32 one-second commands in parallel, and writes
        and reads of their own files through work/."""
        n, keys = 32, 4
        barrier = threading.Barrier(n)
        names: List[str] = [""] * n
        results: Dict[int, mafsbx.ExecResult] = {}
        errors: List[BaseException] = []
        elapsed: List[float] = [0.0]

        def worker(i: int) -> None:
            try:
                barrier.wait()
                sbx = self.acquire("threads", kind=f"k{i % keys}")
                names[i] = sbx.name
                (sbx.work / f"f{i}.txt").write_text(f"file {i}\n")
                barrier.wait()
                if i == 0:
                    elapsed[0] = time.monotonic()
                r = sbx.exec(["sh", "-c", f'sleep 1; cat f{i}.txt; cat; echo "$N"'],
                             stdin=f"stdin {i}\n", env={"N": str(i)})
                results[i] = r
                self.assertEqual((sbx.work / f"f{i}.txt").read_text(), f"file {i}\n")
            except BaseException as e:  # reported below, with the thread's index
                errors.append(e)
                barrier.abort()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        took = time.monotonic() - elapsed[0]
        self.assertFalse(any(t.is_alive() for t in threads), "a thread hangs")
        self.assertEqual(errors, [])
        self.assertEqual(len(set(names)), keys, names)
        for i in range(n):
            self.assertEqual(names[i], names[i % keys])
            self.assertEqual(results[i].exit_code, 0)
            self.assertEqual(results[i].stdout, f"file {i}\nstdin {i}\n{i}\n")
        print(f"32 threads: 32 one-second execs in 4 sandboxes took {took:.1f} s", file=sys.stderr)
        self.assertEqual(self.m.dispose(scope=self.scope, thread="threads").disposed, keys)

    def test_jobs(self) -> None:
        sbx = self.acquire("jobs")
        job = sbx.exec(["sh", "-c", "echo start; sleep 2; echo end >&2; exit 5"], detach=True)
        self.assertIsInstance(job, mafsbx.Job)
        self.assertEqual(job.path, sbx.path / "execs" / job.id)
        st = job.status()
        self.assertIs(st["running"], True, st)
        self.assertIsNone(st["exit_code"])
        self.assertFalse(job.done())
        self.assertIn(job.id, [j.id for j in sbx.jobs()])
        # the output grows while the command runs
        deadline = time.monotonic() + 5
        while job.stdout() != "start\n" and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(job.stdout(), "start\n")
        self.assertFalse(job.done(), "the output must be there before the end")
        self.assertEqual(job.stdout_bytes(2), b"art\n")
        # a wait that gives up: the built-in TimeoutError, the command runs on
        with self.assertRaises(TimeoutError) as cm:
            job.wait(timeout=0.2)
        self.assertNotIsInstance(cm.exception, MafsbxError)
        self.assertFalse(job.done())
        r = job.wait()
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (5, "start\n", "end\n"))
        self.assertFalse(r.timed_out or r.cancelled)
        self.assertTrue(job.done())
        st = job.status()
        self.assertEqual((st["exit_code"], st["stdout_bytes"], st["stderr_bytes"]), (5, 6, 4))
        self.assertEqual(job.stderr(), "end\n")
        # cancel of a finished job: forgotten, its result returned
        self.assertEqual(job.cancel(), r)
        self.assertFalse(job.path.exists())
        with self.assertRaises(FileNotFoundError):
            job.status()

        # cancel of a running one: killed, cancelled, forgotten; the sandbox kept
        job = sbx.exec(["sleep", "60"], detach=True)
        self.assertIs(job.status()["running"], True)
        t0 = time.monotonic()
        r = job.cancel()
        self.assertLess(time.monotonic() - t0, 15)
        self.assertTrue(r.cancelled)
        self.assertNotEqual(r.exit_code, 0)
        self.assertFalse(job.path.exists())
        self.assertEqual(sbx.status()["state"], "running")

        # a detached command's own timeout: killed, the sandbox kept (local
        # engine); wait raises what the reply names, with the result
        job = sbx.exec(["sh", "-c", "echo x; sleep 60"], timeout=1, detach=True)
        with self.assertRaises(TimeoutError) as cm2:
            job.wait()
        e = cm2.exception
        assert isinstance(e, MafsbxError) and e.result is not None
        self.assertTrue(e.result.timed_out)
        self.assertEqual(e.result.stdout, "x\n")
        self.assertIs(job.status()["timed_out"], True)
        self.assertEqual(sbx.status()["state"], "running")
        self.assertTrue(job.cancel().timed_out)
        self.assertEqual(sbx.dispose().disposed, 1)

    def test_aio(self) -> None:
        async def story() -> None:
            m = aio.AsyncMount(self.mnt)
            sbx = await m.acquire(scope=self.scope, thread="aio", agent="a", kind="k")
            self.assertEqual(sbx.work, m.path / sbx.name / "work")
            t0 = time.monotonic()
            rs = await asyncio.gather(*(sbx.exec(["sh", "-c", f"sleep 1; echo {i}"]) for i in range(8)))
            took = time.monotonic() - t0
            self.assertEqual([r.stdout for r in rs], [f"{i}\n" for i in range(8)])
            print(f"aio: 8 one-second execs gathered took {took:.1f} s", file=sys.stderr)
            job = await sbx.exec(["sh", "-c", "echo async"], detach=True)
            self.assertIsInstance(job, aio.AsyncJob)
            self.assertEqual((await job.wait()).stdout, "async\n")
            self.assertEqual((await job.status())["exit_code"], 0)
            self.assertEqual([s.name for s in await m.sandboxes()], [sbx.name])
            with self.assertRaises(LookupError):
                await m.sandbox("maf-sandbox-docker-000000000000").exec(["true"])
            self.assertEqual((await m.dispose(scope=self.scope, thread="aio")).disposed, 1)

        asyncio.run(story())


    def test_with_disposes(self) -> None:
        """``with mount.acquire(...) as sb:`` disposes at the end, on an exception too."""
        with self.acquire("with") as sb:
            name = sb.name
            self.assertTrue(container_exists(name))
            self.assertEqual(sb.exec(["echo", "in"], check=True).stdout, "in\n")
        self.assertFalse(container_exists(name))
        self.assertFalse(sb.path.exists())

        class Boom(Exception):
            pass

        with self.assertRaises(Boom):
            with self.acquire("with-raise") as sb:
                name = sb.name
                raise Boom()
        self.assertFalse(container_exists(name))
        with self.assertRaises(mafsbx.ExitCodeError):
            with self.acquire("with-check") as sb:
                name = sb.name
                sb.exec("exit 4", check=True)
        self.assertFalse(container_exists(name))
        # a sandbox disposed inside the block: the exit's dispose finds none
        with self.acquire("with-gone") as sb:
            name = sb.name
            self.assertEqual(sb.dispose().disposed, 1)
        self.assertFalse(container_exists(name))

        # A Mount's block closes the object: nothing is unmounted, nothing disposed
        with mafsbx.Mount(self.mnt) as m:
            kept = m.acquire(scope=self.scope, thread="with-mount", agent="a", kind="k")
        self.assertTrue(m.closed)
        self.assertTrue(is_mounted(self.mnt))
        self.assertTrue(container_exists(kept.name))
        with self.assertRaises(ValueError):
            m.acquire(scope=self.scope, thread="with-mount", agent="a", kind="k")
        with self.assertRaises(ValueError):
            kept.exec(["true"])   # its requests go through the closed Mount
        with self.assertRaises(ValueError):
            with m:
                pass
        self.assertEqual(self.m.dispose(scope=self.scope, thread="with-mount").disposed, 1)

    def test_stream(self) -> None:
        """Job.lines() and Job.stream() follow the output as the guest writes it."""
        n = 10
        with self.acquire("stream") as sbx:
            job = sbx.exec(["sh", "-c", TICKS.format(n=n)], detach=True)
            late: List[float] = []
            for k, line in enumerate(job.lines()):
                i, delay = lateness(line, boottime())
                self.assertEqual(i, k)
                late.append(delay)
            self.assertEqual(len(late), n)
            print(f"stream: {n} lines 0.2 s apart, each read {min(late):.3f}..{max(late):.3f} s "
                  f"after its printing (median {sorted(late)[n // 2]:.3f})", file=sys.stderr)
            self.assertLess(max(late), LATE, late)
            self.assertTrue(job.done())   # lines() ends at the job's end

            # chunks of both streams, in order per stream, the exact bytes
            job = sbx.exec(["sh", "-c", "printf 'a\\377'; echo e1 >&2; sleep 0.5; echo b; echo e2 >&2; exit 2"],
                           detach=True)
            chunks = list(job.stream())
            self.assertTrue(all(isinstance(c, mafsbx.OutputChunk) for c in chunks))
            out = b"".join(c.data for c in chunks if c.stream == "stdout")
            err = b"".join(c.data for c in chunks if c.stream == "stderr")
            self.assertEqual((out, err), (b"a\xffb\n", b"e1\ne2\n"))
            self.assertEqual(job.wait().exit_code, 2)
            self.assertEqual(list(job.lines("stderr")), ["e1", "e2"])   # an ended job: all at once
            self.assertEqual(list(job.stream(stdout=False, stderr=False)), [])
            with self.assertRaises(ValueError):
                next(job.stream(interval=0))
            # a job cancelled while followed: the iteration ends
            job = sbx.exec(["sh", "-c", "echo first; sleep 60"], detach=True)
            it = job.lines()
            self.assertEqual(next(it), "first")
            job.cancel()
            self.assertEqual(list(it), [])

    def test_stream_async(self) -> None:
        """32 jobs followed at once on one event loop, which stays responsive."""
        n_jobs, n_lines = 32, 8

        async def follow(job: aio.AsyncJob) -> List[float]:
            late: List[float] = []
            async for line in job.lines():
                i, delay = lateness(line, boottime())
                self.assertEqual(i, len(late))
                late.append(delay)
            return late

        async def story() -> Tuple[List[List[float]], float]:
            gaps = [0.0]
            stop = asyncio.Event()

            async def ticker() -> None:
                while not stop.is_set():
                    t0 = time.monotonic()
                    await asyncio.sleep(0.01)
                    gaps[0] = max(gaps[0], time.monotonic() - t0 - 0.01)

            async with aio.AsyncMount(self.mnt) as m:
                async with await m.acquire(scope=self.scope, thread="stream-aio", agent="a", kind="k") as sbx:
                    tick = asyncio.create_task(ticker())
                    jobs = await asyncio.gather(*(
                        sbx.exec(["sh", "-c", TICKS.format(n=n_lines)], detach=True) for _ in range(n_jobs)))
                    lates = await asyncio.gather(*(follow(j) for j in jobs))
                    results = await asyncio.gather(*(j.wait() for j in jobs))
                    stop.set()
                    await tick
                    self.assertEqual([r.exit_code for r in results], [0] * n_jobs)
                    name = sbx.name
            self.assertFalse(container_exists(name))
            return lates, gaps[0]

        lates, blocked = asyncio.run(story())
        flat = sorted(x for late in lates for x in late)
        self.assertEqual([len(late) for late in lates], [n_lines] * n_jobs)
        print(f"stream aio: {n_jobs} jobs x {n_lines} lines, each read {flat[0]:.3f}..{flat[-1]:.3f} s "
              f"after its printing (median {flat[len(flat) // 2]:.3f}); the loop blocked at most "
              f"{blocked * 1000:.1f} ms", file=sys.stderr)
        self.assertLess(flat[-1], LATE)
        self.assertLess(blocked, 0.25)

    def test_check(self) -> None:
        with self.acquire("check") as sbx:
            r = sbx.exec("echo fine", check=True)
            self.assertEqual((r.exit_code, r.stdout), (0, "fine\n"))
            with self.assertRaises(mafsbx.ExitCodeError) as cm:
                sbx.exec(["sh", "-c", "echo out; echo bad thing >&2; exit 3"], check=True)
            e = cm.exception
            self.assertNotIsInstance(e, MafsbxError)   # the request succeeded
            self.assertEqual((e.exit_code, e.stdout, e.stderr), (3, "out\n", "bad thing\n"))
            self.assertEqual(e.result.stdout_bytes, b"out\n")
            self.assertEqual(e.command, ["sh", "-c", "echo out; echo bad thing >&2; exit 3"])
            self.assertIn("exited with 3: bad thing", str(e))
            copy = pickle.loads(pickle.dumps(e))
            self.assertEqual((type(copy), copy.exit_code, copy.stderr), (mafsbx.ExitCodeError, 3, "bad thing\n"))
            # without check a non-zero exit is a result
            self.assertEqual(sbx.exec("exit 3").exit_code, 3)
            with self.assertRaises(TypeError):
                sbx.exec(["true"], check=True, detach=True)  # type: ignore[call-overload]

            async def in_aio() -> None:
                asbx = aio.AsyncMount(self.mnt).sandbox(sbx.name)
                with self.assertRaises(mafsbx.ExitCodeError) as cm2:
                    await asbx.exec("exit 9", check=True)
                self.assertEqual(cm2.exception.exit_code, 9)

            asyncio.run(in_aio())

    def test_timeouts(self) -> None:
        """One class per meaning: ExecTimeout (the exec's own bound, and whether
        the sandbox was kept); the built-in TimeoutError for a wait that gave up."""
        sbx = self.acquire("timeouts")
        job = sbx.exec(["sh", "-c", "echo x; sleep 60"], timeout=1, detach=True)
        with self.assertRaises(mafsbx.ExecTimeout) as cm:
            job.wait()
        e = cm.exception
        self.assertIsInstance(e, TimeoutError)
        self.assertIsInstance(e, MafsbxError)
        self.assertIsInstance(e, mafsbx.errors.TimeoutError)   # the name of earlier versions
        self.assertNotIsInstance(e, mafsbx.EngineTimeout)
        self.assertFalse(e.sandbox_disposed)   # a detached exec's timeout keeps it (local engine)
        assert e.result is not None
        self.assertEqual(e.result.stdout, "x\n")
        self.assertTrue(container_exists(sbx.name))
        job.cancel()

        job = sbx.exec(["sleep", "30"], detach=True)
        with self.assertRaises(TimeoutError) as cm2:
            job.wait(timeout=0.2)
        self.assertIs(type(cm2.exception), TimeoutError)   # the built-in: no request failed
        self.assertFalse(job.done())

        async def in_aio() -> None:
            ajob = aio.AsyncMount(self.mnt).sandbox(sbx.name)
            j = (await ajob.jobs())[0]
            with self.assertRaises(TimeoutError) as cm3:
                await j.wait(timeout=0.2)
            self.assertIs(type(cm3.exception), TimeoutError)

        asyncio.run(in_aio())
        job.cancel()

        # a blocking exec's own bound: ExecTimeout, sandbox_disposed tells the truth
        with self.assertRaises(mafsbx.ExecTimeout) as cm4:
            sbx.exec(["sh", "-c", "echo y; sleep 30"], timeout=1)
        e = cm4.exception
        assert e.result is not None
        self.assertTrue(e.result.timed_out)
        self.assertEqual(e.sandbox_disposed, not container_exists(sbx.name))
        sbx.dispose()


class PackageTest(unittest.TestCase):
    """The package itself: no mount needed."""

    def test_version_matches_the_project(self) -> None:
        want = os.environ.get("MAFSBX_VERSION")
        if want is None:
            self.skipTest("MAFSBX_VERSION is not set (meson sets it)")
        self.assertEqual(mafsbx.__version__, want)

    def test_typed(self) -> None:
        self.assertTrue(os.path.isfile(os.path.join(CLIENT, "py.typed")))

    def test_maf_is_imported_only_on_request(self) -> None:
        # `import mafsbx` never imports the adapter (nor maf_sandbox)
        code = "import sys, mafsbx, mafsbx.aio; sys.exit(int('mafsbx.maf' in sys.modules or 'maf_sandbox' in sys.modules))"
        env = dict(os.environ, PYTHONPATH=os.path.dirname(CLIENT))
        self.assertEqual(subprocess.run([sys.executable, "-c", code], env=env).returncode, 0)
        # without maf_sandbox, importing the adapter says what is missing
        out = subprocess.run([sys.executable, "-c", "import mafsbx.maf"], env=env,
                             capture_output=True, text=True)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("ImportError: mafsbx.maf", out.stderr)
        self.assertIn("needs the maf_sandbox package", out.stderr)

    def test_errors_by_type_and_errno(self) -> None:
        from mafsbx.errors import error_from_reply

        def err(t: str, e: str) -> MafsbxError:
            return error_from_reply({"ok": False, "error": {"errno": e, "type": t, "message": "m"}})

        self.assertIs(type(err("FileNotFoundError", "ENOENT")), mafsbx.errors.FileNotFoundError)
        self.assertIs(type(err("SandboxTransferCapExceeded", "EFBIG")), mafsbx.errors.SandboxTransferCapExceeded)
        self.assertIsInstance(err("SandboxTransferCapExceeded", "EFBIG"), RuntimeError)
        # an unknown type: the class of its errno, else RuntimeError
        self.assertIs(type(err("SomeNewError", "ENOTDIR")), mafsbx.errors.NotADirectoryError)
        self.assertIs(type(err("SomeNewError", "EIO")), mafsbx.errors.RuntimeError)
        self.assertEqual(err("SomeNewError", "EIO").error_type, "SomeNewError")
        self.assertEqual(str(err("ValueError", "EINVAL")), "m")

    def test_timeout_classes(self) -> None:
        from mafsbx.errors import error_from_oserror, error_from_reply

        def reply(**fields: object) -> MafsbxError:
            return error_from_reply({"ok": False, **fields,
                                     "error": {"errno": "ETIMEDOUT", "type": "TimeoutError", "message": "m"}})

        # a reply carrying a command that ran out of its own time
        e = reply(exit_code=-1, timed_out=True, sandbox_disposed=False, stdout_b64="")
        self.assertIs(type(e), mafsbx.ExecTimeout)
        assert isinstance(e, mafsbx.ExecTimeout)
        self.assertFalse(e.sandbox_disposed)
        self.assertEqual(e.error_type, "TimeoutError")
        self.assertTrue(reply(timed_out=True, sandbox_disposed=True).sandbox_disposed)  # type: ignore[attr-defined]
        # an engine call that timed out: no command's bound
        self.assertIs(type(reply()), mafsbx.EngineTimeout)
        self.assertIs(type(reply(timed_out=False)), mafsbx.EngineTimeout)
        self.assertIs(type(error_from_oserror(OSError(errno.ETIMEDOUT, "t"), "x")), mafsbx.EngineTimeout)
        for cls in (mafsbx.ExecTimeout, mafsbx.EngineTimeout):
            self.assertTrue(issubclass(cls, TimeoutError) and issubclass(cls, MafsbxError))
        self.assertIs(type(pickle.loads(pickle.dumps(e))), mafsbx.ExecTimeout)

    def test_errors_shadow_no_builtin(self) -> None:
        import builtins

        import mafsbx.errors as errors

        shadowing = [n for n in errors.__all__ if hasattr(builtins, n)]
        self.assertEqual(shadowing, [])
        ns: Dict[str, object] = {}
        exec("from mafsbx.errors import *", ns)
        self.assertNotIn("TimeoutError", ns)
        self.assertIn("ExecTimeout", ns)
        for name in errors.__all__:
            self.assertTrue(hasattr(errors, name), name)
        # the names of earlier versions remain, as aliases
        self.assertIs(errors.LookupError, errors.MafsbxLookupError)
        self.assertTrue(issubclass(errors.MafsbxFileNotFoundError, FileNotFoundError))


if __name__ == "__main__":
    main()
