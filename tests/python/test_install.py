"""The client as a user installs it: into a virtual environment, offline.

Copies contrib/python to a temporary directory (pip builds in the source
tree), makes ``python3 -m venv --system-site-packages V`` with Debian's
python3 (/usr/bin/python3 when there is one: its setuptools and wheel are
python3-setuptools and python3-wheel), runs ``V/bin/pip install
--no-build-isolation --no-index`` on the copy, then requires that
``importlib.metadata.version("mafsbx")`` and ``mafsbx.__version__`` equal
the daemon's version (MAFSBX_VERSION, meson's project version), that the
package imported is the installed one (under V, py.typed included), and that
the client's whole suite (test_client.py) passes with V's python against a
real mount, with nothing of contrib/python on its path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOURCE = os.path.join(ROOT, "contrib", "python")
DEBIAN_PYTHON = "/usr/bin/python3"


class InstallTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="mafsbx-venv.")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.venv = os.path.join(self.tmp, "V")
        self.python = os.path.join(self.venv, "bin", "python")
        # No PYTHONPATH: what V's python imports comes from V (or Debian's site).
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_INDEX_URL")}
        self.env["PIP_NO_INDEX"] = "1"
        self.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"

    def run_ok(self, argv: "list[str]", env: "dict[str, str] | None" = None, timeout: float = 300) -> str:
        r = subprocess.run(argv, env=env or self.env, capture_output=True, text=True, timeout=timeout)
        self.assertEqual(r.returncode, 0, f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        return r.stdout

    def test_venv_install_then_the_suite(self) -> None:
        want = os.environ.get("MAFSBX_VERSION")
        self.assertIsNotNone(want, "MAFSBX_VERSION is not set (meson sets it)")
        src = os.path.join(self.tmp, "python")
        shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        base = DEBIAN_PYTHON if os.access(DEBIAN_PYTHON, os.X_OK) else sys.executable
        self.run_ok([base, "-m", "venv", "--system-site-packages", self.venv])
        self.run_ok([os.path.join(self.venv, "bin", "pip"), "install", "--no-build-isolation", "--no-index", src])

        probe = ("import importlib.metadata as md, os, mafsbx\n"
                 "print(md.version('mafsbx'))\n"
                 "print(mafsbx.__version__)\n"
                 "print(os.path.dirname(mafsbx.__file__))\n")
        version, attr, where = self.run_ok([self.python, "-c", probe], timeout=60).split("\n")[:3]
        self.assertEqual(version, want, "the package's version is not the daemon's (meson.build)")
        self.assertEqual(attr, want)
        self.assertTrue(where.startswith(os.path.realpath(self.venv) + os.sep)
                        or where.startswith(self.venv + os.sep), f"mafsbx imported from {where}, not from V")
        self.assertTrue(os.path.isfile(os.path.join(where, "py.typed")))
        self.assertTrue(os.path.isfile(os.path.join(where, "aio.py")))

        # The client's suite against the installed package: tests/python on
        # the path for mountcase only, the script run from a copy so that its
        # own directory holds no mafsbx either.
        suite = os.path.join(self.tmp, "suite")
        os.mkdir(suite)
        for name in ("test_client.py", "mountcase.py"):
            shutil.copy(os.path.join(HERE, name), suite)
        env = dict(self.env, PYTHONDONTWRITEBYTECODE="1")
        r = subprocess.run([self.python, os.path.join(suite, "test_client.py")], env=env, cwd=self.tmp,
                           capture_output=True, text=True, timeout=600)
        sys.stderr.write(r.stdout + r.stderr)
        self.assertEqual(r.returncode, 0, "the client's suite failed against the installed package")


if __name__ == "__main__":
    prog = unittest.main(exit=False, verbosity=2)
    sys.exit(0 if prog.result.wasSuccessful() and prog.result.testsRun else 1)
