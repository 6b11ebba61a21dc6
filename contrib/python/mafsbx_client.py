"""mafsbx_client: a small stdlib-only client for a mafsbxfs mount.

Each request is one transaction on a control file (INTERFACE.md section 4):
open MOUNT/.ctl/OP read-write, write one JSON object, read the JSON reply
from the same open file, close it. A failed request fails the write() (or,
for a request that was accepted first, the read or close) with an errno,
and the reply says why; the client raises MafsbxError with both.

    from mafsbx_client import Mount
    m = Mount("/tmp/sbx")
    sbx = m.acquire("demo", "t1", "analyst", "python", outputs=["result.json"])
    r = m.exec(sbx.name, command="echo hi > out.txt; cat out.txt")
    print(r.exit_code, r.stdout)          # 0 b'hi\\n'
    print(sbx.read("out.txt"))            # b'hi\\n'
    m.dispose(sbx.name)
"""

import base64
import errno as _errno
import json
import os
from dataclasses import dataclass, field

__all__ = ["Mount", "Sandbox", "ExecResult", "DetachedExec", "MafsbxError"]


class MafsbxError(OSError):
    """A failed request: errno (int), type (the upstream error class),
    message, and the whole reply (dict, or None when none could be read)."""

    def __init__(self, errno, type, message, reply=None):
        super().__init__(errno, message)
        self.type = type
        self.message = message
        self.reply = reply

    def __str__(self):
        name = _errno.errorcode.get(self.errno, str(self.errno))
        return f"{name} ({self.type}): {self.message}"


def _errno_of(name, default):
    if isinstance(name, str):
        return getattr(_errno, name, default)
    if isinstance(name, int):
        return name
    return default


def _parse(data):
    try:
        reply = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return reply if isinstance(reply, dict) else None


def _error_from(reply, err, what):
    """MafsbxError from a reply (preferred) and/or an OSError."""
    e = reply.get("error") if isinstance(reply, dict) else None
    if isinstance(e, dict):
        fallback = err.errno if err is not None else _errno.EIO
        return MafsbxError(_errno_of(e.get("errno"), fallback),
                           str(e.get("type", "")),
                           str(e.get("message", "")), reply)
    if err is not None:
        return MafsbxError(err.errno, "OSError", f"{what}: {err.strerror}", reply)
    return MafsbxError(_errno.EIO, "ProtocolError", f"{what}: no valid reply", reply)


@dataclass
class ExecResult:
    exit_code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    truncated: bool = False
    duration_ms: int = 0
    reply: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_reply(cls, reply):
        def b(key):
            if key + "_b64" in reply:
                return base64.b64decode(reply[key + "_b64"])
            return str(reply.get(key, "")).encode("utf-8")
        return cls(exit_code=reply.get("exit_code", -1),
                   stdout=b("stdout"), stderr=b("stderr"),
                   timed_out=bool(reply.get("timed_out", False)),
                   truncated=bool(reply.get("truncated", False)),
                   duration_ms=reply.get("duration_ms", 0),
                   reply=reply)


@dataclass
class Sandbox:
    name: str
    id: str
    work_dir: str
    uid: int
    gid: int
    path: str                     # the sandbox directory on the host (MOUNT/NAME)
    state: str = ""
    reply: dict = field(default_factory=dict, repr=False)

    def _work(self, relpath):
        if os.path.isabs(relpath):
            raise ValueError(f"{relpath!r}: a path relative to work/ is expected")
        return os.path.join(self.path, "work", relpath)

    def read(self, relpath):
        """The bytes of work_dir/relpath."""
        with open(self._work(relpath), "rb") as f:
            return f.read()

    def write(self, relpath, data):
        """Write bytes (or str, as UTF-8) to work_dir/relpath."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        with open(self._work(relpath), "wb") as f:
            f.write(data)


class DetachedExec:
    """A command started with "detach": true, under MOUNT/NAME/execs/ID."""

    def __init__(self, mount, sandbox, exec_id, path):
        self.mount = mount
        self.sandbox = sandbox
        self.id = exec_id
        self.path = path            # host path of MOUNT/NAME/execs/ID

    def _read(self, leaf):
        with open(os.path.join(self.path, leaf), "rb") as f:
            return f.read()

    def status(self):
        """The status JSON (running, exit_code, timed_out, cancelled, ...)."""
        return json.loads(self._read("status").decode("utf-8"))

    def stdout(self):
        return self._read("stdout")

    def stderr(self):
        return self._read("stderr")

    def wait(self):
        """Block until the command ends; its result as a blocking exec's."""
        data = b""
        err = None
        try:
            data = self._read("wait")
        except OSError as e:
            err = e
        reply = _parse(data) if data else None
        if reply is not None and "exit_code" in reply:
            return ExecResult.from_reply(reply)
        raise _error_from(reply, err, f"{self.path}/wait")

    def cancel(self):
        """Kill the command if it still runs; forget it if it ended."""
        os.rmdir(self.path)


class Mount:
    def __init__(self, path):
        self.path = os.fspath(path)

    def transaction(self, op, request):
        """One transaction on MOUNT/.ctl/OP: the reply (dict) of a request
        that succeeded; MafsbxError for one that failed."""
        body = json.dumps(request).encode("utf-8")
        fd = os.open(os.path.join(self.path, ".ctl", op), os.O_RDWR)
        err = None
        chunks = []
        try:
            try:
                off = 0
                while off < len(body):
                    off += os.write(fd, body[off:])
            except OSError as e:
                err = e
            # Read the reply even when the write failed: it says why.
            try:
                while True:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
            except OSError as e:
                err = err or e
        finally:
            try:
                os.close(fd)
            except OSError as e:
                err = err or e
        reply = _parse(b"".join(chunks))
        if err is not None or reply is None or reply.get("ok") is not True:
            raise _error_from(reply, err, f".ctl/{op}")
        return reply

    def acquire(self, scope, thread, agent, kind, image=None, outputs=None, **extra):
        """Get or create the sandbox of (scope, thread, agent, kind). extra:
        any other acquire field (call, work_dir, capabilities, egress, env,
        labels, limits, ...)."""
        req = {"scope": scope, "thread": thread, "agent": agent, "kind": kind}
        if image is not None:
            req["image"] = image
        if outputs is not None:
            req["outputs"] = list(outputs)
        req.update(extra)
        r = self.transaction("acquire", req)
        return Sandbox(name=r["name"], id=r.get("id", ""), work_dir=r.get("work_dir", ""),
                       uid=r.get("uid", -1), gid=r.get("gid", -1),
                       path=os.path.join(self.path, r.get("path", r["name"])),
                       state=r.get("state", ""), reply=r)

    @staticmethod
    def _exec_request(name, argv, command, cwd, env, stdin, timeout):
        if (argv is None) == (command is None):
            raise ValueError("exactly one of argv and command is required")
        req = {"sandbox": name}
        if argv is not None:
            req["argv"] = list(argv)
        else:
            req["command"] = command
        if cwd is not None:
            req["cwd"] = cwd
        if env is not None:
            req["env"] = dict(env)
        if stdin is not None:
            if isinstance(stdin, str):
                stdin = stdin.encode("utf-8")
            req["stdin_b64"] = base64.b64encode(stdin).decode("ascii")
        if timeout is not None:
            req["timeout"] = timeout
        return req

    def exec(self, name, argv=None, command=None, cwd=None, env=None, stdin=None, timeout=None):
        """Run a command in sandbox NAME and wait for it. A non-zero exit code
        is a result, not an error; a timeout raises MafsbxError(ETIMEDOUT)
        (and the sandbox is disposed, as upstream does)."""
        req = self._exec_request(name, argv, command, cwd, env, stdin, timeout)
        return ExecResult.from_reply(self.transaction("exec", req))

    def exec_detached(self, name, argv=None, command=None, cwd=None, env=None,
                      stdin=None, timeout=None):
        """Start a command and return at once (a DetachedExec)."""
        req = self._exec_request(name, argv, command, cwd, env, stdin, timeout)
        req["detach"] = True
        r = self.transaction("exec", req)
        return DetachedExec(self, name, r["exec"],
                            os.path.join(self.path, r.get("path", f"{name}/execs/{r['exec']}")))

    def dispose(self, name):
        """Dispose sandbox NAME; the number disposed (0: already gone)."""
        return self.transaction("dispose", {"name": name}).get("disposed", 0)
