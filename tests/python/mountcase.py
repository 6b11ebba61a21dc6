"""A unittest base class that owns a real mafsbxfs mount for its tests.

The class mounts once (``mafsbxfs -f``, a child of the test) with
``-o image=IMAGE,scope=SCOPE`` (a scope of its own, so nothing else on the
engine is touched), on the plane MAFSBX_TEST_PLANE names (local by default),
and at the end unmounts, requires the daemon to exit 0, and removes every
container of its scope. It skips when /dev/fuse, fusermount3, docker or the
engine is missing, unless MAFSBX_REQUIRE_ENGINE=1, which makes that a failure.

Needs MAFSBXFS (the daemon binary); meson sets it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from typing import BinaryIO, Callable, List, Optional

IMAGE = os.environ.get("MAFSBX_TEST_IMAGE", "mafsbx/busybox:latest")
REQUIRE = os.environ.get("MAFSBX_REQUIRE_ENGINE", "0") == "1"
PLANE = os.environ.get("MAFSBX_TEST_PLANE", "local")


def missing() -> Optional[str]:
    """Why this host cannot run the tests, or None."""
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


def is_mounted(mnt: str) -> bool:
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 6 and fields[4] == mnt and "-" in fields[6:]:
                return fields[fields.index("-", 6) + 1] == "fuse.mafsbxfs"
    return False


def scope_containers(scope: str) -> List[str]:
    out = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=maf-sandbox.scope={scope}"],
                         capture_output=True, text=True, timeout=60)
    return out.stdout.split()


def container_exists(name: str) -> bool:
    out = subprocess.run(["docker", "ps", "-aq", "--filter", f"name=^{name}$"],
                         capture_output=True, text=True, timeout=60)
    return bool(out.stdout.split())


def wait_mounted(mnt: str, daemon: "subprocess.Popen[bytes]", timeout: float = 10,
                 logtail: Optional[Callable[[], str]] = None) -> None:
    """Wait until mafsbxfs is mounted on mnt; fail if the daemon exits first."""
    deadline = time.monotonic() + timeout
    while not is_mounted(mnt):
        if daemon.poll() is not None:
            raise AssertionError(f"mafsbxfs exited ({daemon.returncode}) before mounting:\n"
                                 f"{logtail() if logtail else ''}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no mount on {mnt} after {timeout:g} s")
        time.sleep(0.05)


def unmount_and_wait(mnt: str, daemon: "subprocess.Popen[bytes]", timeout: float = 30) -> object:
    """Unmount mnt (lazily if it is busy) and wait for the daemon: its exit
    status, or a string saying it had to be killed."""
    if is_mounted(mnt):
        if subprocess.run(["fusermount3", "-u", mnt]).returncode != 0:
            subprocess.run(["fusermount3", "-u", "-z", mnt])
    try:
        return daemon.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
        return f"killed: no exit within {timeout:g} s of the unmount"


class MountCase(unittest.TestCase):
    """Tests against one mount of their class: ``cls.mnt``, ``cls.scope``.
    A subclass may fix the scope with SCOPE (else a fresh random one)."""

    SCOPE: Optional[str] = None
    mnt: str
    scope: str
    tmp: str
    logpath: str
    log: BinaryIO
    daemon: "subprocess.Popen[bytes]"

    @classmethod
    def setUpClass(cls) -> None:
        why = missing()
        if why:
            if REQUIRE:
                raise AssertionError(f"{why} (MAFSBX_REQUIRE_ENGINE=1)")
            raise unittest.SkipTest(why)
        cls.scope = cls.SCOPE or "mafsbxtest-py-" + os.urandom(6).hex()
        cls.tmp = tempfile.mkdtemp(prefix="mafsbxfs-python.")
        cls.mnt = os.path.join(cls.tmp, "mnt")
        os.mkdir(cls.mnt)
        cls.logpath = os.path.join(cls.tmp, "daemon.log")
        cls.log = open(cls.logpath, "wb")
        opts = f"image={IMAGE},scope={cls.scope}"
        if PLANE != "local":
            opts += f",plane={PLANE}"
        cls.daemon = subprocess.Popen([os.environ["MAFSBXFS"], "-f", "-o", opts, cls.mnt],
                                      stdout=cls.log, stderr=subprocess.STDOUT)
        cls.addClassCleanup(cls._cleanup)
        wait_mounted(cls.mnt, cls.daemon, 10, cls._logtail)

    @classmethod
    def _logtail(cls) -> str:
        cls.log.flush()
        with open(cls.logpath, "rb") as f:
            return f.read()[-4000:].decode("utf-8", "replace")

    @classmethod
    def _cleanup(cls) -> None:
        rc = unmount_and_wait(cls.mnt, cls.daemon)
        tail = cls._logtail()
        cls.log.close()
        ids = scope_containers(cls.scope)
        if ids:
            subprocess.run(["docker", "rm", "-f", *ids], stdout=subprocess.DEVNULL)
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if rc != 0:
            raise AssertionError(f"mafsbxfs exited with {rc} after the unmount; its log:\n{tail}")


def main() -> None:
    """unittest.main with meson's exit codes: 77 (skipped) when a test or a
    class skipped (no engine here), 1 on a failure or when nothing ran."""
    prog = unittest.main(exit=False, verbosity=2)
    result = prog.result
    if not result.wasSuccessful() or (result.testsRun == 0 and not result.skipped):
        sys.exit(1)
    sys.exit(77 if result.skipped else 0)
