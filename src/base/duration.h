/*
 * duration.h: the time arithmetic of `mafsbx reap` and `mafsbx ls`.
 *
 * DURATION text ("90s", "30m", "24h", "7d", "1h30m"), engine timestamps
 * (RFC 3339 / ISO-8601 with a zone, nanoseconds allowed, as containers and
 * networks report `Created`), and a short human age ("3d4h"). Pure code, no
 * engine, no clock.
 */
#ifndef MAFSBX_DURATION_H
#define MAFSBX_DURATION_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/*
 * Parse a DURATION into whole seconds: one or more <digits><unit> groups,
 * unit one of d (86400 s), h, m, s, each unit at most once and largest first
 * ("1d12h", "1h30m", "90s"; "30m1h" and "1h1h" are refused). No sign, no
 * spaces, no fraction. The total must be greater than zero and fit in
 * int64 seconds. Errors are EK_INVALID with a message naming the problem
 * and quoting the text. Returns 0 or -EINVAL.
 */
int mafsbx_duration_parse(const char *text, int64_t *seconds, struct mafsbx_error *err);

/* A point in time: seconds since the Unix epoch (UTC, may be negative) and nanoseconds 0..999999999. */
struct mafsbx_time {
	int64_t sec;
	int32_t nsec;
};

/*
 * Parse an ISO-8601 / RFC 3339 date-time with a zone:
 * YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM|+HHMM|-HHMM), the fraction 1..9
 * digits, 'T' and 'Z' also in lower case (RFC 3339 5.6), years 0001..9999
 * (Go's zero time 0001-01-01T00:00:00Z included). The one time parser of the
 * tree: engine timestamps (`Created`, an archive stat's mtime, /info's
 * SystemTime) all come through it. A missing zone, an out-of-range field or
 * trailing text is EK_INVALID (err may be NULL). Returns 0 or -EINVAL.
 */
int mafsbx_time_parse(const char *text, struct mafsbx_time *out, struct mafsbx_error *err);

/* -1, 0 or 1. */
int mafsbx_time_cmp(struct mafsbx_time a, struct mafsbx_time b);

/*
 * a - seconds, or the earliest representable time when that would overflow
 * (a cutoff that far back keeps everything, as upstream's datetime.min).
 */
struct mafsbx_time mafsbx_time_sub_clamped(struct mafsbx_time a, int64_t seconds);

/* Format as "YYYY-MM-DDTHH:MM:SSZ" (UTC, whole seconds). `out` needs 32 bytes. */
void mafsbx_time_format(struct mafsbx_time t, char out[32]);

/*
 * A short age: the two largest non-zero units of d/h/m/s ("3d4h", "5m12s",
 * "0s"); a negative value (a clock ahead of ours) is shown as "0s".
 * `out` needs 32 bytes.
 */
void mafsbx_duration_format(int64_t seconds, char out[32]);

#endif
