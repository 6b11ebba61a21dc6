/*
 * engine_internal.h: what engine.c (the handle, the request plumbing) shares
 * with the per-resource calls of engine_*.c. Not part of engine.h's API.
 */
#ifndef MAFSBX_ENGINE_INTERNAL_H
#define MAFSBX_ENGINE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "engine.h"
#include "http.h"

/* An engine answer freed when its variable goes out of scope. */
#define __do_resp __attribute__((cleanup(mafsbx_http_resp_free)))

struct mafsbx_engine {
	struct mafsbx_endpoint ep;
	struct mafsbx_engine_timeouts to;
	struct mafsbx_http *http;
	pthread_mutex_t mu;
	bool negotiated;
	char prefix[24];         /* "/v1.41" */
	int podman;              /* the engine is Podman (its /version): 1, 0, -1 not known yet */
	long transient_retry_ms; /* a swarm manager's election answers retried this long (engine_retry.c) */
};

/*
 * One call with a buffered answer. Statuses in `ok` (0-terminated) are
 * success; anything else is mapped with the engine's message. On success
 * with `out`, the body is parsed as JSON (`out` a new reference).
 */
struct call {
	const char *method;
	const char *target;
	const char *ctype;
	const void *body;
	size_t body_len;
	long timeout_ms;
	const char *what;        /* "inspect container x" */
	const char *path;        /* guest path the answer may name, or NULL */
	long ok[4];
	json_t **out;
	long *status_out;
	bool past_end;           /* may run past the end deadline (an unpause: mafsbx_http_end_by) */
};

/* The JSON type an answer must have. */
enum answer { ANSWER_ANY, ANSWER_OBJECT, ANSWER_ARRAY };

/*
 * A call on one named object (container, network, image), the sequence every
 * object call shares: `what` is "<verb> <ref>" unless the caller wrote its
 * own; the reference is checked (an image reference when `image`) and
 * escaped into the target "<head><ref><tail>"; the call is made and the
 * answer's JSON type checked. A missing image is EK_NO_IMAGE.
 */
struct obj_call {
	const char *verb;        /* "inspect container" */
	const char *ref;
	bool image;
	const char *head;        /* "/containers/" */
	const char *tail;        /* "/json", "?force=1", or NULL */
	struct call c;           /* method, body, ok, out, ...; target and what are filled in */
	enum answer want;
	char what[600];
};

/* An RFC 3339 text (duration.c parses it) as a timespec; 0, or -1 when it is not one. */
int mafsbx_eng_parse_rfc3339(const char *s, struct timespec *ts);

/* The sink of a multiplexed stream: feeds `ctx`, a struct mafsbx_demux. */
int mafsbx_eng_demux_sink(const void *data, size_t len, void *ctx);

/* A container, network or exec reference, which goes into one path segment. */
int mafsbx_eng_check_ref(const char *ref, const char *what, struct mafsbx_error *err);
int mafsbx_eng_check_image_ref(const char *ref, const char *what, struct mafsbx_error *err);

/* "<prefix><fmt>" malloc'd (every %s escaped by the caller), or NULL with *r set. */
__attribute__((format(printf, 4, 5)))
char *mafsbx_eng_target(struct mafsbx_engine *e, struct mafsbx_error *err, int *r, const char *fmt, ...);

int mafsbx_eng_nomem(struct mafsbx_error *err);
char *mafsbx_eng_dump_json(const json_t *j);
int mafsbx_eng_copy_id(json_t *j, char id[65], const char *what, struct mafsbx_error *err);
int mafsbx_eng_check_answer(json_t **out, enum answer want, const char *what, struct mafsbx_error *err);

int mafsbx_eng_do_call(struct mafsbx_engine *e, const struct call *c, struct mafsbx_error *err);
/* engine_retry.c: an answer a swarm manager gives while it has no leader (retried, bounded). */
bool mafsbx_eng_transient(const struct mafsbx_error *err);
/* engine_retry.c: the error after the bound: ENOTCONN naming the manager's last answer. */
/* engine_retry.c: logs how long an answer waited out an election (since `start_ms`). */
void mafsbx_eng_transient_waited(const struct mafsbx_engine *e, const char *what, long long start_ms, int r);
int mafsbx_eng_transient_give_up(const struct mafsbx_engine *e, struct mafsbx_error *err);
char *mafsbx_eng_obj_target(struct mafsbx_engine *e, struct obj_call *o, int *r, struct mafsbx_error *err);
int mafsbx_eng_obj_call(struct mafsbx_engine *e, struct obj_call *o, struct mafsbx_error *err);
int mafsbx_eng_get_json(struct mafsbx_engine *e, const char *path, long timeout_ms, const char *what, json_t **out,
	     struct mafsbx_error *err);
int mafsbx_eng_create_call(struct mafsbx_engine *e, const char *t, const char *body, const char *what, long ok1, long ok2,
		char id[65], struct mafsbx_error *err);
/* Run `once` (engine.c), asked again with backoff while it fails with a
 * swarm manager's transient 5xx, up to the handle's bound (engine_retry.c);
 * once at all on a handle without transient_retry_ms. */
typedef int (*mafsbx_eng_once_fn)(struct mafsbx_engine *e, const void *arg, struct mafsbx_error *err);
int mafsbx_eng_retrying(struct mafsbx_engine *e, const char *what, mafsbx_eng_once_fn once, const void *arg,
		       struct mafsbx_error *err);
/* GET `t` (a target of mafsbx_eng_target), a JSON array streamed element by
 * element to `each` (listreader.h; `keep`: the members kept, NULL: all).
 * A 5xx answer feeds nothing, so it may be asked again (mafsbx_eng_retrying). */
int mafsbx_eng_list_stream(struct mafsbx_engine *e, const char *t, const char *what, const char *const *keep,
			   mafsbx_list_each_fn each, void *ctx, struct mafsbx_error *err);
int mafsbx_eng_list_call(struct mafsbx_engine *e, const char *path, const json_t *filters, bool all, const char *what,
	      json_t **out, struct mafsbx_error *err);

#endif
