"""One transaction on a control file, and the small file reads of the mount.

A transaction (the mount's contract): open ``MOUNT/.ctl/OP`` read-write,
write one JSON object, read the reply (one JSON object and a newline) from the
same open file, close it. A failed request fails the ``write()`` that
completes it with an errno, or, for a request accepted first, the ``read()``
that reaches the end of the reply or the ``close()``; the reply says why in
every case, so it is read even after a failed write.

Every call opens its own file: nothing is shared between calls, so any number
of threads may run transactions at once.
"""

from __future__ import annotations

import errno
import json
import os
from typing import Any, Dict, List, Mapping, Optional

from .errors import MafsbxError, error_from_oserror, error_from_reply

# The mount refuses requests over 1 MiB (EMSGSIZE); a reply is one JSON line.
_READ_CHUNK = 1 << 20


def read_all(fd: int) -> bytes:
    """Every byte up to end of file."""
    chunks: List[bytes] = []
    while True:
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def parse_reply(data: bytes) -> Optional[Dict[str, Any]]:
    """The reply object, or None when ``data`` is not one JSON object."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def reply_error(
    reply: Optional[Mapping[str, Any]], failure: Optional[OSError], what: str
) -> MafsbxError:
    """The error of a failed call: from the reply when there is one."""
    if reply is not None and isinstance(reply.get("error"), dict):
        fallback = failure.errno if failure is not None and failure.errno else errno.EIO
        return error_from_reply(reply, fallback, what)
    if failure is not None:
        return error_from_oserror(failure, what)
    return error_from_oserror(OSError(errno.EIO, "no valid reply came back"), what)


def transaction(mount: str, op: str, request: Mapping[str, Any]) -> Dict[str, Any]:
    """Run one request on ``MOUNT/.ctl/OP``; the reply of a request that succeeded.

    Raises the error the reply names (see :mod:`mafsbx.errors`) for one that
    failed. The reply is attached to the error (``error.reply``).
    """
    body = json.dumps(request).encode("ascii")
    what = f".ctl/{op}"
    try:
        fd = os.open(os.path.join(mount, ".ctl", op), os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        raise error_from_oserror(e, f"{mount}/{what}") from None
    failure: Optional[OSError] = None
    data = b""
    try:
        try:
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view):]
        except OSError as e:
            failure = e
        # Read the reply even when the write failed: it says why.
        try:
            data = read_all(fd)
        except OSError as e:
            failure = failure or e
    finally:
        try:
            os.close(fd)
        except OSError as e:
            failure = failure or e
    reply = parse_reply(data)
    if failure is None and reply is not None and reply.get("ok") is True:
        return reply
    raise reply_error(reply, failure, what)


def read_json(path: str) -> Dict[str, Any]:
    """A read-only JSON file of the mount (``status``, ``.ctl/declarations``...)."""
    try:
        with open(path, "rb", buffering=0) as f:
            data = f.read()
    except OSError as e:
        raise error_from_oserror(e, path) from None
    value = parse_reply(data)
    if value is None:
        raise error_from_oserror(OSError(errno.EIO, "not a JSON object"), path)
    return value


def read_bytes(path: str, offset: int = 0) -> bytes:
    """The bytes of a mount file from ``offset`` to its current end."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise error_from_oserror(e, path) from None
    try:
        if offset:
            chunks: List[bytes] = []
            while True:
                chunk = os.pread(fd, _READ_CHUNK, offset)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
                offset += len(chunk)
        return read_all(fd)
    except OSError as e:
        raise error_from_oserror(e, path) from None
    finally:
        os.close(fd)
