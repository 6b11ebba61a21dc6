"""The programs the test run calls: listed once, and found where it runs.

tests/packaging/programs.list names every program that contrib/test.sh, the
scripts it runs (contrib/*.sh, tests/**/*.sh) and the meson test
definitions (every meson.build) call, one a line:

    NAME              called where the test set is installed
    NAME RELEASE...   likewise, but the set has it only on those releases
                      (bookworm, trixie)
    NAME @image       called only inside an image a platform stage makes
                      (not required of the test set)
    NAME @optional    called only when present (the script does without)
    -NAME             a word of the scripts that is a program's name but no
                      call of it (a message, a path, a variable's value)

  check_programs.py --listed SOURCE_ROOT
      every word of those files, outside comment lines, that names a program
      on this machine's PATH (a shell builtin or keyword aside, and not a
      $variable, an assignment, an --option or a file suffix) is in the list,
      and every entry of the list is still such a word of them: the list
      cannot fall behind the scripts, nor keep what they no longer call
  check_programs.py --present [SOURCE_ROOT]
      every program the list requires on this release (/etc/os-release) is
      found on PATH (with /usr/sbin and /sbin); names each missing one

Exits 1 on a failure, naming every offender.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "programs.list")
RELEASES = ("bookworm", "trixie")
# A word in command-name form, not after $ / ${ (a variable), - (an option),
# . (a suffix) or a word character, and not before = (an assignment); one
# after / is a path's last part (/usr/bin/time is no shell keyword).
WORD = re.compile(r"(?<![$\w{.+/-])([A-Za-z_][\w.+-]*[\w+])(?![\w.+-]*=)")
PATHWORD = re.compile(r"(?<=/)([A-Za-z_][\w.+-]*[\w+])(?![\w.+-]*=)")
SHEBANG = re.compile(r"^#!.*\b(ba)?sh\b")


def read_list() -> Tuple[Dict[str, List[str]], Set[str]]:
    """(called program -> its qualifiers, the '-NAME' words)."""
    called: Dict[str, List[str]] = {}
    words: Set[str] = set()
    with open(LIST, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            name, quals = fields[0], fields[1:]
            bad = [q for q in quals if q not in ("@image", "@optional") and q not in RELEASES]
            if bad or (name.startswith("-") and quals):
                sys.exit(f"{LIST}:{n}: qualifiers {bad or quals} (only {', '.join(RELEASES)}, @image, @optional)")
            if name.startswith("-"):
                words.add(name[1:])
            else:
                called[name] = quals
    return called, words


def scripts(root: str) -> List[str]:
    found = [os.path.join(root, "contrib", "test.sh")]
    found += glob.glob(os.path.join(root, "contrib", "*.sh"))
    found += glob.glob(os.path.join(root, "tests", "**", "*.sh"), recursive=True)
    # shell scripts named otherwise (tests/bench/bench_scale)
    for path in glob.glob(os.path.join(root, "tests", "**", "*"), recursive=True):
        if os.path.isfile(path) and "." not in os.path.basename(path):
            with open(path, "rb") as f:
                if SHEBANG.match(f.readline().decode("utf-8", "replace")):
                    found.append(path)
    for d, subdirs, files in os.walk(root):
        subdirs[:] = [s for s in subdirs if not (s.startswith("build") or s.startswith("."))]
        if "meson.build" in files:
            found.append(os.path.join(d, "meson.build"))
    return sorted(set(found))


def shell_words() -> Set[str]:
    out = subprocess.run(["bash", "-c", "compgen -b; compgen -k"], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def listed(root: str) -> int:
    called, words = read_list()
    known = set(called) | words
    builtin = shell_words()
    seen: Dict[str, str] = {}
    paths: Set[str] = set()
    for path in scripts(root):
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if line.lstrip().startswith("#"):
                    continue
                for w in WORD.findall(line):
                    seen.setdefault(w, f"{os.path.relpath(path, root)}:{n}")
                for w in PATHWORD.findall(line):
                    seen.setdefault(w, f"{os.path.relpath(path, root)}:{n}")
                    paths.add(w)
    rc = 0
    for w in sorted(seen):
        if w in known or (w in builtin and w not in paths) or shutil.which(w) is None:
            continue
        print(f"unlisted: '{w}' ({seen[w]}) is a program on PATH: list it in {LIST}, "
              "as a call or as a -word", file=sys.stderr)
        rc = 1
    for w in sorted(known - set(seen)):
        print(f"stale: '{w}' of {LIST} is no longer a word of the scripts", file=sys.stderr)
        rc = 1
    if rc == 0:
        print(f"programs.list: {len(called)} programs, {len(words)} words, "
              f"{len(scripts(root))} files scanned")
    return rc


def release() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VERSION_CODENAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return ""


def present() -> int:
    called, _ = read_list()
    rel = release()
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    need = [n for n, q in called.items()
            if "@image" not in q and "@optional" not in q and (not q or rel in q)]
    missing = sorted(n for n in need if shutil.which(n, path=path) is None)
    for n in missing:
        print(f"missing: {n} (called by the tests; contrib/setup.sh --set test must install it on {rel})",
              file=sys.stderr)
    print(f"programs: {len(need) - len(missing)} of {len(need)} found on {rel or 'an unknown release'}")
    return 1 if missing else 0


def main() -> int:
    if len(sys.argv) >= 3 and sys.argv[1] == "--listed":
        return listed(sys.argv[2])
    if len(sys.argv) >= 2 and sys.argv[1] == "--present":
        return present()
    print("usage: check_programs.py --listed SOURCE_ROOT | --present", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
