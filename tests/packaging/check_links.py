#!/usr/bin/env python3
"""check_links.py ROOT [PATH...]

Every link and every citation in the repository's documents leads somewhere:

 1. a relative Markdown link [text](target) names a file or directory that
    exists, and its #anchor, when given, is a heading of that Markdown file
    (GitHub's anchor rules: lower case, punctuation dropped, spaces as
    hyphens, -1, -2 ... for repeats); a link that is only #anchor names a
    heading of the file it is in;
 2. a citation `X.md §N` (also `doc/X.md §N.M`, a list `§4.6, §4.7` and a
    range `§8.1-§8.5`) names a Markdown file of the repository with a
    heading numbered N (`## 8. ...`, `### 8.4 ...`);
 3. a repository path written out (`doc/X.md`, `man/X.1`, `src/X.c`, and
    the like under fs/, tools/, tests/ and contrib/) names a file that
    exists, unless a part of it is an upper-case placeholder (`src/VERB.c`);
 4. a citation by heading, `doc/X.md "The tree"`, names a heading of that
    Markdown file, and `mafsbxfs(1) ENGINE ENDPOINT` a section (.SH) of
    man/mafsbxfs.1;
 5. nothing cites what the repository does not hold: no issue or pull
    request number (`issue 12`, `upstream #877`), no section of a document
    named without its file (`upstream §8.4`, `reference §9.5`), no
    `INTERFACE.md §N`.

PATHs (files or directories, relative to ROOT) default to doc, man and
README.md; directories are walked for *.md, *.1, *.c, *.h, *.sh, *.py,
meson.build and scripts without an extension (#!). Markdown syntax (rule 1) is read only in *.md files; rules 2
and 3 apply to every file, so the same check can run over source comments.
Fenced code blocks in Markdown are skipped. Exit 0 when everything leads
somewhere, 1 with one line per broken reference otherwise.

Every run first builds a small tree with good and broken references of
each kind and checks that exactly the broken ones are reported (--self-test
runs only that).
"""
import os
import re
import sys
import tempfile
import unicodedata

SCAN_EXT = ('.md', '.1', '.c', '.h', '.sh', '.py')
LINK_RE = re.compile(r'!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
SEC = r'§\d+(?:\.\d+)*'
CITE_RE = re.compile(r'(?P<file>(?:[\w.-]+/)*[\w-]+\.md),? (?P<secs>' + SEC +
                     r'(?:(?:, | and |-|–|/)' + SEC + r')*)')
PATH_RE = re.compile(r'(?<![\w./${-])((?:doc|man|src|fs|tools|tests|contrib)/[\w/.-]*\.(?:md|1|c|h|sh|py))(?![\w/-])')
HCITE_RE = re.compile(r'(?P<file>(?:[\w.-]+/)*[\w-]+\.md),? "(?P<head>[^"]+)"')
MANCITE_RE = re.compile(r'\b(?P<page>mafsbxfs|mafsbx)\(1\) (?P<sec>[A-Z][A-Z]+(?: [A-Z][A-Z]+)*)\b')
OUTSIDE_RE = re.compile(r'\b[Ii]ssues? #?\d+|(?<![\w&#])#\d+\b'
                        r'|\b(?:upstream|reference)(?:\'s)?\s+§\d|\bINTERFACE\.md(?: §| section)')
PLACEHOLDER_RE = re.compile(r'(?<![A-Za-z])[A-Z][A-Z_]+(?![a-z])')  # src/VERB.c, tools/cmd_NAME.c
HEADING_RE = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
NUMBERED_RE = re.compile(r'^§?(\d+(?:\.\d+)*)\.?(?:\s|$)')


def slug(text):
    """GitHub's anchor for a heading text."""
    text = re.sub(r'`', '', text)
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)  # a link keeps its text
    out = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in ' -':
            out.append('-' if ch == ' ' else ch)
        elif ch == '_' or cat[0] in ('L', 'N') or cat == 'Mn':
            out.append(ch)
    return ''.join(out)


class Doc:
    """The headings of one Markdown file: anchors and section numbers."""

    def __init__(self, path):
        self.anchors = set()
        self.sections = set()
        seen = {}
        for line in strip_fences(read(path)):
            m = HEADING_RE.match(line)
            if not m:
                continue
            text = m.group(2)
            base = slug(text)
            n = seen.get(base, 0)
            seen[base] = n + 1
            self.anchors.add(base if n == 0 else '%s-%d' % (base, n))
            num = NUMBERED_RE.match(text)
            if num:
                self.sections.add(num.group(1))


def read(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.read().split('\n')


def is_script(path):
    """A file with no extension that starts with #! (tests/bench/bench_agents)."""
    if '.' in os.path.basename(path):
        return False
    try:
        with open(path, 'rb') as f:
            return f.read(2) == b'#!'
    except OSError:
        return False


def strip_fences(lines):
    """The lines of a Markdown file with fenced code blocks blanked."""
    out, fence = [], None
    for line in lines:
        m = re.match(r'^\s*(```+|~~~+)', line)
        if fence is None and m:
            fence = m.group(1)[0] * 3
            out.append('')
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append('')
        else:
            out.append(line)
    return out


class Checker:
    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.docs = {}
        self.man = {}
        self.errors = []

    def doc(self, path):
        path = os.path.realpath(path)
        if path not in self.docs:
            self.docs[path] = Doc(path)
        return self.docs[path]

    def bad(self, where, msg):
        self.errors.append('%s: %s' % (where, msg))

    def resolve_md(self, src, name):
        """A cited Markdown file: relative to the citing file, then to ROOT."""
        for base in (os.path.dirname(src), self.root):
            p = os.path.normpath(os.path.join(base, name))
            if os.path.isfile(p) and p.startswith(self.root + os.sep):
                return p
        return None

    def check_link(self, src, where, target):
        if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target) or target.startswith('//'):
            return  # a URL, not a file of the repository
        path, _, anchor = target.partition('#')
        if path:
            full = os.path.normpath(os.path.join(os.path.dirname(src), path))
            if not full.startswith(self.root + os.sep) and full != self.root:
                self.bad(where, 'link %s leaves the repository' % target)
                return
            if not os.path.exists(full):
                self.bad(where, 'link %s: no such file' % target)
                return
        else:
            full = src
        if anchor:
            if not full.endswith('.md') or not os.path.isfile(full):
                self.bad(where, 'link %s: an anchor into a file that is not Markdown' % target)
            elif anchor not in self.doc(full).anchors:
                self.bad(where, 'link %s: %s has no heading with that anchor' %
                         (target, os.path.relpath(full, self.root)))

    def check_cite(self, src, where, name, secs):
        full = self.resolve_md(src, name)
        if full is None:
            self.bad(where, 'cites %s, which the repository does not contain' % name)
            return
        have = self.doc(full).sections
        for sec in re.findall(r'§(\d+(?:\.\d+)*)', secs):
            if sec not in have:
                self.bad(where, 'cites %s §%s: %s has no section %s' %
                         (name, sec, os.path.relpath(full, self.root), sec))

    def check_hcite(self, src, where, name, head):
        full = self.resolve_md(src, name)
        if full is None:
            self.bad(where, 'cites %s, which the repository does not contain' % name)
        elif slug(head) not in self.doc(full).anchors:
            self.bad(where, 'cites %s "%s": no such heading' % (name, head))

    def check_mancite(self, where, page, sec):
        path = os.path.join(self.root, 'man', page + '.1')
        if not os.path.isfile(path):
            self.bad(where, 'cites %s(1), which the repository does not contain' % page)
            return
        if page not in self.man:
            self.man[page] = {re.sub(r'^\.SH\s+"?|"?\s*$', '', line)
                              for line in read(path) if line.startswith('.SH')}
        if sec not in self.man[page]:
            self.bad(where, 'cites %s(1) %s: no such section' % (page, sec))

    def check_file(self, path):
        rel = os.path.relpath(path, self.root)
        lines = read(path)
        is_md = path.endswith('.md')
        if is_md:
            lines = strip_fences(lines)
        for i, line in enumerate(lines, 1):
            where = '%s:%d' % (rel, i)
            if is_md:
                for m in LINK_RE.finditer(line):
                    self.check_link(path, where, m.group(1))
            for m in CITE_RE.finditer(line):
                self.check_cite(path, where, m.group('file'), m.group('secs'))
            for m in HCITE_RE.finditer(line):
                self.check_hcite(path, where, m.group('file'), m.group('head'))
            for m in MANCITE_RE.finditer(line):
                self.check_mancite(where, m.group('page'), m.group('sec'))
            for m in OUTSIDE_RE.finditer(line):
                self.bad(where, 'cites "%s", which the repository does not hold' % m.group(0))
            for m in PATH_RE.finditer(line):
                if (not os.path.exists(os.path.join(self.root, m.group(1))) and
                        not PLACEHOLDER_RE.search(m.group(1))):
                    self.bad(where, 'names %s, which the repository does not contain' % m.group(1))

    def run(self, paths):
        for p in paths:
            full = os.path.join(self.root, p)
            if os.path.isdir(full):
                for d, dirs, files in os.walk(full):
                    dirs[:] = sorted(x for x in dirs if not x.startswith('.'))
                    for f in sorted(files):
                        full_f = os.path.join(d, f)
                        if os.path.realpath(full_f) == os.path.realpath(__file__):
                            continue  # its own self-test holds broken references on purpose
                        if f.endswith(SCAN_EXT) or f == 'meson.build' or is_script(full_f):
                            self.check_file(full_f)
            elif os.path.isfile(full):
                self.check_file(full)
            else:
                self.bad(p, 'no such file or directory to check')
        return self.errors


def self_test():
    """The checker finds each kind of broken reference, and only those."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, 'doc'))
        os.makedirs(os.path.join(root, 'src'))
        os.makedirs(os.path.join(root, 'man'))
        files = {
            'doc/a.md': '# A\n\n## 8. Disposal\n\n### 8.4 By `instance_id`: exact\n\n'
                        '## Où et comment\n\n## Twice\n\n## Twice\n',
            'doc/b.md': ('[ok](a.md) [ok](a.md#84-by-instance_id-exact) [ok](#b) [ok](a.md#où-et-comment)\n'
                         '[ok](a.md#twice-1) [ok](https://example.org/x.md) [ok](../src/x.c)\n'
                         'ok: doc/a.md §8.4, a.md §8, doc/a.md §8.4-§8, src/x.c\n'
                         '```\n[not a link](nowhere.md) doc/a.md §99\n```\n'
                         '# B\n'
                         'BAD1 [x](missing.md)\n'
                         'BAD2 [x](a.md#no-such-heading)\n'
                         'BAD3 [x](#nothing-here)\n'
                         'BAD4 doc/a.md §8.5\n'
                         'BAD5 doc/a.md §8.4, §9\n'
                         'BAD6 INTERFACE.md §4\n'
                         'BAD7 src/gone.c\n'
                         'BAD8 [x](../../outside.md)\n'
                         'ok: a new src/VERB.c, tools/cmd_NAME.c\n'),
            'man/mafsbxfs.1': '.TH MAFSBXFS 1\n.SH NAME\nx\n.SH THE TREE\ny\n',
            'src/x.c': ('/* ok: doc/a.md §8.4; BAD9: upstream.md §8.4 */\n'
                        '/* BAD10 issue 12 */\n/* BAD11 (upstream #877) */\n/* BAD12 upstream §8.4 */\n'
                        '/* BAD13 INTERFACE.md §4 (case #142/#214) */\n/* ok: RFC 4648 §10, the C99 standard */\n'
                        '/* ok: doc/a.md "Où et comment", mafsbxfs(1) THE TREE; BAD14 doc/a.md "Nowhere" */\n'
                        '/* BAD15 mafsbxfs(1) NO SUCH SECTION */\n'
                        'ok = "$src/contrib/setup.sh" "${src}/tools/x.sh"; a shell variable, not a path\n'),
        }
        for name, text in files.items():
            with open(os.path.join(root, name), 'w', encoding='utf-8') as f:
                f.write(text)
        errors = Checker(root).run(['doc', 'src'])
        want = {'doc/b.md:%d' % n for n in range(8, 16)} | {'src/x.c:%d' % n for n in (1, 2, 3, 4, 5, 7, 8)}
        got = [e.split(': ', 1)[0] for e in errors]
        # BAD6 is reported twice (no such file; an outside citation), BAD13 four times (and two #N)
        if set(got) != want or len(got) != len(want) + 4:
            print('FAIL: self-test: expected one report on each of %s, got:\n  %s' %
                  (sorted(want), '\n  '.join(errors) or '(none)'), file=sys.stderr)
            return 1
        return 0


def main(argv):
    if len(argv) >= 2 and argv[1] == '--self-test':
        return self_test()
    if len(argv) < 2:
        print('usage: check_links.py ROOT [PATH...] | --self-test', file=sys.stderr)
        return 2
    paths = argv[2:] or ['doc', 'man', 'README.md']
    if self_test() != 0:  # a checker that finds nothing proves nothing
        return 1
    errors = Checker(argv[1]).run(paths)
    for e in errors:
        print('FAIL: ' + e, file=sys.stderr)
    if errors:
        return 1
    print('every link and citation in %s leads somewhere' % ' '.join(paths))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
