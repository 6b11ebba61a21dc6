#!/usr/bin/env python3
"""check_layers.py SOURCE_ROOT BUILD_ROOT: the layers of src/ hold.

src/ is built in layer folders (src/meson.build), each compiled with the
include folders of itself and of the layers it may use only. This checks, with
the very compile commands the build used (BUILD_ROOT/compile_commands.json):

- every file of src/ is in exactly one layer folder (none loose in src/, none
  in a folder that is not a layer, no file name in two layers: the includes
  are bare quoted names);
- for each layer, a file that includes a header of each layer it may use
  compiles, and one that includes a header of any other layer (a layer above,
  or admin from the daemon's side) fails to compile with that layer's flags;
- every #include "..." of a src/ file names a header of its own layer or of
  one it may use (the same rule, read from the text, with the line named);
- the daemon (fs/) is compiled without admin's folder.

Exit 0 when all hold, 1 with one line per breach.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

# The contract: each layer and the layers it may include (besides itself).
# src/meson.build and doc/architecture.md say the same.
USES = {
    'base': [],
    'model': ['base'],
    'engine': ['model', 'base'],
    'host': ['engine', 'model', 'base'],
    'freeze': ['host', 'engine', 'model', 'base'],
    'guestfs': ['freeze', 'host', 'engine', 'model', 'base'],
    'cluster': ['guestfs', 'freeze', 'host', 'engine', 'model', 'base'],
    'sandbox': ['cluster', 'guestfs', 'freeze', 'host', 'engine', 'model', 'base'],
    'plane': ['sandbox', 'cluster', 'guestfs', 'freeze', 'host', 'engine', 'model', 'base'],
    'admin': ['host', 'engine', 'model', 'base'],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def fail(msgs, text):
    msgs.append(text)


def layer_files(src):
    """{layer: [file names]} and the breaches of the one-folder rule."""
    msgs, files, seen = [], {}, {}
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry)
        if os.path.isfile(path):
            if entry != 'meson.build':
                fail(msgs, 'src/%s: not in a layer folder' % entry)
            continue
        if entry not in USES:
            fail(msgs, 'src/%s/: not a layer (the layers: %s)' % (entry, ', '.join(USES)))
            continue
        files[entry] = []
        for dirpath, dirnames, names in os.walk(path):
            if dirpath != path:
                fail(msgs, '%s: a folder inside a layer' % os.path.relpath(dirpath, os.path.dirname(src)))
            for n in sorted(names):
                if n == 'meson.build':
                    continue
                if n in seen:
                    fail(msgs, 'src/%s/%s: the name is in src/%s/ too' % (entry, n, seen[n]))
                seen[n] = entry
                files[entry].append(n)
    for layer in USES:
        if layer not in files:
            fail(msgs, 'src/%s/: missing' % layer)
    return files, msgs


def compile_command(commands, layer):
    """The flags one plain (not -test) file of `layer` was compiled with, as a list."""
    for c in commands:
        # the layer's own library (a fuzz build compiles the files again elsewhere)
        if not c.get('output', '').startswith('src/libmafsbx-%s.a.p/' % layer):
            continue
        return c['directory'], shlex.split(c['command'])
    return None, None


def flags_only(argv):
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ('-o', '-c', '-MQ', '-MF', '-MT'):
            skip = True
            continue
        if a in ('-MD', '-MMD') or a.startswith('-fdiagnostics-color'):
            continue
        out.append(a)
    return out


def try_compile(directory, flags, header, tmpdir):
    probe = os.path.join(tmpdir, 'probe.c')
    with open(probe, 'w') as f:
        f.write('#include "%s"\nint mafsbx_layer_probe(void);\nint mafsbx_layer_probe(void) { return 0; }\n' % header)
    p = subprocess.run(flags + ['-fsyntax-only', probe], cwd=directory, capture_output=True, text=True)
    first = next((l for l in p.stderr.splitlines() if 'error' in l), p.stderr.strip()[:200])
    return p.returncode == 0, first


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: check_layers.py SOURCE_ROOT BUILD_ROOT')
    root, build = sys.argv[1], sys.argv[2]
    src = os.path.join(root, 'src')
    files, msgs = layer_files(src)
    headers = {layer: [n for n in names if n.endswith('.h')] for layer, names in files.items()}
    where = {n: layer for layer, names in files.items() for n in names}

    # The text: every quoted include of src/ names a header it may use.
    for layer, names in files.items():
        for n in names:
            with open(os.path.join(src, layer, n), encoding='utf-8') as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                h = m.group(1)
                line = text.count('\n', 0, m.start()) + 1
                owner = where.get(h)
                if owner is None:
                    fail(msgs, 'src/%s/%s:%d: includes "%s", which no layer has' % (layer, n, line, h))
                elif owner != layer and owner not in USES[layer]:
                    fail(msgs, 'src/%s/%s:%d: includes "%s" of src/%s/, which %s may not use'
                         % (layer, n, line, h, owner, layer))

    # The build: each layer's own flags find what it may use and nothing else.
    with open(os.path.join(build, 'compile_commands.json')) as f:
        commands = json.load(f)
    compiled = 0
    with tempfile.TemporaryDirectory() as tmpdir:
        for layer in USES:
            directory, argv = compile_command(commands, layer)
            if argv is None:
                fail(msgs, 'src/%s/: no compile command in %s/compile_commands.json' % (layer, build))
                continue
            flags = flags_only(argv)
            for other in USES:
                for h in headers.get(other, [])[:1] if other != layer else headers.get(other, []):
                    ok, why = try_compile(directory, flags, h, tmpdir)
                    compiled += 1
                    allowed = other == layer or other in USES[layer]
                    if allowed and not ok:
                        fail(msgs, 'src/%s/ cannot include "%s" of src/%s/, which it may use: %s'
                             % (layer, h, other, why))
                    elif not allowed and ok:
                        fail(msgs, 'src/%s/ can include "%s" of src/%s/, a layer it may not use'
                             % (layer, h, other))

    # The daemon never sees admin.
    for c in commands:
        if c.get('output', '').startswith('fs/') and re.search(r'-I\S*src/admin\b', c['command']):
            fail(msgs, '%s: compiled with src/admin/ on its include path (the daemon must not use admin)'
                 % c['file'])
            break

    for m in msgs:
        print('FAIL: ' + m)
    print('%d layers, %d files, %d probe compiles, %d breaches'
          % (len(files), sum(len(v) for v in files.values()), compiled, len(msgs)))
    return 1 if msgs else 0


if __name__ == '__main__':
    sys.exit(main())
