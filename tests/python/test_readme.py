"""The README's examples, run as written through a real mount, so they cannot drift.

Three blocks of README.md are extracted and run: the ctl session ("A shell
session": the first ``console`` block), the Python block ("From Python") and
the shell verbs ("Without JSON: the shell verbs": the second ``console``
block). The one change made to them is the mount point: the README's
/tmp/sbx becomes this test's mount (scope ``demo``, as the examples use;
``-o image`` set, as "Mounting" shows it). ``mafsbx`` is the built CLI.

A ``console`` block is a run of ``$ COMMAND`` lines (a command whose quotes
are still open goes on to the next line), each followed by its expected
output. Every command runs in one bash, in order, on a terminal (80
columns) as a reader's would, and must succeed; its output (stdout and
stderr, blank lines dropped) must match the expected
lines one for one, where ``...`` stands for any text, a date and time as
``ls -l`` prints it for any date and time, hex digits followed by ``...``
(an ID) for any hex digits, and ``"duration_ms": N`` for any N.
In the Python block each ``print(...)  # TEXT`` must print TEXT (the printed
text stripped of surrounding whitespace).

contrib/python/README.md's Python blocks run too, each in a process of its
own, as written but for the mount point (its context managers, streaming,
check=True, errors and asyncio examples); there TEXT may use ``...`` as in
a console block. The block that needs the maf_sandbox package (it imports
``mafsbx.maf``) is left out: that package is not installed here.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import time
import unittest
from typing import List, Tuple

from mountcase import MountCase, main, scope_containers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
README = os.path.join(ROOT, "README.md")
CLIENT_README = os.path.join(ROOT, "contrib", "python", "README.md")
README_MOUNT = "/tmp/sbx"


def blocks(lang: str, path: str = README) -> List[str]:
    """The README's fenced blocks of one language, in order."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^```" + re.escape(lang) + r"\n(.*?)^```", text, re.M | re.S)


def console_steps(block: str) -> List[Tuple[str, List[str]]]:
    """(command, expected output lines) for each ``$`` line of a console block."""
    steps: List[Tuple[str, List[str]]] = []
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.startswith("$ "):
            if line.strip():
                if not steps:
                    raise AssertionError(f"README: output before any command: {line!r}")
                steps[-1][1].append(line)
            continue
        cmd = line[2:]
        while True:
            try:
                shlex.split(cmd, comments=True)
                break
            except ValueError:   # a quote still open: the command goes on
                if i >= len(lines):
                    raise AssertionError(f"README: unterminated command: {cmd!r}")
                cmd += "\n" + lines[i]
                i += 1
        steps.append((cmd, []))
    return steps


LS_DATE = r"[A-Z][a-z]{2} [ \d]\d (\d\d:\d\d| \d{4})"


def line_pattern(expected: str) -> "re.Pattern[str]":
    parts = re.split(r"(\b[0-9a-f]{6,}\.\.\.|\.\.\.|" + LS_DATE + r"|\"duration_ms\": \d+)", expected)
    out = ""
    for p in parts:
        if p is None or p == "":
            continue
        if re.fullmatch(r"[0-9a-f]{6,}\.\.\.", p):
            out += "[0-9a-f]+"
        elif p == "...":
            out += ".*"
        elif re.fullmatch(LS_DATE, p):
            out += LS_DATE
        elif p.startswith('"duration_ms"'):
            out += r'"duration_ms": \d+'
        elif re.fullmatch(r"\d\d:\d\d| \d{4}", p):
            continue   # the inner group of LS_DATE, already matched
        else:
            out += re.escape(p)
    return re.compile(out)


def run_on_a_terminal(argv: List[str], cwd: str, env: "dict[str, str]", timeout: float) -> str:
    """Run argv with stdout and stderr on a pseudo-terminal (80 columns), as a
    reader of the README would (ls prints columns); its output, newlines as \\n."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=cwd, env=env,
                         start_new_session=True)
    os.close(slave)
    chunks: List[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                p.kill()
                raise AssertionError(f"the README's commands did not end within {timeout:g} s:\n"
                                     + b"".join(chunks).decode("utf-8", "replace"))
            ready, _, _ = select.select([master], [], [], left)
            if not ready:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:   # EIO: every writer has closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        p.wait(timeout=30)
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


class ReadmeTest(MountCase):
    SCOPE = "demo"

    def setUp(self) -> None:
        self.sweep()
        self.addCleanup(self.sweep)
        self.bin = tempfile.mkdtemp(prefix="mafsbx-readme-bin.")
        os.symlink(os.environ["MAFSBX_CLI"], os.path.join(self.bin, "mafsbx"))
        self.addCleanup(shutil.rmtree, self.bin)

    def sweep(self) -> None:
        """No sandbox of scope demo before or after a test (the examples' keys are fixed)."""
        ids = scope_containers(self.scope)
        if ids:
            subprocess.run(["docker", "rm", "-f", *ids], stdout=subprocess.DEVNULL, check=True)

    def env(self) -> "dict[str, str]":
        env = dict(os.environ)
        env["PATH"] = self.bin + os.pathsep + env.get("PATH", "")
        env["LC_ALL"] = "C"
        env["TZ"] = "UTC"
        return env

    def run_console(self, block: str) -> None:
        steps = console_steps(block.replace(README_MOUNT, self.mnt))
        self.assertTrue(steps)
        script = ["set -u"]
        for n, (cmd, _) in enumerate(steps):
            script += [f"printf '\\n@@CMD {n}@@\\n'", cmd, f"printf '\\n@@RC {n} %d@@\\n' $?"]
        out = run_on_a_terminal(["bash", "--noprofile", "--norc", "-c", "\n".join(script)],
                                self.tmp, self.env(), 240)
        for n, (cmd, expected) in enumerate(steps):
            m = re.search(rf"^@@CMD {n}@@\n(.*?)^@@RC {n} (\d+)@@$", out, re.M | re.S)
            self.assertIsNotNone(m, f"README command {cmd!r} did not finish; the session's output:\n{out}")
            assert m is not None
            got = [x for x in m.group(1).splitlines() if x.strip()]
            self.assertEqual(m.group(2), "0", f"README command {cmd!r} failed:\n" + "\n".join(got))
            self.assertEqual(len(got), len(expected),
                             f"README command {cmd!r}: expected\n" + "\n".join(expected) +
                             "\ngot\n" + "\n".join(got))
            for e, g in zip(expected, got):
                self.assertRegex(g, "^" + line_pattern(e).pattern + "$",
                                 f"README command {cmd!r}: the line {e!r} does not match what it printed")

    def test_ctl_session(self) -> None:
        self.run_console(blocks("console")[0])

    def test_shell_verbs(self) -> None:
        self.run_console(blocks("console")[1])

    def run_python(self, code: str) -> Tuple[List[str], List[str]]:
        """(what the block's annotated prints must print, what they printed)."""
        code = code.replace(README_MOUNT, self.mnt)
        expected = [m.group(1).strip() for m in
                    re.finditer(r"^\s*print\(.*\)\s+#\s*(.*)$", code, re.M)]
        self.assertTrue(expected)
        prelude = ("import sys\n"
                   "def print(*a):\n"
                   "    sys.stdout.write(' '.join(str(x) for x in a).strip() + '\\n')\n")
        r = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True,
                           cwd=self.tmp, env=self.env(), timeout=240)
        self.assertEqual(r.returncode, 0, f"the README's Python failed:\n{r.stdout}{r.stderr}\n{code}")
        return expected, r.stdout.splitlines()

    def test_python(self) -> None:
        (code,) = blocks("python")
        expected, got = self.run_python(code)
        self.assertEqual(got, expected)

    def test_client_readme(self) -> None:
        codes = [c for c in blocks("python", CLIENT_README) if "mafsbx.maf" not in c]
        self.assertGreaterEqual(len(codes), 3)
        self.assertTrue(any("with m.acquire(" in c and "job.lines()" in c and "job.stream(" in c for c in codes),
                        "contrib/python/README.md shows no context-manager and streaming example")
        self.assertTrue(any("async with" in c and "async for" in c for c in codes),
                        "contrib/python/README.md shows no asyncio streaming example")
        for code in codes:
            expected, got = self.run_python(code)
            self.assertEqual(len(got), len(expected), f"expected\n{expected}\ngot\n{got}\nin\n{code}")
            for e, g in zip(expected, got):
                self.assertRegex(g, "^" + line_pattern(e).pattern + "$", f"in\n{code}")
            self.sweep()


if __name__ == "__main__":
    main()
