/*
 * buf.h: a growable byte buffer (always NUL-terminated for convenience) and
 * small allocation helpers used across the library.
 */
#ifndef MAFSBX_BUF_H
#define MAFSBX_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>
#include <jansson.h>

struct mafsbx_buf {
	char *data;   /* NULL until the first append; data[len] == '\0' after any append */
	size_t len;
	size_t cap;
};

#define MAFSBX_BUF_INIT { NULL, 0, 0 }

/* 0 or -ENOMEM. */
int mafsbx_buf_reserve(struct mafsbx_buf *b, size_t extra);
int mafsbx_buf_append(struct mafsbx_buf *b, const void *p, size_t n);
int mafsbx_buf_puts(struct mafsbx_buf *b, const char *s);
int mafsbx_buf_printf(struct mafsbx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mafsbx_buf_reset(struct mafsbx_buf *b);  /* len = 0, keeps memory */
void mafsbx_buf_free(struct mafsbx_buf *b);
/* Hand the memory to the caller (never NULL on success: "" for empty); the buffer is reset. */
char *mafsbx_buf_steal(struct mafsbx_buf *b, size_t *len);

/*
 * Room for at least `need` elements of `size` bytes in the array *arrp (any
 * object pointer, passed by address) whose capacity, in elements, is *cap:
 * the capacity doubles from `first` until it holds `need`, clamped to `max`
 * elements (0: no bound; a `need` over `max` is refused). 0, or -ENOMEM
 * when the memory cannot be had: realloc failed, or the size in bytes does
 * not fit a size_t (never a wrapped size). On failure *arrp and *cap are as
 * they were.
 */
int mafsbx_array_grow(void *arrp, size_t *cap, size_t need, size_t size, size_t first, size_t max);

/*
 * Cleanup helpers in the lxcfs style: a variable so declared is released
 * when it goes out of scope, so an early return cannot leak it. Hand it on
 * with move_ptr/move_fd (below). __do_buf frees a struct mafsbx_buf,
 * __do_json drops one reference of a json_t (NULL is fine), __do_closedir
 * closes a DIR (and the fd fdopendir took).
 */
static inline void mafsbx_freep(void *p) { free(*(void **)p); }
static inline void mafsbx_closep(int *fd) { if (*fd >= 0) close(*fd); }
static inline void mafsbx_json_decrefp(json_t **j) { json_decref(*j); }
static inline void mafsbx_closedirp(DIR **d) { if (*d) closedir(*d); }
#define __do_free __attribute__((cleanup(mafsbx_freep)))
#define __do_close __attribute__((cleanup(mafsbx_closep)))
#define __do_buf __attribute__((cleanup(mafsbx_buf_free)))
#define __do_json __attribute__((cleanup(mafsbx_json_decrefp)))
#define __do_closedir __attribute__((cleanup(mafsbx_closedirp)))

/* Move a pointer out of a cleanup-owned variable. */
#define move_ptr(p) ({ __typeof__(p) __tmp = (p); (p) = NULL; __tmp; })
#define move_fd(fd) ({ int __tmp = (fd); (fd) = -1; __tmp; })

#define MAFSBX_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Monotonic clock in milliseconds. */
long long mafsbx_now_ms(void);
/* CLOCK_MONOTONIC `ms` from now (<= 0: now), for pthread_cond_timedwait on a CLOCK_MONOTONIC condvar. */
struct timespec mafsbx_monotonic_after_ms(long long ms);
/* `clock` `ms` from now (<= 0: now): CLOCK_REALTIME for pthread_mutex_timedlock. */
struct timespec mafsbx_clock_after_ms(clockid_t clock, long long ms);
/* pthread_cond_init of a condition variable whose timed waits take CLOCK_MONOTONIC
 * deadlines (mafsbx_monotonic_after_ms), so a jump of the wall clock moves none. */
void mafsbx_cond_init_monotonic(pthread_cond_t *cv);

#endif
