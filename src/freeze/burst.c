/*
 * burst.c: one freeze for a burst of file calls (burst.h).
 *
 * A slot per container counts the calls inside the container's freeze
 * (`inside`), may hold one more handle of that freeze (`parked`), and keeps
 * the HEAD answers got under it. The answers are dropped whenever both are
 * zero: from then on nothing of this registry holds the freeze, so the guest
 * may run before the next call. While either is non-zero the freeze cannot
 * end (freeze.h: the last handle out unpauses), so every kept answer was got
 * under the freeze in force.
 *
 * Lock order: `mu` is taken alone; the freezer is called (enter, leave)
 * only with `mu` released.
 */
#include "burst.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "log.h"

struct answer {
	char *path;
	struct mafsbx_burst_answer a;
};

struct slot {
	struct slot *next;
	char *container;
	unsigned pins;                 /* calls between enter() and leave(), waiting or inside */
	unsigned inside;               /* calls holding the freeze */
	struct mafsbx_freeze *parked;  /* the handle kept after the last call left */
	long long since_ms;            /* when this registry's unbroken hold began */
	long long idle_ms;             /* when the last call left */
	long long hold_ms;             /* this hold's linger when a call asked for more (0: the registry's) */
	struct answer *v;
	size_t n, cap;
};

struct mafsbx_bursts {
	struct mafsbx_freezer *fz;
	long long linger_ms;
	pthread_mutex_t mu;            /* guards everything below */
	pthread_cond_t cv;             /* wakes the timer (CLOCK_MONOTONIC) */
	pthread_t timer;
	bool stop;
	struct slot *slots;
	struct mafsbx_burst_stats stats;
};

struct mafsbx_burst {
	struct mafsbx_bursts *bs;
	struct slot *s;
	struct mafsbx_freeze *fr;
};

static void answers_drop(struct slot *s)
{
	s->hold_ms = 0; /* asked for the answers dropped here */
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].path);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

/* With `mu` held: take the parked handle (the caller leaves it, unlocked). */
static struct mafsbx_freeze *unpark(struct slot *s)
{
	struct mafsbx_freeze *p = s->parked;
	s->parked = NULL;
	if (!s->inside)
		answers_drop(s);
	return p;
}

static struct slot *slot_find(struct mafsbx_bursts *bs, const char *container)
{
	for (struct slot *s = bs->slots; s; s = s->next)
		if (strcmp(s->container, container) == 0)
			return s;
	return NULL;
}

/* With `mu` held: free `s` when nothing refers to it. */
static void slot_maybe_free(struct mafsbx_bursts *bs, struct slot *s)
{
	if (s->pins || s->parked)
		return;
	for (struct slot **pp = &bs->slots; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	answers_drop(s);
	free(s->container);
	free(s);
}

static long long linger_of(const struct mafsbx_bursts *bs, const struct slot *s)
{
	return s->hold_ms > bs->linger_ms ? s->hold_ms : bs->linger_ms;
}

static bool parked_expired(const struct mafsbx_bursts *bs, const struct slot *s, long long now)
{
	return now - s->since_ms >= MAFSBX_FREEZE_JOIN_WINDOW_MS || (!s->inside && now - s->idle_ms >= linger_of(bs, s));
}

static long long parked_expiry(const struct mafsbx_bursts *bs, const struct slot *s)
{
	long long a = s->since_ms + MAFSBX_FREEZE_JOIN_WINDOW_MS, b = s->idle_ms + linger_of(bs, s);
	return s->inside || a < b ? a : b;
}

static void *timer_main(void *arg)
{
	struct mafsbx_bursts *bs = arg;
	pthread_mutex_lock(&bs->mu);
	while (!bs->stop) {
		long long now = mafsbx_now_ms(), next = now + 1000;
		struct mafsbx_freeze *drop = NULL;
		for (struct slot *s = bs->slots; s; s = s->next) {
			if (!s->parked)
				continue;
			if (parked_expired(bs, s, now)) {
				drop = unpark(s);
				slot_maybe_free(bs, s); /* may free s: leave the walk now */
				break;
			}
			if (parked_expiry(bs, s) < next)
				next = parked_expiry(bs, s);
		}
		if (drop) {
			pthread_mutex_unlock(&bs->mu);
			mafsbx_freeze_leave(drop);
			pthread_mutex_lock(&bs->mu);
			continue;
		}
		struct timespec ts = mafsbx_monotonic_after_ms(next - now);
		pthread_cond_timedwait(&bs->cv, &bs->mu, &ts);
	}
	pthread_mutex_unlock(&bs->mu);
	return NULL;
}

struct mafsbx_bursts *mafsbx_bursts_new(struct mafsbx_freezer *fz, int linger_ms, struct mafsbx_error *err)
{
	if (linger_ms < 1 || linger_ms > MAFSBX_BURST_LINGER_MAX_MS) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "burst linger %d ms: give 1 to %d", linger_ms,
				 MAFSBX_BURST_LINGER_MAX_MS);
		return NULL;
	}
	struct mafsbx_bursts *bs = calloc(1, sizeof(*bs));
	if (!bs) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	bs->fz = fz;
	bs->linger_ms = linger_ms;
	pthread_mutex_init(&bs->mu, NULL);
	mafsbx_cond_init_monotonic(&bs->cv);
	int r = pthread_create(&bs->timer, NULL, timer_main, bs);
	if (r != 0) {
		mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, r, NULL, "cannot start the freeze burst timer: %s",
				      strerror(r));
		pthread_cond_destroy(&bs->cv);
		pthread_mutex_destroy(&bs->mu);
		free(bs);
		return NULL;
	}
	return bs;
}

void mafsbx_bursts_free(struct mafsbx_bursts *bs)
{
	if (!bs)
		return;
	pthread_mutex_lock(&bs->mu);
	bs->stop = true;
	pthread_cond_broadcast(&bs->cv);
	pthread_mutex_unlock(&bs->mu);
	pthread_join(bs->timer, NULL);
	while (bs->slots) {
		struct slot *s = bs->slots;
		if (s->pins)
			log_warn("bursts: %u file call(s) of %.12s still inside at teardown", s->pins, s->container);
		mafsbx_freeze_leave(unpark(s));
		s->pins = 0;
		slot_maybe_free(bs, s);
	}
	pthread_cond_destroy(&bs->cv);
	pthread_mutex_destroy(&bs->mu);
	free(bs);
}

/* With `mu` held: the slot of `container`, made if needed, pinned. NULL: out of memory. */
static struct slot *slot_pin(struct mafsbx_bursts *bs, const char *container)
{
	struct slot *s = slot_find(bs, container);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || !(s->container = strdup(container))) {
			free(s);
			return NULL;
		}
		s->next = bs->slots;
		bs->slots = s;
	}
	s->pins++;
	return s;
}

int mafsbx_burst_enter(struct mafsbx_bursts *bs, const char *container, long long deadline_ms,
		       struct mafsbx_burst **out, struct mafsbx_error *err)
{
	*out = NULL;
	struct mafsbx_burst *b = calloc(1, sizeof(*b));
	pthread_mutex_lock(&bs->mu);
	struct slot *s = b ? slot_pin(bs, container) : NULL;
	if (!s) {
		pthread_mutex_unlock(&bs->mu);
		free(b);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	bs->stats.enters++;
	/* an old parked freeze is let go first: the freezer would make us wait for its drain */
	struct mafsbx_freeze *drop = s->parked && parked_expired(bs, s, mafsbx_now_ms()) ? unpark(s) : NULL;
	if (s->parked)
		bs->stats.rejoins++;
	pthread_mutex_unlock(&bs->mu);
	mafsbx_freeze_leave(drop);

	int r = mafsbx_freeze_enter(bs->fz, container, deadline_ms, &b->fr, err);
	pthread_mutex_lock(&bs->mu);
	if (r < 0) {
		s->pins--;
		slot_maybe_free(bs, s);
		pthread_mutex_unlock(&bs->mu);
		free(b);
		return r;
	}
	if (!s->inside++ && !s->parked) {
		/* the registry's hold starts now: nothing kept can be from before */
		answers_drop(s);
		s->since_ms = mafsbx_now_ms();
		bs->stats.bursts++;
	}
	pthread_mutex_unlock(&bs->mu);
	b->bs = bs;
	b->s = s;
	*out = b;
	return 0;
}

struct mafsbx_freeze *mafsbx_burst_freeze(const struct mafsbx_burst *b)
{
	return b->fr;
}

bool mafsbx_burst_get(struct mafsbx_burst *b, const char *path, struct mafsbx_burst_answer *out)
{
	bool found = false;
	pthread_mutex_lock(&b->bs->mu);
	for (size_t i = 0; i < b->s->n; i++) {
		if (strcmp(b->s->v[i].path, path) == 0) {
			*out = b->s->v[i].a;
			found = true;
			break;
		}
	}
	if (found)
		b->bs->stats.hits++;
	else
		b->bs->stats.misses++;
	pthread_mutex_unlock(&b->bs->mu);
	return found;
}

void mafsbx_burst_put(struct mafsbx_burst *b, const char *path, const struct mafsbx_burst_answer *a)
{
	struct slot *s = b->s;
	pthread_mutex_lock(&b->bs->mu);
	for (size_t i = 0; i < s->n; i++) {
		if (strcmp(s->v[i].path, path) == 0) {
			s->v[i].a = *a;
			goto out;
		}
	}
	if (s->n == MAFSBX_BURST_MAX_ANSWERS)
		goto out;
	if (mafsbx_array_grow(&s->v, &s->cap, s->n + 1, sizeof(*s->v), 8, 0) < 0)
		goto out;
	if ((s->v[s->n].path = strdup(path)) != NULL) {
		s->v[s->n].a = *a;
		s->n++;
	}
out:
	pthread_mutex_unlock(&b->bs->mu);
}

void mafsbx_burst_invalidate(struct mafsbx_burst *b)
{
	pthread_mutex_lock(&b->bs->mu);
	answers_drop(b->s);
	b->bs->stats.invalidations++;
	pthread_mutex_unlock(&b->bs->mu);
}

void mafsbx_burst_leave(struct mafsbx_burst *b)
{
	if (!b)
		return;
	struct mafsbx_bursts *bs = b->bs;
	struct slot *s = b->s;
	struct mafsbx_freeze *fr = b->fr;
	free(b);
	long long now = mafsbx_now_ms();
	pthread_mutex_lock(&bs->mu);
	s->pins--;
	if (--s->inside == 0) {
		s->idle_ms = now;
		if (!s->parked && now - s->since_ms < MAFSBX_FREEZE_JOIN_WINDOW_MS) {
			s->parked = fr;
			fr = NULL;
			bs->stats.parks++;
			pthread_cond_broadcast(&bs->cv);
		} else if (!s->parked) {
			answers_drop(s);
		}
	}
	slot_maybe_free(bs, s);
	pthread_mutex_unlock(&bs->mu);
	mafsbx_freeze_leave(fr);
}

void mafsbx_bursts_end(struct mafsbx_bursts *bs, const char *container)
{
	if (!bs || !container)
		return;
	pthread_mutex_lock(&bs->mu);
	struct slot *s = slot_find(bs, container);
	struct mafsbx_freeze *drop = NULL;
	if (s && s->parked) {
		drop = unpark(s);
		slot_maybe_free(bs, s);
	}
	pthread_mutex_unlock(&bs->mu);
	mafsbx_freeze_leave(drop);
}

void mafsbx_bursts_stats(struct mafsbx_bursts *bs, struct mafsbx_burst_stats *out)
{
	pthread_mutex_lock(&bs->mu);
	*out = bs->stats;
	pthread_mutex_unlock(&bs->mu);
}

void mafsbx_burst_hold_for(struct mafsbx_burst *b, int ms)
{
	if (!b || ms <= 0)
		return;
	if (ms > MAFSBX_BURST_LINGER_MAX_MS)
		ms = MAFSBX_BURST_LINGER_MAX_MS;
	pthread_mutex_lock(&b->bs->mu);
	if (ms > b->s->hold_ms)
		b->s->hold_ms = ms;
	pthread_mutex_unlock(&b->bs->mu);
}
