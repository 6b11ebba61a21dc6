/*
 * listsnap.c: a directory listing's answers kept past its freeze
 * (listsnap.h).
 *
 * A snapshot is one listing: its container, the moment it was kept, the
 * freezer's exec count when it began, and its answers sorted by path (a
 * stat looks one up by bisection). The registry is a short list of them
 * (at most MAFSBX_LISTSNAP_MAX), a generation that every mutation moves,
 * and the counters. Expired snapshots are dropped whenever the list is
 * walked, so nothing outlives its validity by more than the next call.
 */
#include "listsnap.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

struct snap_answer {
	char *path;
	struct mafsbx_listsnap_stat st;
};

struct mafsbx_listsnap {
	struct mafsbx_listsnap *next;
	char *container;
	uint64_t gen;            /* the registry's generation at begin() */
	uint64_t epoch;          /* the freezer's exec count at begin() */
	long long kept_ms;       /* when committed: the validity runs from here */
	struct snap_answer *v;
	size_t n, cap, bytes;
};

struct mafsbx_listsnaps {
	pthread_mutex_t mu;      /* guards everything below */
	long long valid_ms;
	uint64_t gen;
	struct mafsbx_listsnap *list;
	size_t count;
	struct mafsbx_listsnap_stats stats;
};

struct mafsbx_listsnaps *mafsbx_listsnaps_new(struct mafsbx_error *err)
{
	struct mafsbx_listsnaps *s = calloc(1, sizeof(*s));
	if (!s) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	s->valid_ms = MAFSBX_LISTSNAP_VALID_MS;
#ifdef MAFSBX_TEST_KNOBS
	const char *v = getenv(MAFSBX_LISTSNAP_VALID_ENV);
	if (v && atoll(v) > 0)
		s->valid_ms = atoll(v);
#endif
	pthread_mutex_init(&s->mu, NULL);
	return s;
}

void mafsbx_listsnap_discard(struct mafsbx_listsnap *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i].path);
	free(b->v);
	free(b->container);
	free(b);
}

void mafsbx_listsnaps_free(struct mafsbx_listsnaps *s)
{
	if (!s)
		return;
	while (s->list) {
		struct mafsbx_listsnap *b = s->list;
		s->list = b->next;
		mafsbx_listsnap_discard(b);
	}
	pthread_mutex_destroy(&s->mu);
	free(s);
}

long long mafsbx_listsnaps_valid_ms(const struct mafsbx_listsnaps *s)
{
	return s->valid_ms;
}

struct mafsbx_listsnap *mafsbx_listsnap_begin(struct mafsbx_listsnaps *s, const char *container, uint64_t epoch)
{
	struct mafsbx_listsnap *b = calloc(1, sizeof(*b));
	if (!b || !(b->container = strdup(container))) {
		free(b);
		return NULL;
	}
	b->epoch = epoch;
	pthread_mutex_lock(&s->mu);
	b->gen = s->gen;
	pthread_mutex_unlock(&s->mu);
	return b;
}

void mafsbx_listsnap_add(struct mafsbx_listsnap *b, const char *path, const struct mafsbx_listsnap_stat *st)
{
	size_t len = strlen(path) + 1;
	if (!b || b->n == MAFSBX_LISTSNAP_MAX_ENTRIES || b->bytes + len > MAFSBX_LISTSNAP_MAX_BYTES)
		return;
	if (mafsbx_array_grow(&b->v, &b->cap, b->n + 1, sizeof(*b->v), 32, MAFSBX_LISTSNAP_MAX_ENTRIES) < 0)
		return;
	if (!(b->v[b->n].path = strdup(path)))
		return;
	b->v[b->n].st = *st;
	b->n++;
	b->bytes += len;
}

static int cmp_answer(const void *a, const void *b)
{
	return strcmp(((const struct snap_answer *)a)->path, ((const struct snap_answer *)b)->path);
}

/* With `mu` held: unlink and free the snapshots `drop` says go. */
static void sweep(struct mafsbx_listsnaps *s, bool (*drop)(const struct mafsbx_listsnap *, const void *),
		  const void *arg)
{
	for (struct mafsbx_listsnap **pp = &s->list; *pp;) {
		struct mafsbx_listsnap *b = *pp;
		if (!drop(b, arg)) {
			pp = &b->next;
			continue;
		}
		*pp = b->next;
		s->count--;
		mafsbx_listsnap_discard(b);
	}
}

struct expiry {
	long long now, valid_ms;
};

static bool expired(const struct mafsbx_listsnap *b, const void *arg)
{
	const struct expiry *x = arg;
	return x->now - b->kept_ms >= x->valid_ms;
}

static bool of_container(const struct mafsbx_listsnap *b, const void *arg)
{
	return strcmp(b->container, arg) == 0;
}

bool mafsbx_listsnap_commit(struct mafsbx_listsnaps *s, struct mafsbx_listsnap *b)
{
	if (!b)
		return false;
	if (b->n > 1)
		qsort(b->v, b->n, sizeof(*b->v), cmp_answer);
	pthread_mutex_lock(&s->mu);
	bool keep = b->gen == s->gen && b->n > 0;
	if (!keep) {
		s->stats.refused++;
		pthread_mutex_unlock(&s->mu);
		mafsbx_listsnap_discard(b);
		return false;
	}
	struct expiry x = { mafsbx_now_ms(), s->valid_ms };
	sweep(s, expired, &x);
	/* full: the oldest goes (the list is newest first) */
	if (s->count == MAFSBX_LISTSNAP_MAX) {
		struct mafsbx_listsnap **pp = &s->list;
		while ((*pp)->next)
			pp = &(*pp)->next;
		mafsbx_listsnap_discard(*pp);
		*pp = NULL;
		s->count--;
	}
	b->kept_ms = x.now;
	b->next = s->list;
	s->list = b;
	s->count++;
	s->stats.kept++;
	pthread_mutex_unlock(&s->mu);
	return true;
}

bool mafsbx_listsnaps_get(struct mafsbx_listsnaps *s, const char *container, const char *path, uint64_t epoch,
			  struct mafsbx_listsnap_stat *out)
{
	bool found = false;
	pthread_mutex_lock(&s->mu);
	struct expiry x = { mafsbx_now_ms(), s->valid_ms };
	sweep(s, expired, &x);
	/* newest first: a later listing of the same directory is the better answer */
	for (struct mafsbx_listsnap *b = s->list; b && !found; b = b->next) {
		if (b->epoch != epoch || strcmp(b->container, container) != 0)
			continue;
		struct snap_answer key = { .path = (char *)path };
		const struct snap_answer *a = bsearch(&key, b->v, b->n, sizeof(*b->v), cmp_answer);
		if (a) {
			*out = a->st;
			found = true;
		}
	}
	if (found)
		s->stats.hits++;
	pthread_mutex_unlock(&s->mu);
	return found;
}

void mafsbx_listsnaps_mutating(struct mafsbx_listsnaps *s, const char *container)
{
	if (!s || !container)
		return;
	pthread_mutex_lock(&s->mu);
	s->gen++;
	size_t before = s->count;
	sweep(s, of_container, container);
	s->stats.drops += before - s->count;
	pthread_mutex_unlock(&s->mu);
}

void mafsbx_listsnaps_stats(struct mafsbx_listsnaps *s, struct mafsbx_listsnap_stats *out)
{
	pthread_mutex_lock(&s->mu);
	*out = s->stats;
	pthread_mutex_unlock(&s->mu);
}
