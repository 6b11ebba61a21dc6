"""A pytest plugin that runs upstream's live suite through a mount.

maf-sandbox-docker's own live suite,
``packages/maf-sandbox-docker/tests/test_docker_e2e.py`` of the tree vendored
read-only in ../shared/vendor/maf-extensions (never copied here), builds its
backend with ``DockerSandboxBackend(...)``. Loaded with ``-p upstream_e2e``,
this plugin mounts mafsbxfs (``-o image=IMAGE:upstream-e2e``, no scope:
upstream's tests pick their own ``e2e-UUID`` scopes), sets
``MAF_SANDBOX_DOCKER_E2E_IMAGE`` to the test image, and replaces that name in
the test module's namespace with a factory returning
``mafsbx.maf.MafsbxBackend(MOUNT)``: every test then runs unchanged through
the mount and the adapter.

What does not run, and why (printed in the summary):

* EXCLUDED: tests that read the Docker backend's private attributes or need
  what this machine has not (deselected, named in the summary);
* EXPECTED: tests whose assertion is about the Docker backend's own
  declarations and is false of the adapter by design; each is reported as an
  expected failure only when it fails on exactly that assertion (anything
  else, a passing run included, is a failure).

A skipped test fails the run (CI counts a skip as a failure), as does a
mount that cannot be made (MAFSBX_REQUIRE_ENGINE=1 or not: nothing here
would have run).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import shutil
from typing import Any, Dict, Generator, List, Optional

import pytest

from mountcase import IMAGE, PLANE, missing, unmount_and_wait, wait_mounted

MODULE = "test_docker_e2e.py"

# The test image with a nohup: the HOST_TOOLS tests check the guest has
# what upstream's launcher runs (sh, nohup, printf, mv), and Debian's
# busybox-static, which the offline image is made of, has no nohup applet.
# The stand-in does what the launcher needs of it: the command runs with
# SIGHUP ignored. Made with create/cp/commit (no builder, offline).
E2E_IMAGE = IMAGE.rsplit(":", 1)[0] + ":upstream-e2e"
NOHUP = "#!/bin/sh\n# nohup(1) as the launcher needs it: the command, with SIGHUP ignored\ntrap '' HUP\nexec \"$@\"\n"

EXCLUDED: Dict[str, str] = {
    "TestFilesOutAgainstARealEngine::test_a_stat_or_read_through_a_symlinked_parent_is_refused":
        "reads the Docker backend's private sandbox._stat_guest (its unconfined stat through "
        "docker's archive API) to prove the premise; the refusals it then checks are the "
        "conformance probes the adapter passes (test_maf_published, test_maf)",
    "TestAllowlistEgress::test_allowed_reachable_denied_not_and_teardown_leaves_nothing":
        "needs MAF_SANDBOX_DOCKER_E2E_PROXY_IMAGE (upstream's proxy image), curl in the guest and "
        "the internet (mcr.microsoft.com, pypi.org), none of which this offline machine has, and "
        "reads the Docker backend's private network naming (container_name + '-net'); the "
        "mount's allowlist egress is tested by tests/mount (egress)",
}

EXPECTED: Dict[str, tuple] = {
    "TestFilesOutAgainstARealEngine::test_it_answers_the_shared_conformance_probes": (
        "the probes all pass; the test then asserts the four listing probes were skipped "
        "because the Docker backend does not declare FILES_LIST, and the adapter declares it "
        "(it lists through the mount): those four run and pass instead",
        "a-listing-names-its-links",
    ),
}

_state: Dict[str, Any] = {"skipped": [], "expected": []}


def _docker(*args: str) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise pytest.UsageError(f"docker {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def _make_image(tmp: str) -> None:
    shim = os.path.join(tmp, "nohup")
    with open(shim, "w") as f:
        f.write(NOHUP)
    os.chmod(shim, 0o755)
    cid = _docker("create", IMAGE, "true")
    try:
        _docker("cp", shim, f"{cid}:/bin/nohup")
        _docker("commit", cid, E2E_IMAGE)
    finally:
        _docker("rm", "-f", cid)


def _mount(config: pytest.Config) -> None:
    why = missing()
    if why:
        raise pytest.UsageError(f"cannot mount mafsbxfs for upstream's suite: {why}")
    tmp = tempfile.mkdtemp(prefix="mafsbxfs-upstream.")
    _make_image(tmp)
    mnt = os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    log = open(os.path.join(tmp, "daemon.log"), "wb")
    opts = f"image={E2E_IMAGE}" + (f",plane={PLANE}" if PLANE != "local" else "")
    daemon = subprocess.Popen([os.environ["MAFSBXFS"], "-f", "-o", opts, mnt], stdout=log, stderr=subprocess.STDOUT)
    _state.update(tmp=tmp, mnt=mnt, log=log, daemon=daemon)
    wait_mounted(mnt, daemon, 10)


def _e2e_containers() -> "set[str]":
    """The containers of upstream's tests on the engine (scope e2e-UUID, agent devops-engineer)."""
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", "label=maf-sandbox.agent=devops-engineer",
         "--format", '{{.Names}}\t{{.Label "maf-sandbox.scope"}}'],
        capture_output=True, text=True, timeout=60)
    return {line.split("\t")[0] for line in out.stdout.splitlines()
            if line.partition("\t")[2].startswith("e2e-")}


def pytest_configure(config: pytest.Config) -> None:
    os.environ["MAF_SANDBOX_DOCKER_E2E_IMAGE"] = E2E_IMAGE  # read when the module is imported
    os.environ.pop("MAF_SANDBOX_DOCKER_E2E_PROXY_IMAGE", None)
    _state["before"] = _e2e_containers()
    _mount(config)


def _teardown() -> Optional[str]:
    """Remove what failed tests left, unmount; why the run fails, or None."""
    daemon: Optional["subprocess.Popen[bytes]"] = _state.pop("daemon", None)
    if daemon is None:
        return None
    left = sorted(_e2e_containers() - _state["before"])
    if left:
        print(f"\nupstream_e2e: removing {len(left)} container(s) left by failed tests: {left}", file=sys.stderr)
        subprocess.run(["docker", "rm", "-f", *left], stdout=subprocess.DEVNULL)
    rc = unmount_and_wait(_state["mnt"], daemon)
    _state["log"].close()
    why = None
    if rc != 0:
        with open(os.path.join(_state["tmp"], "daemon.log"), "rb") as f:
            why = f"mafsbxfs exited with {rc}; its log:\n{f.read()[-4000:].decode('utf-8', 'replace')}"
    shutil.rmtree(_state["tmp"], ignore_errors=True)
    return why


def pytest_unconfigure(config: pytest.Config) -> None:
    why = _teardown()  # only when the session did not finish
    if why:
        sys.stderr.write(why)




def _short(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.nodeid


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    from mafsbx.maf import MafsbxBackend

    def backend(*_args: Any, **_kwargs: Any) -> MafsbxBackend:
        return MafsbxBackend(_state["mnt"])

    kept, dropped = [], []
    for item in items:
        module = getattr(item, "module", None)
        if module is None or os.path.basename(module.__file__ or "") != MODULE:
            kept.append(item)
            continue
        module.DockerSandboxBackend = backend  # the one replacement
        (dropped if _short(item) in EXCLUDED else kept).append(item)
    unknown = set(EXCLUDED) - {_short(i) for i in dropped}
    if unknown:
        raise pytest.UsageError(f"excluded tests upstream's suite no longer has: {sorted(unknown)}")
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    rep = outcome.get_result()
    expected = EXPECTED.get(_short(item))
    if expected is None or rep.when != "call":
        return
    reason, needle = expected
    exc = call.excinfo
    # exactly the Docker-specific assertion: an AssertionError that is not a
    # ConformanceFailure (a probe that failed), naming the listing probes
    if exc is not None and exc.type is AssertionError and needle in str(exc.value):
        rep.outcome = "skipped"
        rep.wasxfail = reason
        _state["expected"].append(_short(item))
    elif rep.passed:
        rep.outcome = "failed"
        rep.longrepr = f"expected to fail on its Docker-only assertion ({reason}), and it passed"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _state["skipped"].append(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    tr = terminalreporter
    tr.section("upstream's e2e suite through mafsbx.maf")
    tr.write_line(f"mount: {_state.get('mnt')} (plane {PLANE}, image {E2E_IMAGE}: {IMAGE} with a nohup)")
    for name, why in EXCLUDED.items():
        tr.write_line(f"EXCLUDED {name}: {why}")
    for name in _state["expected"]:
        tr.write_line(f"EXPECTED FAILURE {name}: {EXPECTED[name][0]}")
    for nodeid in _state["skipped"]:
        tr.write_line(f"SKIPPED (a failure here) {nodeid}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    why = _teardown()
    if why:
        sys.stderr.write(why)
        session.exitstatus = 1
    if _state["skipped"]:
        session.exitstatus = 1
