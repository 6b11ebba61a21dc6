/*
 * buf.c: growable byte buffers, growable arrays and the monotonic clock helper.
 */
#include "buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int mafsbx_buf_reserve(struct mafsbx_buf *b, size_t extra)
{
	if (extra > SIZE_MAX - b->len - 1)
		return -ENOMEM;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	char *p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int mafsbx_buf_append(struct mafsbx_buf *b, const void *p, size_t n)
{
	int r = mafsbx_buf_reserve(b, n);
	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int mafsbx_buf_puts(struct mafsbx_buf *b, const char *s)
{
	return mafsbx_buf_append(b, s, strlen(s));
}

int mafsbx_buf_printf(struct mafsbx_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	int r = mafsbx_buf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void mafsbx_buf_reset(struct mafsbx_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void mafsbx_buf_free(struct mafsbx_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

char *mafsbx_buf_steal(struct mafsbx_buf *b, size_t *len)
{
	if (!b->data && mafsbx_buf_reserve(b, 0) < 0)
		return NULL;
	b->data[b->len] = '\0';
	char *p = b->data;
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

int mafsbx_array_grow(void *arrp, size_t *cap, size_t need, size_t size, size_t first, size_t max)
{
	if (need <= *cap)
		return 0;
	if (!size || (max && need > max))
		return -ENOMEM;
	size_t limit = SIZE_MAX / size;
	if (max && max < limit)
		limit = max;
	if (need > limit)
		return -ENOMEM;
	size_t nc = *cap ? *cap : (first ? first : 1);
	while (nc < need)
		nc = nc > limit / 2 ? limit : nc * 2;
	if (nc > limit)
		nc = limit;
	void *old;
	memcpy(&old, arrp, sizeof(old));
	void *p = realloc(old, nc * size);
	if (!p)
		return -ENOMEM;
	memcpy(arrp, &p, sizeof(p));
	*cap = nc;
	return 0;
}

long long mafsbx_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec mafsbx_monotonic_after_ms(long long ms)
{
	return mafsbx_clock_after_ms(CLOCK_MONOTONIC, ms);
}

void mafsbx_cond_init_monotonic(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
}

struct timespec mafsbx_clock_after_ms(clockid_t clock, long long ms)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	if (ms > 0) {
		ts.tv_sec += ms / 1000;
		ts.tv_nsec += (ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
	}
	return ts;
}
