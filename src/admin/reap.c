/*
 * reap.c: the reap algorithm of upstream maf-sandbox-docker
 * (doc/upstream.md §8.6) over the typed Engine API.
 *
 * Safety comes first: reap runs unattended from cron against a shared
 * engine, so every doubt keeps things. An inventory or revalidation read
 * that fails deletes nothing; resources whose name, labels or role do not
 * match exactly are foreign and never touched; every removal addresses the
 * ID that was inspected, never a name, so a sandbox recreated under the same
 * name meanwhile survives; a network is never forced; and a group whose
 * container could not be removed keeps the rest, so its age still counts on
 * the next run.
 */
#include "reap.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "buf.h"
#include "log.h"
#include "names.h"

#ifdef MAFSBX_TEST_KNOBS
const struct mafsbx_time *sbx_test_reap_now;
void (*sbx_test_reap_hook)(enum mafsbx_reap_stage stage, void *ctx);
void *sbx_test_reap_hook_ctx;
#endif


/* Name of an enum value from a table indexed by it; `fallback` outside the table. */
static const char *enum_name(const char *const *names, size_t n, int v, const char *fallback)
{
	return v >= 0 && (size_t)v < n && names[v] ? names[v] : fallback;
}

const char *mafsbx_reap_kind_name(enum mafsbx_reap_kind k)
{
	static const char *const names[] = {
		[MAFSBX_REAP_PROXY] = "proxy",
		[MAFSBX_REAP_WORKLOAD] = "workload",
		[MAFSBX_REAP_NETWORK] = "network",
	};
	return enum_name(names, MAFSBX_ARRAY_SIZE(names), (int)k, "?");
}

const char *mafsbx_reap_code_name(enum mafsbx_reap_code c)
{
	static const char *const names[] = {
		[MAFSBX_REAP_UNLISTED] = "unlisted",
		[MAFSBX_REAP_REFUSED] = "refused",
		[MAFSBX_REAP_UNREACHABLE] = "unreachable",
		[MAFSBX_REAP_TIMEOUT] = "timeout",
	};
	return enum_name(names, MAFSBX_ARRAY_SIZE(names), (int)c, "unknown");
}

bool mafsbx_reap_parse_name(const char *name, bool network, enum mafsbx_reap_kind *kind,
			    char sandbox[MAFSBX_NAME_LEN + 1])
{
	char base[MAFSBX_NAME_LEN + 1];
	enum mafsbx_name_role role = mafsbx_name_parse(name, base);
	enum mafsbx_reap_kind k;
	if (network && role == MAFSBX_NAME_NETWORK)
		k = MAFSBX_REAP_NETWORK;
	else if (!network && role == MAFSBX_NAME_PROXY)
		k = MAFSBX_REAP_PROXY;
	else if (!network && role == MAFSBX_NAME_WORKLOAD)
		k = MAFSBX_REAP_WORKLOAD;
	else
		return false;
	if (kind)
		*kind = k;
	if (sandbox)
		memcpy(sandbox, base, MAFSBX_NAME_LEN + 1);
	return true;
}

/* ---- result bookkeeping ------------------------------------------------- */

static enum mafsbx_reap_code code_of(const struct mafsbx_error *e)
{
	switch (e->kind) {
	case MAFSBX_EK_UNREACHABLE:
		return MAFSBX_REAP_UNREACHABLE;
	case MAFSBX_EK_TIMEOUT:
		return MAFSBX_REAP_TIMEOUT;
	default:
		return MAFSBX_REAP_REFUSED;
	}
}

static int add_failure(struct mafsbx_reap_result *res, enum mafsbx_reap_code code, const enum mafsbx_reap_kind *kind,
		       const char *id, const char *name, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int add_failure(struct mafsbx_reap_result *res, enum mafsbx_reap_code code, const enum mafsbx_reap_kind *kind,
		       const char *id, const char *name, const char *fmt, ...)
{
	struct mafsbx_reap_failure *f = realloc(res->failures, (res->n_failures + 1) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	res->failures = f;
	f = &f[res->n_failures++];
	memset(f, 0, sizeof(*f));
	f->code = code;
	if (kind) {
		f->kind = *kind;
		f->has_kind = true;
	}
	snprintf(f->id, sizeof(f->id), "%s", id ? id : "");
	snprintf(f->name, sizeof(f->name), "%s", name ? name : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	return 0;
}

/* ---- inventory ---------------------------------------------------------- */

struct resource {
	enum mafsbx_reap_kind kind;
	char id[65];
	char name[MAFSBX_NAME_LEN + 8];
	char sandbox[MAFSBX_NAME_LEN + 1];
	struct mafsbx_time created;
};

struct inventory {
	struct resource *r;
	size_t n, cap;
};

static int inventory_push(struct inventory *inv, const struct resource *r)
{
	if (mafsbx_array_grow(&inv->r, &inv->cap, inv->n + 1, sizeof(*inv->r), 16, 0) < 0)
		return -ENOMEM;
	inv->r[inv->n++] = *r;
	return 0;
}

json_t *mafsbx_reap_filters(const char *scope_label)
{
	json_t *f = mafsbx_filters_new();
	if (!f)
		return NULL;
	int r = mafsbx_filters_add(f, "name", "^" MAFSBX_NAME_PREFIX);
	for (size_t i = 0; r == 0 && i < MAFSBX_IDENTITY_LABELS; i++)
		r = mafsbx_filters_add(f, "label", mafsbx_identity_labels[i]);
	if (r == 0 && scope_label) {
		char kv[sizeof(MAFSBX_LABEL_SCOPE) + MAFSBX_LABEL_VALUE_MAX + 2];
		snprintf(kv, sizeof(kv), "%s=%s", MAFSBX_LABEL_SCOPE, scope_label);
		r = mafsbx_filters_add(f, "label", kv);
	}
	if (r < 0) {
		json_decref(f);
		return NULL;
	}
	return f;
}

/*
 * Decide whether an inspected object is one of ours. Returns 1 (keep, `out`
 * filled), 0 (foreign or partial: ignore silently) or -1 (unreadable
 * creation time: an inventory failure, `why` says what).
 */
static int validate(const json_t *obj, bool network, const char *listed_id, const char *scope_label,
		    struct resource *out, char *why, size_t why_len)
{
	const char *id = json_string_value(json_object_get(obj, "Id"));
	if (!id || strcmp(id, listed_id) != 0)
		return 0;
	const char *name = json_string_value(json_object_get(obj, "Name"));
	if (!name)
		return 0;
	if (!network && name[0] == '/')
		name++;
	enum mafsbx_reap_kind kind;
	if (!mafsbx_reap_parse_name(name, network, &kind, out->sandbox))
		return 0;
	const json_t *labels = network ? json_object_get(obj, "Labels")
				       : json_object_get(json_object_get(obj, "Config"), "Labels");
	if (!mafsbx_has_identity_labels(labels))
		return 0;
	if (scope_label && strcmp(json_string_value(json_object_get(labels, MAFSBX_LABEL_SCOPE)), scope_label) != 0)
		return 0;
	if (!network) {
		const json_t *role = json_object_get(labels, MAFSBX_LABEL_ROLE);
		if (kind == MAFSBX_REAP_PROXY && !(json_is_string(role) && strcmp(json_string_value(role), "proxy") == 0))
			return 0;
		if (kind == MAFSBX_REAP_WORKLOAD && role)
			return 0;
	}
	struct mafsbx_error terr;
	mafsbx_error_clear(&terr);
	const char *created = json_string_value(json_object_get(obj, "Created"));
	if (!created || mafsbx_time_parse(created, &out->created, &terr) < 0) {
		snprintf(why, why_len, "%s %s: unreadable creation time: %s", mafsbx_reap_kind_name(kind), name,
			 created ? terr.message : "no Created field");
		return -1;
	}
	out->kind = kind;
	snprintf(out->id, sizeof(out->id), "%s", id);
	snprintf(out->name, sizeof(out->name), "%s", name);
	return 1;
}

/* The first failure also goes to `err`, so the caller can say why nothing was deleted. */
static void note_first(struct mafsbx_error *err, int *first, int ret, const struct mafsbx_error *cause,
		       const char *fallback)
{
	if (*first)
		return;
	*first = ret < 0 ? ret : -EIO;
	if (!err)
		return;
	if (cause && cause->kind != MAFSBX_EK_NONE) {
		*err = *cause;
	} else {
		mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s", fallback ? fallback : "reap: inventory failed");
	}
}

static bool fatal_transport(const struct mafsbx_error *e)
{
	return e->kind == MAFSBX_EK_UNREACHABLE || e->kind == MAFSBX_EK_TIMEOUT;
}

static int oom(struct mafsbx_error *err)
{
	return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "reap: out of memory");
}

/* The engine listed something that is not an engine ID: an inventory failure. 0, or -ENOMEM (with `err`). */
static int malformed_id(struct mafsbx_reap_result *res, bool network, const char *id, struct mafsbx_error *err,
			int *first)
{
	char msg[160];
	snprintf(msg, sizeof(msg), "the engine listed a malformed %s ID '%.70s'", network ? "network" : "container",
		 id ? id : "(none)");
	if (add_failure(res, MAFSBX_REAP_UNLISTED, NULL, NULL, NULL, "%s", msg) < 0)
		return oom(err);
	note_first(err, first, -EIO, NULL, msg);
	return 0;
}

#define INVENTORY_STOP 1

/*
 * One listed ID: inspect it, validate it, keep it when ours. 0 to go on,
 * INVENTORY_STOP when the engine is gone (`*fatal` set), or -ENOMEM (with
 * `err`). Failures are recorded in `res`, the first in `*first` and `err`.
 */
static int inventory_entry(struct mafsbx_engine *e, bool network, const char *id, const char *scope_label,
			   struct inventory *inv, struct mafsbx_reap_result *res, bool *fatal, struct mafsbx_error *err,
			   int *first)
{
	json_t *obj = NULL;
	struct mafsbx_error ierr;
	mafsbx_error_clear(&ierr);
	int r = network ? mafsbx_network_inspect(e, id, &obj, &ierr) : mafsbx_container_inspect(e, id, &obj, &ierr);
	if (r < 0) {
		if (mafsbx_error_is_gone(&ierr, id))
			return 0;   /* removed since the listing: not ours to judge */
		if (add_failure(res, MAFSBX_REAP_UNLISTED, NULL, id, NULL, "could not inspect listed %s %s: %s",
				network ? "network" : "container", id, ierr.message) < 0)
			r = -ENOMEM;
		note_first(err, first, r, &ierr, NULL);
		if (!fatal_transport(&ierr))
			return 0;
		*fatal = true;
		return INVENTORY_STOP;
	}
	struct resource rs;
	memset(&rs, 0, sizeof(rs));
	char why[MAFSBX_ERR_MSG_MAX / 2] = "";
	int v = validate(obj, network, id, scope_label, &rs, why, sizeof(why));
	json_decref(obj);
	if (v < 0) {
		if (add_failure(res, MAFSBX_REAP_UNLISTED, NULL, id, NULL, "%s", why) < 0)
			return oom(err);
		note_first(err, first, -EIO, NULL, why);
	} else if (v > 0 && inventory_push(inv, &rs) < 0) {
		return oom(err);
	}
	return 0;
}

/* One listed ID, kept compactly until it is judged. */
struct listed {
	char id[65];
	bool malformed;          /* not an engine ID: `bad` holds what was listed */
	char bad[72];
	bool young;              /* judged from the listing alone: `rs` */
	struct resource rs;
};

struct listing {
	struct listed *l;
	size_t n, cap;
	const char *scope_label;
	struct mafsbx_time cutoff;
	bool network;
};

/*
 * A container the listing already shows to be younger than the cutoff (its
 * listed Created, whole seconds rounded down, after the cutoff's second):
 * it cannot expire in this run, so it is not inspected. It is still kept,
 * with its identity checked from the listing, because its age decides its
 * group's (a young workload keeps an old proxy). 1 when young and ours.
 */
static int young_from_listing(const json_t *ent, const char *scope_label, struct mafsbx_time cutoff,
			      struct resource *out)
{
	const json_t *jc = json_object_get(ent, "Created");
	if (!json_is_integer(jc) || json_integer_value(jc) <= (json_int_t)cutoff.sec)
		return 0;
	const char *name = json_string_value(json_array_get(json_object_get(ent, "Names"), 0));
	if (!name)
		return 0;
	if (name[0] == '/')
		name++;
	enum mafsbx_reap_kind kind;
	if (!mafsbx_reap_parse_name(name, false, &kind, out->sandbox))
		return 0;
	const json_t *labels = json_object_get(ent, "Labels");
	if (!mafsbx_has_identity_labels(labels))
		return 0;
	if (scope_label && strcmp(json_string_value(json_object_get(labels, MAFSBX_LABEL_SCOPE)), scope_label) != 0)
		return 0;
	const json_t *role = json_object_get(labels, MAFSBX_LABEL_ROLE);
	if (kind == MAFSBX_REAP_PROXY && !(json_is_string(role) && strcmp(json_string_value(role), "proxy") == 0))
		return 0;
	if (kind == MAFSBX_REAP_WORKLOAD && role)
		return 0;
	out->kind = kind;
	out->created = (struct mafsbx_time){ .sec = (int64_t)json_integer_value(jc), .nsec = 0 };
	snprintf(out->id, sizeof(out->id), "%s", json_string_value(json_object_get(ent, "Id")));
	snprintf(out->name, sizeof(out->name), "%s", name);
	return 1;
}

static int listing_add(json_t *ent, void *ctx)
{
	struct listing *ls = ctx;
	if (!ls->network) {
		/* the engine's list is a superset (mafsbx_list_filters): what it used to filter out is skipped here */
		const char *const want[3] = { ls->scope_label, NULL, NULL };
		if (!mafsbx_list_entry_selected(ent, want))
			return 0;
	}
	if (mafsbx_array_grow(&ls->l, &ls->cap, ls->n + 1, sizeof(*ls->l), 64, 0) < 0)
		return -ENOMEM;
	struct listed *x = &ls->l[ls->n];
	memset(x, 0, sizeof(*x));
	const char *id = json_string_value(json_object_get(ent, "Id"));
	if (!mafsbx_is_engine_id(id)) {
		x->malformed = true;
		snprintf(x->bad, sizeof(x->bad), "%s", id ? id : "");
		x->id[0] = '\0';
	} else {
		snprintf(x->id, sizeof(x->id), "%s", id);
		x->young = !ls->network && young_from_listing(ent, ls->scope_label, ls->cutoff, &x->rs) == 1;
	}
	ls->n++;
	return 0;
}

static int cmp_listed(const void *a, const void *b)
{
	return strcmp(((const struct listed *)a)->id, ((const struct listed *)b)->id);
}

/* List one half by the filter, streamed into `ls`. 0, or the first failure's negative errno (recorded in `res`, with `err`). */
static int list_half(struct mafsbx_engine *e, struct listing *ls, struct mafsbx_reap_result *res, bool *fatal,
		     struct mafsbx_error *err)
{
	int first = 0;
	struct mafsbx_error lerr;
	mafsbx_error_clear(&lerr);
	const char *const want[3] = { ls->scope_label, NULL, NULL };
	/* networks: the engine's filters as ever; containers: the cheapest list, checked in listing_add */
	json_t *filters = ls->network ? mafsbx_reap_filters(ls->scope_label) : mafsbx_list_filters(want);
	if (!filters)
		return oom(err);
	int r;
	if (ls->network) {
		json_t *list = NULL;
		r = mafsbx_network_list(e, filters, &list, &lerr);
		if (r == 0 && !json_is_array(list)) {
			r = mafsbx_error_set(&lerr, MAFSBX_EK_PROTOCOL, "the answer is not an array");
		} else if (r == 0) {
			size_t i;
			json_t *ent;
			json_array_foreach(list, i, ent)
				if ((r = listing_add(ent, ls)) < 0)
					break;
			if (r < 0)
				mafsbx_error_set(&lerr, MAFSBX_EK_NOMEM, "out of memory");
		}
		json_decref(list);
	} else {
		r = mafsbx_container_list_each_keep(e, filters, true, 0, mafsbx_list_keys, listing_add, ls, &lerr);
	}
	json_decref(filters);
	if (r < 0) {
		if (lerr.kind == MAFSBX_EK_NOMEM)
			return oom(err);
		if (add_failure(res, MAFSBX_REAP_UNLISTED, NULL, NULL, NULL, "could not list %s, so nothing was deleted: %s",
				ls->network ? "networks" : "containers", lerr.message) < 0)
			r = -ENOMEM;
		note_first(err, &first, r, &lerr, "list failed");
		*fatal = fatal_transport(&lerr);
	}
	return first;
}

/*
 * One half of the inventory (containers or networks). Failures are recorded
 * in `res`; returns 0, or the first failure's negative errno (with `err`).
 * A dead engine stops the walk at once: every further call would fail the
 * same way, possibly after a timeout each. Containers the listing shows
 * too young to expire are kept from the listing, not inspected.
 */
static int inventory_half(struct mafsbx_engine *e, bool network, const char *scope_label, struct mafsbx_time cutoff,
			  struct inventory *inv, struct mafsbx_reap_result *res, bool *fatal, struct mafsbx_error *err)
{
	struct listing ls = { .scope_label = scope_label, .cutoff = cutoff, .network = network };
	int first = list_half(e, &ls, res, fatal, err);
	__do_free struct listed *l = ls.l; /* list_half's array, freed on every way out */
	if (first < 0)
		return first;
	/* Each ID once (in ID order). */
	if (ls.n > 1)
		qsort(l, ls.n, sizeof(*l), cmp_listed);
	for (size_t i = 0; i < ls.n; i++) {
		const struct listed *x = &l[i];
		int r;
		if (x->malformed) {
			r = malformed_id(res, network, x->bad, err, &first);
		} else if (i > 0 && !l[i - 1].malformed && strcmp(l[i - 1].id, x->id) == 0) {
			continue;
		} else if (x->young) {
			r = inventory_push(inv, &x->rs) < 0 ? oom(err) : 0;
		} else {
			r = inventory_entry(e, network, x->id, scope_label, inv, res, fatal, err, &first);
		}
		if (r < 0)
			first = r;
		if (r != 0)
			break;
	}
	return first;
}

/* ---- groups ------------------------------------------------------------- */

struct group {
	char sandbox[MAFSBX_NAME_LEN + 1];
	long workload, proxy;     /* index into the inventory, -1 when absent */
	long anchor;              /* the deciding resource */
	bool expired;
	bool skipped;             /* the anchor vanished before revalidation */
	bool blocked;             /* a container of the group was not removed */
};

static int cmp_resource(const void *a, const void *b)
{
	const struct resource *x = a, *y = b;
	int c = strcmp(x->sandbox, y->sandbox);
	if (c)
		return c;
	if (x->kind != y->kind)
		return (int)x->kind - (int)y->kind;
	return strcmp(x->id, y->id);
}

static int cmp_group(const void *key, const void *g)
{
	return strcmp(key, ((const struct group *)g)->sandbox);
}

/* Groups are made in the inventory's order (by sandbox): found by bisection. */
static struct group *find_group(struct group *g, size_t n, const char *sandbox)
{
	return n ? bsearch(sandbox, g, n, sizeof(*g), cmp_group) : NULL;
}

static int add_item(struct mafsbx_reap_result *res, const struct resource *r, enum mafsbx_reap_outcome o)
{
	struct mafsbx_reap_item *it = realloc(res->items, (res->n_items + 1) * sizeof(*it));
	if (!it)
		return -ENOMEM;
	res->items = it;
	it = &it[res->n_items++];
	memset(it, 0, sizeof(*it));
	it->kind = r->kind;
	it->outcome = o;
	snprintf(it->id, sizeof(it->id), "%s", r->id);
	snprintf(it->name, sizeof(it->name), "%s", r->name);
	snprintf(it->sandbox, sizeof(it->sandbox), "%s", r->sandbox);
	it->created = r->created;
	return 0;
}

/* Now, as CLOCK_REALTIME has it (a test build: sbx_test_reap_now when set). */
static struct mafsbx_time realtime_now(void)
{
#ifdef MAFSBX_TEST_KNOBS
	if (sbx_test_reap_now)
		return *sbx_test_reap_now;
#endif
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (struct mafsbx_time){ .sec = ts.tv_sec, .nsec = (int32_t)ts.tv_nsec };
}

/* ---- the run, phase by phase -------------------------------------------- */

struct reap_run {
	struct mafsbx_engine *e;
	const struct mafsbx_reap_options *opts;
	struct mafsbx_reap_result *res;
	struct mafsbx_error *err;
	struct inventory inv;
	struct group *groups;
	size_t n_groups;
};

static void stage(enum mafsbx_reap_stage s)
{
	(void)s;
#ifdef MAFSBX_TEST_KNOBS
	if (sbx_test_reap_hook)
		sbx_test_reap_hook(s, sbx_test_reap_hook_ctx);
#endif
}

/* 1. Inventory: containers first, then networks. 0, or a negative errno (nothing is to be deleted). */
static int take_inventory(struct reap_run *run, const char *scope_label)
{
	bool fatal = false;
	int ret = inventory_half(run->e, false, scope_label, run->res->cutoff, &run->inv, run->res, &fatal, run->err);
	if (!fatal) {
		/* Keep reading to report every unreadable resource; the first error stays in err. */
		int r2 = inventory_half(run->e, true, scope_label, run->res->cutoff, &run->inv, run->res, &fatal,
					ret < 0 ? NULL : run->err);
		if (ret == 0)
			ret = r2;
	}
	run->res->inventoried = run->inv.n;
	if (ret < 0 || run->res->n_failures) {
		run->res->inventory_failed = true;
		if (ret == 0)
			ret = -EIO;
		log_info("reap: the inventory failed; nothing was deleted");
	}
	return ret;
}

/* The deciding resource: the workload, else the proxy, else the youngest network. -1 when none. */
static long anchor_of(const struct inventory *inv, const struct group *g)
{
	if (g->workload >= 0)
		return g->workload;
	if (g->proxy >= 0)
		return g->proxy;
	long anchor = -1;
	for (size_t i = 0; i < inv->n; i++)
		if (inv->r[i].kind == MAFSBX_REAP_NETWORK && strcmp(inv->r[i].sandbox, g->sandbox) == 0 &&
		    (anchor < 0 || mafsbx_time_cmp(inv->r[i].created, inv->r[anchor].created) > 0))
			anchor = (long)i;
	return anchor;
}

/* 2. Group by sandbox; the age is the anchor's. 0 or -ENOMEM. */
static int group_inventory(struct reap_run *run)
{
	struct inventory *inv = &run->inv;
	if (inv->n)
		qsort(inv->r, inv->n, sizeof(*inv->r), cmp_resource);
	run->groups = calloc(inv->n + 1, sizeof(*run->groups));
	if (!run->groups)
		return oom(run->err);
	for (size_t i = 0; i < inv->n; i++) {
		const struct resource *r = &inv->r[i];
		struct group *g = run->n_groups && strcmp(run->groups[run->n_groups - 1].sandbox, r->sandbox) == 0
					  ? &run->groups[run->n_groups - 1]
					  : NULL;
		if (!g) {
			g = &run->groups[run->n_groups++];
			snprintf(g->sandbox, sizeof(g->sandbox), "%s", r->sandbox);
			g->workload = g->proxy = g->anchor = -1;
		}
		if (r->kind == MAFSBX_REAP_WORKLOAD)
			g->workload = (long)i;
		else if (r->kind == MAFSBX_REAP_PROXY)
			g->proxy = (long)i;
	}
	for (size_t gi = 0; gi < run->n_groups; gi++) {
		struct group *g = &run->groups[gi];
		g->anchor = anchor_of(inv, g);
		/* Strict: an anchor exactly at the cutoff is kept. */
		g->expired = g->anchor >= 0 && mafsbx_time_cmp(inv->r[g->anchor].created, run->res->cutoff) < 0;
	}
	return 0;
}

/*
 * Inspect one expired group's anchor by ID again. 0 to go on (a failure is
 * recorded, the first in `*first`), 1 to stop (the engine is gone), -ENOMEM.
 */
static int revalidate_group(struct reap_run *run, struct group *g, int *first)
{
	const struct resource *a = &run->inv.r[g->anchor];
	json_t *obj = NULL;
	struct mafsbx_error rerr;
	mafsbx_error_clear(&rerr);
	int r = a->kind == MAFSBX_REAP_NETWORK ? mafsbx_network_inspect(run->e, a->id, &obj, &rerr)
					       : mafsbx_container_inspect(run->e, a->id, &obj, &rerr);
	if (r < 0 && mafsbx_error_is_gone(&rerr, a->id)) {
		g->skipped = true;
		return 0;
	}
	const char *id = r == 0 ? json_string_value(json_object_get(obj, "Id")) : NULL;
	if (r < 0 || !id || strcmp(id, a->id) != 0) {
		enum mafsbx_reap_kind k = a->kind;
		struct mafsbx_reap_result *res = run->res;
		if (add_failure(res, MAFSBX_REAP_UNLISTED, &k, a->id, a->name, "could not revalidate %s %s: %s",
				mafsbx_reap_kind_name(k), a->name, r < 0 ? rerr.message : "the engine answered another ID") < 0) {
			json_decref(obj);
			return oom(run->err);
		}
		note_first(run->err, first, r, r < 0 ? &rerr : NULL, res->failures[res->n_failures - 1].message);
	}
	json_decref(obj);
	return r < 0 && fatal_transport(&rerr) ? 1 : 0;
}

/* 3. Revalidate each expired group's anchor by ID; any failure deletes nothing. */
static int revalidate(struct reap_run *run)
{
	int first = 0;
	for (size_t gi = 0; gi < run->n_groups; gi++) {
		struct group *g = &run->groups[gi];
		if (!g->expired)
			continue;
		int r = revalidate_group(run, g, &first);
		if (r < 0)
			return r;
		if (r > 0)
			break;
	}
	if (first) {
		run->res->inventory_failed = true;
		log_info("reap: revalidation failed; nothing was deleted");
	}
	return first;
}

static void count_removed(struct mafsbx_reap_result *res, enum mafsbx_reap_kind k)
{
	if (k == MAFSBX_REAP_PROXY)
		res->proxies_removed++;
	else if (k == MAFSBX_REAP_WORKLOAD)
		res->disposed++;
	else
		res->networks_removed++;
}

/* One removal of a phase: the resource, its group, and the engine's answer. */
struct removal {
	const struct resource *r;
	struct group *g;
	bool act;                    /* a removal to make (not blocked, not dry) */
	int dr;
	struct mafsbx_error derr;
};

/* Record one removal's outcome (in the phase's order). 0 or -ENOMEM. */
static int record_removal(struct reap_run *run, struct removal *x)
{
	const struct resource *r = x->r;
	enum mafsbx_reap_outcome o;
	if (x->dr == 0) {
		o = MAFSBX_REAP_REMOVED;
		count_removed(run->res, r->kind);
		log_info("reap: removed %s %s (%.12s)", mafsbx_reap_kind_name(r->kind), r->name, r->id);
	} else if (mafsbx_error_is_gone(&x->derr, r->id)) {
		o = MAFSBX_REAP_GONE;
	} else {
		o = MAFSBX_REAP_FAILED;
		enum mafsbx_reap_kind k = r->kind;
		if (add_failure(run->res, code_of(&x->derr), &k, r->id, r->name, "%s", x->derr.message) < 0)
			return -ENOMEM;
		log_info("reap: could not remove %s %s: %s", mafsbx_reap_kind_name(r->kind), r->name, x->derr.message);
	}
	/* A container left in place (or already replaced) keeps its group's age for a retry. */
	if (o != MAFSBX_REAP_REMOVED && r->kind != MAFSBX_REAP_NETWORK)
		x->g->blocked = true;
	return add_item(run->res, r, o);
}

struct removal_pool {
	struct mafsbx_engine *e;
	struct removal *x;
	size_t n;
	atomic_size_t next;
};

static void *removal_worker(void *arg)
{
	struct removal_pool *p = arg;
	for (;;) {
		size_t i = atomic_fetch_add(&p->next, 1);
		if (i >= p->n)
			return NULL;
		struct removal *x = &p->x[i];
		if (!x->act)
			continue;
		mafsbx_error_clear(&x->derr);
		x->dr = x->r->kind == MAFSBX_REAP_NETWORK ? mafsbx_network_delete(p->e, x->r->id, &x->derr)
							  : mafsbx_container_delete(p->e, x->r->id, true, &x->derr);
	}
}

/*
 * The removals of one phase, at most MAFSBX_REAP_CONCURRENCY at once (a
 * removal waits on the engine, which does them in parallel; many at once
 * would only queue there and hold connections). The calling thread is one
 * of the workers; if no thread can be started it does them all.
 */
static void remove_all(struct mafsbx_engine *e, struct removal *x, size_t n)
{
	struct removal_pool p = { .e = e, .x = x, .n = n };
	atomic_init(&p.next, 0);
	pthread_t t[MAFSBX_REAP_CONCURRENCY - 1];
	size_t started = 0;
	for (; started < MAFSBX_REAP_CONCURRENCY - 1 && started + 1 < n; started++)
		if (pthread_create(&t[started], NULL, removal_worker, &p) != 0)
			break;
	removal_worker(&p);
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
}

/*
 * 4. Remove by ID: proxies, then workloads, then networks, each phase's
 * removals in parallel (bounded) and recorded in order; a group whose
 * container stayed is blocked for the later phases. 0 or -ENOMEM.
 */
static int remove_expired(struct reap_run *run)
{
	static const enum mafsbx_reap_kind order[] = { MAFSBX_REAP_PROXY, MAFSBX_REAP_WORKLOAD, MAFSBX_REAP_NETWORK };
	struct removal *x = calloc(run->inv.n + 1, sizeof(*x));
	if (!x)
		return oom(run->err);
	int ret = 0;
	for (size_t oi = 0; ret == 0 && oi < MAFSBX_ARRAY_SIZE(order); oi++) {
		size_t n = 0, acts = 0;
		for (size_t i = 0; i < run->inv.n; i++) {
			const struct resource *r = &run->inv.r[i];
			if (r->kind != order[oi])
				continue;
			struct group *g = find_group(run->groups, run->n_groups, r->sandbox);
			if (!g || !g->expired || g->skipped)
				continue;
			bool act = !g->blocked && !run->opts->dry_run;
			x[n++] = (struct removal){ .r = r, .g = g, .act = act };
			acts += act;
		}
		if (acts)
			remove_all(run->e, x, n);
		for (size_t i = 0; ret == 0 && i < n; i++) {
			if (x[i].g->blocked && !x[i].act) {
				ret = add_item(run->res, x[i].r, MAFSBX_REAP_BLOCKED);
			} else if (!x[i].act) {
				ret = add_item(run->res, x[i].r, MAFSBX_REAP_WOULD_REMOVE);
				count_removed(run->res, x[i].r->kind);
			} else {
				ret = record_removal(run, &x[i]);
			}
		}
	}
	free(x);
	return ret < 0 ? oom(run->err) : 0;
}

int mafsbx_reap(struct mafsbx_engine *e, const struct mafsbx_reap_options *opts, struct mafsbx_reap_result *res,
		struct mafsbx_error *err)
{
	if (res)
		memset(res, 0, sizeof(*res));
	if (!opts || !res)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "reap: bad arguments");
	/* As upstream: a non-positive age is refused before any engine call. */
	if (opts->older_than_s <= 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "reap: the age must be positive (got %lld s)",
					(long long)opts->older_than_s);
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "reap: no engine");
	res->dry_run = opts->dry_run;
	struct mafsbx_time now = realtime_now();
	res->cutoff = mafsbx_time_sub_clamped(now, opts->older_than_s);

	char scope_buf[MAFSBX_LABEL_VALUE_MAX + 1];
	const char *scope_label = NULL;
	if (opts->scope) {
		mafsbx_label_value(opts->scope, scope_buf);
		scope_label = scope_buf;
	}

	struct reap_run run = { .e = e, .opts = opts, .res = res, .err = err };
	int ret = take_inventory(&run, scope_label);
	if (ret == 0) {
		stage(MAFSBX_REAP_AFTER_INVENTORY);
		ret = group_inventory(&run);
	}
	if (ret == 0)
		ret = revalidate(&run);
	if (ret == 0) {
		stage(MAFSBX_REAP_BEFORE_DELETE);
		ret = remove_expired(&run);
	}
	free(run.groups);
	free(run.inv.r);
	return ret;
}

void mafsbx_reap_result_free(struct mafsbx_reap_result *res)
{
	if (!res)
		return;
	free(res->failures);
	free(res->items);
	res->failures = NULL;
	res->items = NULL;
	res->n_failures = res->n_items = 0;
}

json_t *mafsbx_reap_result_json(const struct mafsbx_reap_result *res)
{
	__do_json json_t *failures = json_array();
	__do_json json_t *o = json_object();
	if (!failures || !o)
		return NULL;
	for (size_t i = 0; i < res->n_failures; i++) {
		const struct mafsbx_reap_failure *f = &res->failures[i];
		json_t *jf = json_pack("{s:s, s:s?, s:s?, s:s?, s:s}", "code", mafsbx_reap_code_name(f->code), "kind",
				       f->has_kind ? mafsbx_reap_kind_name(f->kind) : NULL, "name",
				       f->name[0] ? f->name : NULL, "id", f->id[0] ? f->id : NULL, "message", f->message);
		if (!jf || json_array_append_new(failures, jf) < 0)
			return NULL;
	}
	if (json_object_set_new(o, "disposed", json_integer(res->disposed)) < 0 ||
	    json_object_set_new(o, "proxies_removed", json_integer(res->proxies_removed)) < 0 ||
	    json_object_set_new(o, "networks_removed", json_integer(res->networks_removed)) < 0 ||
	    json_object_set(o, "failures", failures) < 0 ||
	    json_object_set_new(o, "dry_run", json_boolean(res->dry_run)) < 0)
		return NULL;
	if (res->dry_run) {
		json_t *would = json_array();
		if (!would || json_object_set_new(o, "would_remove", would) < 0)
			return NULL;
		for (size_t i = 0; i < res->n_items; i++) {
			const struct mafsbx_reap_item *it = &res->items[i];
			if (it->outcome != MAFSBX_REAP_WOULD_REMOVE)
				continue;
			char created[32];
			mafsbx_time_format(it->created, created);
			json_t *jw = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind", mafsbx_reap_kind_name(it->kind), "name",
					       it->name, "id", it->id, "sandbox", it->sandbox, "created", created);
			if (!jw || json_array_append_new(would, jw) < 0)
				return NULL;
		}
	}
	return move_ptr(o);
}
