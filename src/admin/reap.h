/*
 * reap.h: remove sandboxes older than a cutoff, with their egress proxies
 * and networks (`mafsbx reap`), exactly as upstream maf-sandbox-docker's
 * reap (doc/upstream.md §8.6). Works over engine.h
 * alone: no mount, no backend state; the engine's labels are the record.
 *
 * The algorithm, in short: inventory containers then networks by the name
 * prefix and the four identity labels; inspect and validate each; any
 * unreadable inventory deletes nothing; group by sandbox; the age of a group
 * is its workload's, else its proxy's, else its network's; expired iff
 * strictly older than the cutoff; re-inspect each expired group's deciding
 * resource by ID (any failure deletes nothing); remove by ID, proxies then
 * workloads then networks, never forcing a network; a group whose container
 * removal failed or found it gone keeps the rest of its resources.
 */
#ifndef MAFSBX_REAP_H
#define MAFSBX_REAP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "duration.h"
#include "engine.h"
#include "error.h"
#include "names.h"

enum mafsbx_reap_kind {
	MAFSBX_REAP_PROXY = 0,
	MAFSBX_REAP_WORKLOAD = 1,
	MAFSBX_REAP_NETWORK = 2,
};
const char *mafsbx_reap_kind_name(enum mafsbx_reap_kind k);   /* "proxy", "workload", "network" */

/* Points in the run where a test's hook acts (sbx_test_reap_hook, below). */
enum mafsbx_reap_stage {
	MAFSBX_REAP_AFTER_INVENTORY = 1,   /* inventory read and validated, before revalidation */
	MAFSBX_REAP_BEFORE_DELETE = 2,     /* revalidated, before the first removal */
};

/* Removals of one phase (proxies, workloads, networks) made at once, at most. */
#define MAFSBX_REAP_CONCURRENCY 4

struct mafsbx_reap_options {
	int64_t older_than_s;              /* > 0, else EK_INVALID before any engine call */
	const char *scope;                 /* NULL: every scope; else only label_value(scope) */
	bool dry_run;                      /* every read, no removal */
};

#ifdef MAFSBX_TEST_KNOBS
/*
 * Test hooks (NULL unless a test sets them).
 * Compiled only into the test libraries (MAFSBX_TEST_KNOBS, src/meson.build):
 * the shipped CLI has none.
 *
 * sbx_test_reap_now: the clock a reap reads instead of CLOCK_REALTIME, so a
 * test ages its resources without waiting.
 * sbx_test_reap_hook: called at each stage of a run, so a test can act there
 * (a container replaced under the same name, an engine made to fail).
 */
extern const struct mafsbx_time *sbx_test_reap_now;
extern void (*sbx_test_reap_hook)(enum mafsbx_reap_stage stage, void *ctx);
extern void *sbx_test_reap_hook_ctx;
#endif

/* One resource of an expired group: removed, would be removed (dry run), or not. */
enum mafsbx_reap_outcome {
	MAFSBX_REAP_REMOVED = 1,
	MAFSBX_REAP_WOULD_REMOVE,          /* dry run */
	MAFSBX_REAP_GONE,                  /* already absent when removed (blocks its group) */
	MAFSBX_REAP_FAILED,                /* removal failed: see the failures */
	MAFSBX_REAP_BLOCKED,               /* kept: a container of its group was not removed */
};

struct mafsbx_reap_item {
	enum mafsbx_reap_kind kind;
	enum mafsbx_reap_outcome outcome;
	char id[65];
	char name[MAFSBX_NAME_LEN + 8];    /* with -proxy / -net */
	char sandbox[MAFSBX_NAME_LEN + 1]; /* the workload name of its group */
	struct mafsbx_time created;
};

/* Upstream DisposalFailure codes. */
enum mafsbx_reap_code {
	MAFSBX_REAP_UNLISTED = 1,          /* an inventory or revalidation read failed */
	MAFSBX_REAP_REFUSED,               /* the engine refused a removal */
	MAFSBX_REAP_UNREACHABLE,           /* the engine could not be reached */
	MAFSBX_REAP_TIMEOUT,               /* an engine call timed out */
};
const char *mafsbx_reap_code_name(enum mafsbx_reap_code c);   /* "unlisted", ... */

struct mafsbx_reap_failure {
	enum mafsbx_reap_code code;
	enum mafsbx_reap_kind kind;
	bool has_kind;                     /* false for a failed listing (no resource yet) */
	char id[65];                       /* "" when not known */
	char name[MAFSBX_NAME_LEN + 8];    /* "" when not known */
	char message[MAFSBX_ERR_MSG_MAX];
};

struct mafsbx_reap_result {
	unsigned disposed;                 /* workload containers removed (dry run: would be) */
	unsigned proxies_removed;          /* proxy containers removed (dry run: would be) */
	unsigned networks_removed;         /* networks removed (dry run: would be) */
	bool dry_run;
	bool inventory_failed;             /* an inventory or revalidation read failed: nothing deleted */
	struct mafsbx_reap_failure *failures;
	size_t n_failures;
	struct mafsbx_reap_item *items;    /* every resource of the expired groups, in removal order */
	size_t n_items;
	size_t inventoried;                /* valid resources seen (containers and networks) */
	struct mafsbx_time cutoff;
};

/*
 * Run one reap. Returns:
 *  - 0 when the run completed (removal failures, if any, are in
 *    res->failures; the CLI exits 1 then);
 *  - -EINVAL (EK_INVALID) for a bad argument, before any engine call;
 *  - a negative errno with `err` set when the inventory or the revalidation
 *    failed: res->inventory_failed is true, res->failures says what could
 *    not be read, and nothing was deleted.
 * `res` is always initialised (free it with mafsbx_reap_result_free).
 */
int mafsbx_reap(struct mafsbx_engine *e, const struct mafsbx_reap_options *opts, struct mafsbx_reap_result *res,
		struct mafsbx_error *err);
void mafsbx_reap_result_free(struct mafsbx_reap_result *res);

/*
 * {"disposed", "proxies_removed", "networks_removed", "failures": [{"code",
 * "kind", "name", "id", "message"}], "dry_run"} and, for a dry run,
 * "would_remove": [{"kind", "name", "id", "sandbox", "created"}]. New object
 * (NULL only without memory).
 */
json_t *mafsbx_reap_result_json(const struct mafsbx_reap_result *res);

/*
 * Name validation of the inventory, exposed for unit tests: a workload is
 * maf-sandbox-docker-<12 lowercase hex>, a proxy that plus "-proxy", a
 * network that plus "-net". On success writes the kind and the workload name.
 */
bool mafsbx_reap_parse_name(const char *name, bool network, enum mafsbx_reap_kind *kind,
			    char sandbox[MAFSBX_NAME_LEN + 1]);

/*
 * The inventory's filter: names starting with MAFSBX_NAME_PREFIX and the four
 * identity labels (scope, thread, agent, kind) present; with `scope_label`
 * (already through mafsbx_label_value), only that scope. New object, NULL
 * without memory. The network half of the inventory lists with it; the
 * container half, and `mafsbx ls`, ask for the cheaper mafsbx_list_filters
 * and check the same with mafsbx_list_entry_selected.
 */
json_t *mafsbx_reap_filters(const char *scope_label);


#endif
