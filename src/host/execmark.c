/*
 * execmark.c: the rule that says which of a container's processes are one
 * exec's (execmark.h), and the readers of the texts it is decided from: the
 * environment block (is the exec's marker there), /proc/PID/stat (parent,
 * start time). Pure: execkill.c reads /proc, proves each process is the
 * container's and signals; this file only decides, so the rule is tested
 * on its own (tests/unit/test_execmark.c).
 *
 * Why the start time: a process that existed before the exec's root cannot
 * be the exec's, so neither the init, nor the main process an init such as
 * docker-init runs, nor an earlier exec's processes are ever chosen, even
 * when they carry the marker (a guest can write any environment).
 */
#include "execmark.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

bool mafsbx_exec_mark_valid(const char *value)
{
	size_t n = value ? strlen(value) : 0;
	return n >= MAFSBX_EXEC_MARK_MIN && n <= MAFSBX_EXEC_MARK_MAX && strspn(value, "0123456789abcdef") == n;
}

int mafsbx_exec_mark_new(char out[MAFSBX_EXEC_MARK_MAX + 1])
{
	unsigned char b[16];
	ssize_t got;
	while ((got = getrandom(b, sizeof(b), 0)) < 0 && errno == EINTR)
		;
	if (got != (ssize_t)sizeof(b))
		return got < 0 ? -errno : -EIO;
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

void mafsbx_environ_match_init(struct mafsbx_environ_match *m, const char *entry)
{
	*m = (struct mafsbx_environ_match){ .entry = entry, .len = strlen(entry), .alive = true };
}

void mafsbx_environ_match_feed(struct mafsbx_environ_match *m, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = buf[i];
		if (c == '\0') {   /* an entry ends: it matched if all of `entry` and nothing more was seen */
			if (m->alive && m->len && m->pos == m->len)
				m->found = true;
			m->alive = true;
			m->pos = 0;
		} else if (m->alive) {
			if (m->pos < m->len && c == m->entry[m->pos])
				m->pos++;
			else
				m->alive = false;
		}
	}
}

bool mafsbx_environ_match_end(struct mafsbx_environ_match *m)
{
	if (m->alive && m->len && m->pos == m->len)
		m->found = true;
	m->alive = true;
	m->pos = 0;
	return m->found;
}

int mafsbx_environ_mark(const char *buf, size_t n, char out[MAFSBX_EXEC_MARK_MAX + 1])
{
	static const char key[] = MAFSBX_EXEC_MARK_ENV "=";
	const size_t kl = sizeof(key) - 1;
	size_t at = 0;
	while (at < n) {
		const char *nul = memchr(buf + at, '\0', n - at);
		size_t len = nul ? (size_t)(nul - (buf + at)) : n - at;
		if (len >= kl && memcmp(buf + at, key, kl) == 0) {
			size_t vl = len - kl;
			if (vl > MAFSBX_EXEC_MARK_MAX)
				return -ENOENT;
			memcpy(out, buf + at + kl, vl);
			out[vl] = '\0';
			return mafsbx_exec_mark_valid(out) ? 0 : -ENOENT;
		}
		at += len + 1;
	}
	return -ENOENT;
}

int mafsbx_proc_stat_fields(const char *text, size_t n, long *ppid, unsigned long long *start)
{
	const char *rp = NULL;
	for (size_t i = n; i > 0; i--)
		if (text[i - 1] == ')') {
			rp = text + i;
			break;
		}
	size_t rest = rp ? n - (size_t)(rp - text) : 0;
	if (!rp || rest == 0 || rest >= 1024)
		return -EINVAL;
	char tail[1024];
	memcpy(tail, rp, rest);
	tail[rest] = '\0';
	/* state, ppid, then fields 5 to 21, then starttime */
	if (sscanf(tail, " %*c %ld %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu", ppid,
		   start) != 2)
		return -EINVAL;
	return 0;
}

enum { S_DEPENDS, S_VISITING, S_YES, S_NO };

static int by_pid(const void *a, const void *b)
{
	long x = ((const struct mafsbx_tree_proc *)a)->pid, y = ((const struct mafsbx_tree_proc *)b)->pid;
	return (x > y) - (x < y);
}

static struct mafsbx_tree_proc *find_pid(struct mafsbx_tree_proc *p, size_t n, long pid)
{
	struct mafsbx_tree_proc key = { .pid = pid };
	return bsearch(&key, p, n, sizeof(*p), by_pid);
}

/* What a process is by itself: never the exec's, surely the exec's, or as its parent is. */
static unsigned char own_state(const struct mafsbx_tree_proc *q, const struct mafsbx_tree_rule *r)
{
	if (q->pid <= 1 || q->pid == r->init_pid || q->start < r->root_start)
		return S_NO;
	if (q->pid == r->root_pid || q->marked || q->member)
		return S_YES;
	return S_DEPENDS;
}

long mafsbx_tree_select(struct mafsbx_tree_proc *p, size_t n, const struct mafsbx_tree_rule *rule)
{
	if (n == 0)
		return 0;
	size_t *path = malloc(n * sizeof(*path));
	if (!path)
		return -ENOMEM;
	qsort(p, n, sizeof(*p), by_pid);
	for (size_t i = 0; i < n; i++)
		p[i].state = own_state(&p[i], rule);
	/* Each undecided process walks up its parents until one is decided; the
	 * whole walk takes that verdict, so every process is walked once. A
	 * parent outside the list (the runtime's shim, a host process) or a
	 * loop (PIDs recycled between two reads) decides no. */
	for (size_t i = 0; i < n; i++) {
		size_t depth = 0, cur = i;
		unsigned char verdict;
		for (;;) {
			if (p[cur].state == S_YES || p[cur].state == S_NO) {
				verdict = p[cur].state;
				break;
			}
			if (p[cur].state == S_VISITING) {
				verdict = S_NO;
				break;
			}
			p[cur].state = S_VISITING;
			path[depth++] = cur;
			struct mafsbx_tree_proc *parent = find_pid(p, n, p[cur].ppid);
			if (!parent) {
				verdict = S_NO;
				break;
			}
			cur = (size_t)(parent - p);
		}
		while (depth)
			p[path[--depth]].state = verdict;
	}
	free(path);
	long chosen = 0;
	for (size_t i = 0; i < n; i++) {
		p[i].chosen = p[i].state == S_YES;
		chosen += p[i].chosen;
	}
	return chosen;
}
