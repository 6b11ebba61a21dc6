"""Tests for contrib/python/mafsbx_client.py through a real mafsbxfs mount.

Needs MAFSBXFS (the daemon binary) and mafsbx_client on PYTHONPATH (meson
sets both). Skips when /dev/fuse, fusermount3, docker or the engine is
missing, unless MAFSBX_REQUIRE_ENGINE=1, which makes that a failure.
"""

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from mafsbx_client import DetachedExec, MafsbxError, Mount

IMAGE = os.environ.get("MAFSBX_TEST_IMAGE", "mafsbx/busybox:latest")
REQUIRE = os.environ.get("MAFSBX_REQUIRE_ENGINE", "0") == "1"


def missing():
    """Why this host cannot run the test, or None."""
    if not os.environ.get("MAFSBXFS"):
        return "MAFSBXFS is not set"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not usable"
    for prog in ("fusermount3", "docker"):
        if shutil.which(prog) is None:
            return f"{prog} is missing"
    try:
        subprocess.run(["docker", "image", "inspect", IMAGE], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    except (subprocess.SubprocessError, OSError):
        return f"no Docker engine answers, or the image {IMAGE} is missing"
    return None


def is_mounted(mnt):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 4 and fields[4] == mnt and "-" in fields[5:]:
                i = fields.index("-", 5)
                return fields[i + 1] == "fuse.mafsbxfs"
    return False


class ClientTest(unittest.TestCase):
    def setUp(self):
        why = missing()
        if why:
            if REQUIRE:
                self.fail(f"{why} (MAFSBX_REQUIRE_ENGINE=1)")
            self.skipTest(why)
        self.scope = "mafsbxtest-py-" + os.urandom(6).hex()
        self.tmp = tempfile.mkdtemp(prefix="mafsbxfs-pyclient.")
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.mnt)
        self.logpath = os.path.join(self.tmp, "daemon.log")
        self.log = open(self.logpath, "wb")
        self.addCleanup(self._cleanup)
        self.daemon = subprocess.Popen(
            [os.environ["MAFSBXFS"], "-f", "-o", f"image={IMAGE},scope={self.scope}", self.mnt],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not is_mounted(self.mnt):
            if self.daemon.poll() is not None:
                self.fail(f"mafsbxfs exited ({self.daemon.returncode}) before mounting:\n{self._logtail()}")
            if time.monotonic() > deadline:
                self.fail(f"no mount on {self.mnt} after 10 s")
            time.sleep(0.05)
        self.m = Mount(self.mnt)

    def _logtail(self):
        self.log.flush()
        with open(self.logpath, "rb") as f:
            return f.read()[-4000:].decode("utf-8", "replace")

    def _cleanup(self):
        if is_mounted(self.mnt):
            if subprocess.run(["fusermount3", "-u", self.mnt]).returncode != 0:
                subprocess.run(["fusermount3", "-u", "-z", self.mnt])
        try:
            rc = self.daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
            self.daemon.wait()
            rc = "killed: no exit within 30 s of the unmount"
        tail = self._logtail()
        self.log.close()
        ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=maf-sandbox.scope={self.scope}"],
                             capture_output=True, text=True).stdout.split()
        if ids:
            subprocess.run(["docker", "rm", "-f", *ids], stdout=subprocess.DEVNULL)
        shutil.rmtree(self.tmp, ignore_errors=True)
        # The daemon must exit 0 after the unmount (an error of this test).
        if rc != 0:
            raise AssertionError(f"mafsbxfs exited with {rc} after the unmount; its log:\n{tail}")

    def _acquire(self, kind="python", **kw):
        return self.m.acquire(self.scope, "t1", "analyst", kind, **kw)

    def test_story(self):
        sbx = self._acquire(outputs=["result.json"])
        self.assertTrue(sbx.name.startswith("maf-sandbox-docker-"), sbx.name)
        self.assertTrue(sbx.id)
        self.assertTrue(sbx.work_dir.startswith("/"), sbx.work_dir)
        self.assertIsInstance(sbx.uid, int)
        self.assertEqual(sbx.path, os.path.join(self.mnt, sbx.name))
        self.assertTrue(os.path.isdir(os.path.join(sbx.path, "work")))
        # The same key again: the same sandbox.
        self.assertEqual(self._acquire().name, sbx.name)

        # write through work/, run in the guest, read back through work/
        sbx.write("in.txt", b"hello\x00world\n")
        r = self.m.exec(sbx.name, command="cat in.txt | tr a-z A-Z > out.txt; echo done; echo warn >&2; exit 3")
        self.assertEqual(r.exit_code, 3)
        self.assertEqual(r.stdout, b"done\n")
        self.assertEqual(r.stderr, b"warn\n")
        self.assertFalse(r.timed_out)
        self.assertFalse(r.truncated)
        self.assertIsInstance(r.duration_ms, int)
        self.assertEqual(sbx.read("out.txt"), b"HELLO\x00WORLD\n")

        # argv, stdin (exact bytes), env, cwd
        r = self.m.exec(sbx.name, argv=["sh", "-c", 'cat; printf "%s" "$K"; pwd'],
                        stdin=b"\xff\xfe in\n", env={"K": "v"}, cwd="/")
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(r.stdout, b"\xff\xfe in\nv/\n")

        self.assertEqual(self.m.dispose(sbx.name), 1)
        self.assertFalse(os.path.exists(sbx.path))
        self.assertEqual(self.m.dispose(sbx.name), 0)

    def test_errors(self):
        with self.assertRaises(MafsbxError) as cm:
            self.m.exec("maf-sandbox-docker-000000000000", argv=["true"])
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        self.assertTrue(cm.exception.type)
        self.assertTrue(cm.exception.message)
        self.assertIs(cm.exception.reply["ok"], False)
        # An unknown field is refused with EINVAL, naming it.
        with self.assertRaises(MafsbxError) as cm:
            self._acquire(bogus_field=1)
        self.assertEqual(cm.exception.errno, errno.EINVAL)
        self.assertIn("bogus_field", cm.exception.message)
        with self.assertRaises(ValueError):
            self.m.exec("x", argv=["true"], command="true")
        # A timeout fails the request with ETIMEDOUT; the reply still says
        # timed_out (and the sandbox is disposed, as upstream does).
        sbx = self._acquire(kind="timeout")
        with self.assertRaises(MafsbxError) as cm:
            self.m.exec(sbx.name, argv=["sleep", "30"], timeout=1)
        self.assertEqual(cm.exception.errno, errno.ETIMEDOUT)
        self.assertIs(cm.exception.reply.get("timed_out"), True, cm.exception.reply)

    def test_detached(self):
        sbx = self._acquire(kind="shell")
        d = self.m.exec_detached(sbx.name, command="echo start; sleep 2; echo end; exit 5")
        self.assertIsInstance(d, DetachedExec)
        self.assertTrue(d.id)
        self.assertEqual(d.path, os.path.join(sbx.path, "execs", d.id))
        st = d.status()
        self.assertIs(st["running"], True, st)
        r = d.wait()
        self.assertEqual(r.exit_code, 5)
        self.assertEqual(r.stdout, b"start\nend\n")
        self.assertFalse(r.timed_out)
        st = d.status()
        self.assertIs(st["running"], False, st)
        self.assertEqual(st["exit_code"], 5)
        self.assertEqual(d.stdout(), b"start\nend\n")
        d.cancel()          # a finished exec: forgotten
        self.assertFalse(os.path.exists(d.path))

        # cancel a running one
        d = self.m.exec_detached(sbx.name, argv=["sleep", "60"])
        self.assertIs(d.status()["running"], True)
        d.cancel()
        self.assertFalse(os.path.exists(d.path))
        self.assertEqual(self.m.dispose(sbx.name), 1)


if __name__ == "__main__":
    prog = unittest.main(exit=False, verbosity=2)
    result = prog.result
    if not result.wasSuccessful() or result.testsRun == 0:
        sys.exit(1)
    # every test skipped (no engine, no /dev/fuse): meson's "skipped"
    sys.exit(77 if len(result.skipped) == result.testsRun else 0)
