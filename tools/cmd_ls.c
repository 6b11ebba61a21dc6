/*
 * cmd_ls.c: `mafsbx ls`: every sandbox on the engine (a workload container
 * named maf-sandbox-docker-<12 hex> with the four identity labels and no
 * role), with its key, kind, state, age and image, from ONE container list
 * call. The key is decoded from a maf-sandbox.key.v1 label (the workload's,
 * else its proxy's, where upstream writes it) when it agrees with the
 * identity labels; otherwise the label values are shown as stored (digests
 * for long or unusual values). Needs no mount.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cli_common.h"
#include "duration.h"
#include "mafsbx.h"
#include "names.h"
#include "reap.h"

static void ls_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " ls [--scope SCOPE] [-q | --format table|json | --json]\n"
		"                 [-H URL | --context NAME]\n"
		"\n"
		"List every maf-sandbox Docker sandbox on the engine, oldest first: its\n"
		"name, kind, state, age, image and key (scope, thread, agent, call). The\n"
		"key comes from the maf-sandbox.key.v1 label when present; otherwise the\n"
		"stored label values are shown (sha256-... for digested values).\n"
		"\n"
		"Options:\n"
		"      --scope SCOPE    only sandboxes of this scope\n"
		"  -q, --quiet          print the names only, one a line\n"
		"      --format FORMAT  table (default), or json: one JSON object a line\n"
		"                       (as docker ps --format json)\n"
		"      --json           print one JSON array of those objects\n" CLI_ENGINE_OPTIONS_HELP
		"  -h, --help           show this help\n"
		"\n"
		"Exit status: 0 done, 125 usage, 3 engine unreachable or the listing failed.\n");
}

/*
 * One listed workload, compactly: the strings it shows are its own (the
 * list is read as a stream and each container's object released at once).
 */
struct row {
	char name[MAFSBX_NAME_LEN + 1];
	char *id, *kind, *state, *image;
	int64_t created;
	char *lab[4];            /* the stored scope, thread, agent, call labels (call NULL when absent) */
	char *key_v1;            /* its own maf-sandbox.key.v1, NULL when absent */
	char *k_owned[4];        /* the key decoded from a key.v1 */
	const char *key[4];      /* scope, thread, agent, call: k_owned or lab */
	bool from_key_v1;
};

/* A proxy's key.v1 (upstream writes the key there), by its sandbox's name. */
struct proxy_key {
	char sandbox[MAFSBX_NAME_LEN + 1];
	char *kind, *key_v1;
};

static const char *label(const json_t *labels, const char *k)
{
	return json_string_value(json_object_get(labels, k));
}

/*
 * Upstream's strict recovery (doc/upstream.md §2.3): key.v1 decodes to four strings, each of
 * scope/thread/agent maps to its label through label_value, and the call is
 * asymmetric (an empty call needs no call label, a non-empty one must match).
 * `stored` holds the scope, thread, agent and call labels (call NULL when absent).
 */
static bool key_from_v1(char *const stored[4], const char *v1, char *out[4])
{
	if (!v1 || !v1[0])
		return false;
	char *k[4] = { NULL, NULL, NULL, NULL };
	if (mafsbx_key_attribution_decode(v1, &k[0], &k[1], &k[2], &k[3]) < 0)
		return false;
	bool ok = true;
	char lv[MAFSBX_LABEL_VALUE_MAX + 1];
	for (size_t i = 0; i < 3 && ok; i++) {
		mafsbx_label_value(k[i], lv);
		ok = stored[i] && strcmp(stored[i], lv) == 0;
	}
	if (ok) {
		const char *call = stored[3];
		if (k[3][0] == '\0') {
			ok = call == NULL;
		} else {
			mafsbx_label_value(k[3], lv);
			ok = call && strcmp(call, lv) == 0;
		}
	}
	for (size_t i = 0; i < 4; i++) {
		if (ok)
			out[i] = k[i];
		else
			free(k[i]);
	}
	return ok;
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Labels are anyone's text: never let them drive the terminal. */
static void put_clean(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, out);
}

static void print_table(const struct row *rows, size_t n, int64_t now)
{
	int wk = 4, ws = 5, wi = 5;
	for (size_t i = 0; i < n; i++) {
		int l = (int)strlen(rows[i].kind);
		wk = l > wk ? (l > 24 ? 24 : l) : wk;
		l = (int)strlen(rows[i].state);
		ws = l > ws ? l : ws;
		l = (int)strlen(rows[i].image);
		wi = l > wi ? (l > 40 ? 40 : l) : wi;
	}
	printf("%-*s  %-*s  %-*s  %-7s  %-*s  %s\n", MAFSBX_NAME_LEN, "NAME", wk, "KIND", ws, "STATE", "AGE", wi, "IMAGE",
	       "KEY");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		char age[32];
		mafsbx_duration_format(now - r->created, age);
		printf("%-*s  ", MAFSBX_NAME_LEN, r->name);
		put_clean(stdout, r->kind);
		printf("%*s  %-*s  %-7s  ", wk - (int)strlen(r->kind) > 0 ? wk - (int)strlen(r->kind) : 0, "", ws, r->state,
		       age);
		put_clean(stdout, r->image);
		printf("%*s  scope=", wi - (int)strlen(r->image) > 0 ? wi - (int)strlen(r->image) : 0, "");
		put_clean(stdout, r->key[0]);
		printf(" thread=");
		put_clean(stdout, r->key[1]);
		printf(" agent=");
		put_clean(stdout, r->key[2]);
		if (r->key[3][0]) {
			printf(" call=");
			put_clean(stdout, r->key[3]);
		}
		putchar('\n');
	}
}

enum ls_format { LS_TABLE, LS_QUIET, LS_JSON_LINES, LS_JSON_ARRAY };

static void print_names(const struct row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%s\n", rows[i].name);
}

/* One object per row: as one array (--json) or one a line (--format json). */
static int print_json(const struct row *rows, size_t n, int64_t now, bool lines)
{
	json_t *arr = json_array();
	if (!arr)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		char created[32];
		mafsbx_time_format((struct mafsbx_time){ .sec = r->created }, created);
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:{s:s, s:s, s:s, s:s}, s:s}", "name", r->name,
				      "id", r->id, "kind", r->kind, "state", r->state, "created", created, "age_s",
				      (json_int_t)(now - r->created > 0 ? now - r->created : 0), "image", r->image, "key",
				      "scope", r->key[0], "thread", r->key[1], "agent", r->key[2], "call", r->key[3],
				      "key_source", r->from_key_v1 ? "key.v1" : "labels");
		if (!o || json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return -1;
		}
	}
	int r = 0;
	if (!lines) {
		r = cli_print_json(arr, JSON_COMPACT);
	} else {
		size_t i;
		json_t *o;
		json_array_foreach(arr, i, o)
			if ((r = cli_print_json(o, JSON_COMPACT)) < 0)
				break;
	}
	json_decref(arr);
	return r;
}

/* --format: table or json (docker ps's Go templates are not taken). */
static int parse_format(const char *arg, void *dest)
{
	enum ls_format *f = dest;
	if (strcmp(arg, "table") == 0)
		*f = LS_TABLE;
	else if (strcmp(arg, "json") == 0)
		*f = LS_JSON_LINES;
	else
		return cli_usage_error("ls", "--format: want table or json, not '%s'", arg);
	return 0;
}

static int cmp_proxy(const void *a, const void *b)
{
	return strcmp(((const struct proxy_key *)a)->sandbox, ((const struct proxy_key *)b)->sandbox);
}

/* The key of a row: decoded from key.v1 (this container's, else its proxy's), else the stored label values. */
static void row_key(const struct proxy_key *proxies, size_t n_proxies, struct row *rw)
{
	rw->from_key_v1 = key_from_v1(rw->lab, rw->key_v1, rw->k_owned);
	if (!rw->from_key_v1 && n_proxies) {
		struct proxy_key want;
		snprintf(want.sandbox, sizeof(want.sandbox), "%s", rw->name);
		const struct proxy_key *p = bsearch(&want, proxies, n_proxies, sizeof(*proxies), cmp_proxy);
		if (p && rw->kind && p->kind && strcmp(p->kind, rw->kind) == 0)
			rw->from_key_v1 = key_from_v1(rw->lab, p->key_v1, rw->k_owned);
	}
	for (size_t k = 0; k < 4; k++)
		rw->key[k] = rw->from_key_v1 ? rw->k_owned[k] : rw->lab[k];
	if (!rw->key[3])
		rw->key[3] = "";
}

static void row_free(struct row *rw)
{
	free(rw->id), free(rw->kind), free(rw->state), free(rw->image), free(rw->key_v1);
	for (size_t k = 0; k < 4; k++)
		free(rw->lab[k]), free(rw->k_owned[k]);
}

struct ls_acc {
	struct row *rows;
	size_t n, cap;
	struct proxy_key *proxies;
	size_t n_proxies, cap_proxies;
	const char *want[3];     /* the scope label value, or none (mafsbx_list_entry_selected) */
};

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	return mafsbx_array_grow(p, cap, n + 1, size, 64, 0);
}

/* One listed container: a complete workload of ours becomes a row; a proxy's key.v1 is kept aside. */
static int ls_one(json_t *ent, void *ctx)
{
	struct ls_acc *acc = ctx;
	if (!mafsbx_list_entry_selected(ent, acc->want))
		return 0;   /* the engine's list is a superset (mafsbx_list_filters) */
	const char *name = json_string_value(json_array_get(json_object_get(ent, "Names"), 0));
	const json_t *labels = json_object_get(ent, "Labels");
	enum mafsbx_reap_kind kind;
	char sandbox[MAFSBX_NAME_LEN + 1];
	if (name && name[0] == '/')
		name++;
	if (!name || !json_is_object(labels) || !mafsbx_reap_parse_name(name, false, &kind, sandbox) ||
	    !mafsbx_has_identity_labels(labels))
		return 0;
	const char *role = label(labels, MAFSBX_LABEL_ROLE);
	if (kind == MAFSBX_REAP_PROXY) {
		const char *v1 = label(labels, MAFSBX_LABEL_KEY_V1);
		if (!role || strcmp(role, "proxy") != 0 || !v1)
			return 0;
		if (grow((void **)&acc->proxies, &acc->cap_proxies, acc->n_proxies, sizeof(*acc->proxies)) < 0)
			return -ENOMEM;
		struct proxy_key *p = &acc->proxies[acc->n_proxies];
		snprintf(p->sandbox, sizeof(p->sandbox), "%s", sandbox);
		p->kind = dup_or_null(label(labels, MAFSBX_LABEL_KIND));
		p->key_v1 = strdup(v1);
		if (!p->kind || !p->key_v1) {
			free(p->kind), free(p->key_v1);
			return -ENOMEM;
		}
		acc->n_proxies++;
		return 0;
	}
	if (kind != MAFSBX_REAP_WORKLOAD || role)
		return 0;
	if (grow((void **)&acc->rows, &acc->cap, acc->n, sizeof(*acc->rows)) < 0)
		return -ENOMEM;
	struct row *rw = &acc->rows[acc->n];
	memset(rw, 0, sizeof(*rw));
	snprintf(rw->name, sizeof(rw->name), "%s", name);
	const char *id = json_string_value(json_object_get(ent, "Id"));
	const char *state = json_string_value(json_object_get(ent, "State"));
	const char *image = json_string_value(json_object_get(ent, "Image"));
	rw->id = strdup(id ? id : "");
	rw->state = strdup(state ? state : "unknown");
	rw->image = strdup(image ? image : "");
	rw->kind = dup_or_null(label(labels, MAFSBX_LABEL_KIND));
	rw->created = json_integer_value(json_object_get(ent, "Created"));
	static const char *const which[4] = { MAFSBX_LABEL_SCOPE, MAFSBX_LABEL_THREAD, MAFSBX_LABEL_AGENT,
					      MAFSBX_LABEL_CALL };
	bool ok = rw->id && rw->state && rw->image && rw->kind;
	for (size_t k = 0; k < 4 && ok; k++) {
		const char *v = label(labels, which[k]);
		ok = !v || (rw->lab[k] = strdup(v));
	}
	const char *v1 = label(labels, MAFSBX_LABEL_KEY_V1);
	if (ok && v1)
		ok = (rw->key_v1 = strdup(v1)) != NULL;
	if (!ok) {
		row_free(rw);
		return -ENOMEM;
	}
	acc->n++;
	return 0;
}

static void acc_free(struct ls_acc *acc)
{
	for (size_t k = 0; k < acc->n; k++)
		row_free(&acc->rows[k]);
	for (size_t k = 0; k < acc->n_proxies; k++)
		free(acc->proxies[k].kind), free(acc->proxies[k].key_v1);
	free(acc->rows);
	free(acc->proxies);
	memset(acc, 0, sizeof(*acc));
}

/*
 * ONE container list call, the cheapest that holds reap's inventory (of
 * `scope` only, when given: mafsbx_list_filters), read as a stream into
 * rows, oldest first, what the filter leaves out checked as it streams. An
 * exit code.
 */
static int ls_rows(struct mafsbx_engine *e, const char *scope, struct ls_acc *acc)
{
	char lv[MAFSBX_LABEL_VALUE_MAX + 1];
	if (scope)
		mafsbx_label_value(scope, lv);
	acc->want[0] = scope ? lv : NULL;
	json_t *filters = mafsbx_list_filters(acc->want);
	if (!filters) {
		cli_error("ls: out of memory");
		return MAFSBX_EXIT_FAILURE;
	}
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	/* over a swarm: the manager's services, one call, shaped as this list's entries */
	int r = cli_clustered() ? cli_cluster_list_each(e, filters, ls_one, acc, &err)
				: mafsbx_container_list_each_keep(e, filters, true, 0, mafsbx_list_keys, ls_one, acc, &err);
	json_decref(filters);
	acc->want[0] = NULL;   /* lv goes */
	if (r < 0) {
		cli_error("ls: could not list containers: %s", err.message);
		return err.kind == MAFSBX_EK_NOMEM ? MAFSBX_EXIT_FAILURE : MAFSBX_EXIT_ENGINE;
	}
	if (acc->n_proxies > 1)
		qsort(acc->proxies, acc->n_proxies, sizeof(*acc->proxies), cmp_proxy);
	for (size_t k = 0; k < acc->n; k++)
		row_key(acc->proxies, acc->n_proxies, &acc->rows[k]);
	if (acc->n > 1)
		qsort(acc->rows, acc->n, sizeof(*acc->rows), cmp_row);
	return MAFSBX_EXIT_OK;
}

int cmd_ls(int argc, char **argv)
{
	const char *scope = NULL;
	bool json = false, quiet = false;
	enum ls_format format = LS_TABLE;
	const char *format_arg = NULL;
	struct cli_engine_args ea = { NULL, NULL };
	const struct cli_opt opts[] = {
		{ "scope", 0, CLI_STRING, &scope, 0, NULL },
		{ "json", 0, CLI_FLAG, &json, 0, NULL },
		{ "quiet", 'q', CLI_FLAG, &quiet, 0, NULL },
		{ "format", 0, CLI_STRING, &format_arg, 0, NULL },
	};
	const struct cli_command cmd = { "ls", ls_usage, opts, MAFSBX_ARRAY_SIZE(opts), &ea };
	int code = cli_parse_no_operands(&cmd, argc, argv);
	if (code != CLI_GO_ON)
		return code;
	if (quiet + json + (format_arg != NULL) > 1)
		return cli_usage_error("ls", "give one of -q, --format and --json");
	if (format_arg && parse_format(format_arg, &format) != 0)
		return MAFSBX_EXIT_USAGE;
	if (quiet)
		format = LS_QUIET;
	else if (json)
		format = LS_JSON_ARRAY;

	struct mafsbx_engine *e = cli_open_engine(ea.host, ea.context, &code);
	if (!e)
		return code;
	struct ls_acc acc = { 0 };
	code = ls_rows(e, scope, &acc);
	const struct row *rows = acc.rows;
	size_t n = acc.n;
	if (code == MAFSBX_EXIT_OK) {
		int64_t now = (int64_t)time(NULL);
		if (format == LS_TABLE) {
			print_table(rows, n, now);
		} else if (format == LS_QUIET) {
			print_names(rows, n);
		} else if (print_json(rows, n, now, format == LS_JSON_LINES) < 0) {
			cli_error("ls: out of memory");
			code = MAFSBX_EXIT_FAILURE;
		}
		fflush(stdout);
	}
	acc_free(&acc);
	mafsbx_engine_close(e);
	return code;
}
