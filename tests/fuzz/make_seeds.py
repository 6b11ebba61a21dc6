#!/usr/bin/env python3
"""make_seeds.py: writes the committed seed corpora (corpus/<target>/) of
the libFuzzer harnesses. Run from tests/fuzz/ after changing a seed; the
files are committed so CI needs no Python step. Regression seeds for bugs
the fuzzers found are committed by hand as corpus/<target>/regress-*."""
import base64, io, json, os, struct, tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
SEP = b"\n--\n"


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def tar_of(*members, fmt=tarfile.PAX_FORMAT):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    # drop the record padding: blocks, then the two end-of-archive blocks
    v = b.getvalue().rstrip(b"\0")
    return v + b"\0" * (-len(v) % 512) + b"\0" * 1024


def file_info(name, data, **kw):
    i = tarfile.TarInfo(name)
    i.size = len(data)
    i.mode = 0o644
    i.uid = i.gid = 1000
    i.mtime = 1700000000
    for k, v in kw.items():
        setattr(i, k, v)
    return (i, data)


def other_info(name, typ, linkname=""):
    i = tarfile.TarInfo(name)
    i.type = typ
    i.linkname = linkname
    i.mode = 0o755
    i.mtime = 1700000000
    return (i, None)


# ---- tar: byte 0 = piece size / flags, then the archive ----
small = tar_of(file_info("hostname", b"abc123\n"))
put("tar", "file-ustar", b"\x3f" + tar_of(file_info("hostname", b"abc123\n"), fmt=tarfile.USTAR_FORMAT))
put("tar", "file-pax-pieces", b"\x06" + small)
put("tar", "file-capped", b"\xbf" + tar_of(file_info("big", b"x" * 3000)))
put("tar", "longname-pax", b"\x3f" + tar_of(file_info("d/" + "n" * 200 + "/leaf", b"data")))
put("tar", "longname-gnu", b"\x10" + tar_of(file_info("g/" + "m" * 150 + "/leaf", b"data"), fmt=tarfile.GNU_FORMAT))
put("tar", "symlink", b"\x7f" + tar_of(other_info("lnk", tarfile.SYMTYPE, "/etc/passwd")))
put("tar", "dir", b"\x3f" + tar_of(other_info("d", tarfile.DIRTYPE)))
put("tar", "hardlink", b"\x3f" + tar_of(other_info("h", tarfile.LNKTYPE, "hostname")))
put("tar", "fifo", b"\x3f" + tar_of(other_info("f", tarfile.FIFOTYPE)))
put("tar", "nonutf8-pax", b"\x3f" + tar_of(file_info("caf\xe9", b"x"), fmt=tarfile.GNU_FORMAT))
put("tar", "empty", b"\x3f" + b"\0" * 1024)
put("tar", "truncated-body", b"\x3f" + small[:600])

# ---- pathstat: byte 0 even = JSON (base64-encoded by the harness), odd = the header text ----
st = {"name": "hostname", "size": 7, "mode": 420, "mtime": "2024-05-01T10:20:30.123456789Z", "linkTarget": ""}
put("pathstat", "file-json", b"\x00" + json.dumps(st).encode())
put("pathstat", "symlink-json", b"\x00" + json.dumps({"name": "lnk", "size": 11, "mode": (1 << 27) | 0o777,
                                                      "mtime": "2024-05-01T10:20:30+02:00",
                                                      "linkTarget": "/etc/passwd"}).encode())
put("pathstat", "dir-json", b"\x00" + json.dumps({"name": "w", "size": 4096, "mode": (1 << 31) | 0o755,
                                                  "mtime": "0001-01-01T00:00:00Z", "linkTarget": ""}).encode())
put("pathstat", "setuid-fifo-json", b"\x00" + json.dumps({"name": "p", "size": 0, "mode": (1 << 25) | (1 << 23) | 0o4755,
                                                          "mtime": "2024-02-29T23:59:60Z", "linkTarget": ""}).encode())
put("pathstat", "header-text", b"\x01" + base64.b64encode(json.dumps(st).encode()))
put("pathstat", "header-bad", b"\x01" + b"eyJuYW1lIjoi!!")

# ---- spec: the request text ----
put("spec", "acquire-full", json.dumps({
    "scope": "s", "thread": "t", "agent": "a", "call": "", "kind": "python",
    "image": "mafsbx/busybox:latest", "work_dir": None,
    "capabilities": ["exec", "files_in", "files_out"], "egress": "closed", "egress_allow": [],
    "outputs": ["result.json", "plots/fig1.png"], "env": {"K": "V"}, "labels": {"team": "x"},
    "isolation_scope": "conversation", "requires_os_family": None,
    "limits": {"max_read_bytes": 1048576}}))
put("spec", "acquire-call", '{"scope": "s", "thread": "t", "agent": "a", "call": "c1", "kind": "k", '
    '"isolation_scope": "call", "work_dir": "/w/../x", "capabilities": ["host_tools", "files_delete"], '
    '"egress": "allowlist", "egress_allow": ["example.com", "10.0.0.0/8"], "requires_os_family": "linux"}')
put("spec", "dispose-name", '{"name": "maf-sandbox-docker-0123456789ab"}')
put("spec", "dispose-key", '{"scope": "s", "thread": "t", "agent": "a", "call": "c", "kind": "k"}')
put("spec", "dispose-conv", '{"scope": "s", "thread": "t"}')
put("spec", "exec-argv", '{"sandbox": "maf-sandbox-docker-0123456789ab", "argv": ["python3", "-c", "print(1)"], '
    '"cwd": ".", "env": {"K": "V", "PATH": "/bin"}, "stdin": "text\\u00e9", "timeout": 30}')
put("spec", "exec-command", '{"sandbox": "x", "command": "echo hi", "cwd": "/tmp", "stdin_b64": "AAEC/w==", "timeout": 0.5}')
put("spec", "exec-bad", '{"sandbox": "x", "argv": [], "command": "", "timeout": -1e999}')

# ---- endpoint: URL / DOCKER_HOST / DOCKER_CONTEXT / config.json / meta.json / TLS_VERIFY / flags ----
def ep(*parts):
    return SEP.join(p.encode() if isinstance(p, str) else p for p in parts)
put("endpoint", "unix", ep("unix:///var/run/docker.sock"))
put("endpoint", "tcp-tls", ep("tcp://127.0.0.1:2376", "tcp://[::1]", "", "", "", "1", "p"))
put("endpoint", "https", ep("https://host.example:443/", "http://h:80"))
put("endpoint", "host-option", ep("unix:///tmp/x.sock", "", "", "", "", "", "h"))
put("endpoint", "context-env", ep("", "", "fz", "{}", json.dumps({"Name": "fz", "Endpoints": {"docker": {
    "Host": "tcp://10.1.2.3:2376", "SkipTLSVerify": False}}}), "", "e"))
put("endpoint", "context-config", ep("", "", "", json.dumps({"currentContext": "fz"}), json.dumps({
    "Name": "fz", "Metadata": {}, "Endpoints": {"docker": {"Host": "unix:///run/user/1000/docker.sock"}}}), "", "e"))
put("endpoint", "context-option", ep("", "", "fz", "", json.dumps({"Name": "fz", "Endpoints": {"docker": {
    "Host": "ssh://u@h"}}}), "", "ce"))
put("endpoint", "default-context", ep("", "", "default", json.dumps({"currentContext": "default"}), "", "", "e"))

# ---- demux: byte 0 piece-1, byte 1 cap/16, then frames ----
def frame(stream, data):
    return bytes([stream, 0, 0, 0]) + struct.pack(">I", len(data)) + data
put("demux", "two-streams", b"\x03\x00" + frame(1, b"hello\n") + frame(2, b"oops\n") + frame(0, b"in") + frame(3, b"e"))
put("demux", "capped", b"\xff\x01" + frame(1, b"x" * 40) + frame(2, b"y" * 10))
put("demux", "empty-frame", b"\x00\x00" + frame(1, b"") + frame(1, b"z"))
put("demux", "cut-payload", b"\x07\x00" + frame(1, b"abcdef")[:10])
put("demux", "bad-header", b"\x07\x00" + bytes([1, 1, 0, 0, 0, 0, 0, 1]) + b"x")

# ---- engine: op byte, then the raw answers, the first to _ping ----
def http(status, body=b"", ctype="application/json", extra=""):
    if isinstance(body, str):
        body = body.encode()
    reason = {200: "OK", 201: "Created", 204: "No Content", 101: "UPGRADED", 404: "Not Found",
              409: "Conflict", 500: "Internal Server Error"}.get(status, "X")
    h = "HTTP/1.1 %d %s\r\nApi-Version: 1.41\r\nContent-Type: %s\r\n%sContent-Length: %d\r\n\r\n" % (
        status, reason, ctype, extra, len(body))
    return h.encode() + body
PING = http(200, "OK", "text/plain; charset=utf-8")
def eng(op, *answers):
    return SEP.join([op.encode()] + [PING] + list(answers))
put("engine", "version", eng("v", http(200, json.dumps({"Version": "20.10.24+dfsg1", "ApiVersion": "1.41",
    "MinAPIVersion": "1.12", "Os": "linux", "Arch": "amd64", "KernelVersion": "6.1"}))))
put("engine", "inspect", eng("i", http(200, json.dumps({"Id": "a" * 64, "Name": "/n1", "State": {
    "Status": "running", "Running": True, "Paused": False, "Pid": 42}, "Config": {"User": "1000:1000",
    "Labels": {"maf-sandbox.scope": "s"}}}))))
put("engine", "inspect-404", eng("i", http(404, '{"message":"No such container: c1"}')))
put("engine", "list", eng("l", http(200, json.dumps([{"Id": "b" * 64, "Names": ["/maf-sandbox-docker-0123456789ab"],
    "State": "running", "Labels": {"maf-sandbox.scope": "s"}}]))))
put("engine", "list-chunked", eng("l", b"HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n3\r\n[{}\r\n1\r\n]\r\n0\r\n\r\n"))
put("engine", "create", eng("c", http(201, json.dumps({"Id": "c" * 64, "Warnings": []}))))
put("engine", "create-409", eng("c", http(409, '{"message":"Conflict. The container name \\"/n1\\" is already in use"}')))
stat_hdr = base64.b64encode(json.dumps(st).encode()).decode()
put("engine", "head", eng("h", http(200, "", "application/x-tar", "X-Docker-Container-Path-Stat: %s\r\n" % stat_hdr)))
put("engine", "head-404", eng("h", http(404, "", "application/json"),
    http(404, '{"message":"Could not find the file /w/x in container c1"}')))
put("engine", "head-500", eng("h", http(500, ""), http(500, '{"message":"lstat /var/lib/docker/overlay2/x/merged/w/x: not a directory"}')))
put("engine", "get", eng("g", http(200, small, "application/x-tar", "X-Docker-Container-Path-Stat: %s\r\n" % stat_hdr)))
raw = (b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\n"
       b"Upgrade: tcp\r\n\r\n" + frame(1, b"out\n") + frame(2, b"err\n"))
put("engine", "exec", eng("x", http(201, json.dumps({"Id": "d" * 64})), raw,
    http(200, json.dumps({"ExitCode": 0, "Running": False, "Pid": 7}))))
put("engine", "exec-200-stream", eng("x", http(201, json.dumps({"Id": "d" * 64})),
    http(200, frame(1, b"x"), "application/vnd.docker.raw-stream"),
    http(200, json.dumps({"ExitCode": 126, "Running": False}))))
put("engine", "exec-oci", eng("x", http(201, json.dumps({"Id": "d" * 64})), raw[:raw.index(b"\r\n\r\n") + 4] +
    frame(1, b"OCI runtime exec failed: exec failed: unable to start container process: exec: \"nope\": "
             b"executable file not found in $PATH: unknown\r\n"),
    http(200, json.dumps({"ExitCode": 126, "Running": False}))))
put("engine", "exec-paused", eng("x", http(409, '{"message":"Container c1 is paused, unpause the container before exec"}')))
put("engine", "pull", eng("p", http(200, '{"status":"Pulling from library/x"}\n{"status":"Downloading","progressDetail":'
    '{"current":1,"total":2}}\n{"status":"Status: Downloaded newer image for x:latest"}\n')))
put("engine", "pull-error", eng("p", http(200, '{"status":"Pulling"}\n{"errorDetail":{"message":"denied"},"error":"denied"}\n')))
put("engine", "image-inspect", eng("m", http(200, json.dumps({"Id": "sha256:" + "e" * 64, "Os": "linux",
    "Config": {"User": "", "Env": ["PATH=/bin"]}}))))
put("engine", "networks", eng("n", http(200, json.dumps([{"Name": "bridge", "Id": "f" * 64, "Labels": {}}]))))
put("engine", "delete", eng("d", http(204, "")))
put("engine", "pause-409", eng("u", http(409, '{"message":"Container c1 is already paused"}')))

# ---- archlist: byte 0 = piece size / bounds, then a directory's archive rooted at "d" ----
dir_members = [other_info("d", tarfile.DIRTYPE), file_info("d/a.txt", b"hello"),
               other_info("d/sub", tarfile.DIRTYPE), file_info("d/sub/deep.txt", b"x" * 700),
               other_info("d/lnk", tarfile.SYMTYPE, "/etc/passwd"), other_info("d/hard", tarfile.LNKTYPE, "d/a.txt"),
               other_info("d/fifo", tarfile.FIFOTYPE), other_info("d/chr", tarfile.CHRTYPE),
               file_info("d/" + "n" * 200, b"")]
put("archlist", "dir-ustar", b"\x3f" + tar_of(*[m for m in dir_members if len(m[0].name) < 100],
                                             fmt=tarfile.USTAR_FORMAT))
put("archlist", "dir-pax-pieces", b"\x06" + tar_of(*dir_members))
put("archlist", "dir-gnu", b"\x3f" + tar_of(*dir_members, fmt=tarfile.GNU_FORMAT))
put("archlist", "dir-bounded", b"\xff" + tar_of(*dir_members))
put("archlist", "dir-big-body", b"\x7f" + tar_of(other_info("d", tarfile.DIRTYPE), file_info("d/big", b"y" * 20000)))
put("archlist", "not-rooted", b"\x3f" + tar_of(file_info("e/x", b"")))
put("archlist", "empty", b"\x3f" + b"\0" * 1024)

# ---- guestpath: [WORK_DIR \n--\n] PATH ----
for i, s in enumerate(["out/hostname", "../work-outside/x", "/maf-sandbox/work/./a//b/../c", "", ".",
                       "a\\b", "/", "x/" * 20 + "y", "caf\xe9/\xff"]):
    put("guestpath", "p%d" % i, s.encode("latin-1"))
put("guestpath", "wd-root", b"/" + SEP + b"etc/passwd")
put("guestpath", "wd-dots", b"/maf-sandbox/work/." + SEP + b"../work/x")
put("guestpath", "wd-relative", b"work" + SEP + b"x")

# ---- ctl: byte 0 piece size (0 = one write), then the bytes written ----
put("ctl", "one-write", b"\x00" + json.dumps({"sandbox": "x", "argv": ["sh", "-c", "echo '}{'"]}).encode() + b"\n")
put("ctl", "pieces", b"\x03" + b'{"a": [1, -2.5e+3, true, false, null, {"b": "\\u00e9\\ud83d\\ude00"}]}')
put("ctl", "pretty", b"\x00" + b'{\n  "a": 1,\n  "b": [\n    2\n  ]\n}\n')
put("ctl", "not-json", b"\x00{not json\n")
put("ctl", "unfinished", b"\x00{\"scope\": \"s\", \"thread\": \n")
put("ctl", "utf8", b"\x02" + '{"s": "caf\u00e9 \u20ac \U0001f600"}'.encode())
put("ctl", "trailing", b"\x00{} {}")
# op 'e': the absent-path match of 404 messages (no fake engine)
put("engine", "absent-nonutf8", b"e/maf-sandbox/work/caf\xe9/\xff\xfe/var/lib/docker/x")
put("engine", "absent-mixed", b"e/w/\xe2\x82\xc3\xa9\xed\xa0\x80\xf4\x90\x80\x80\xef\xbf\xbd")
put("engine", "absent-long", b"e/w/" + b"a" * 1500)
