/*
 * cmd_ls.c: `mafsbx ls`: every sandbox on the engine (a workload container
 * named maf-sandbox-docker-<12 hex> with the four identity labels and no
 * role), with its key, kind, state, age and image, from ONE container list
 * call. The key is decoded from a maf-sandbox.key.v1 label (the workload's,
 * else its proxy's, where upstream writes it) when it agrees with the
 * identity labels; otherwise the label values are shown as stored (digests
 * for long or unusual values). Needs no mount.
 */
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
		"Exit status: 0 done, 2 usage, 3 engine unreachable or the listing failed.\n");
}

struct row {
	char name[MAFSBX_NAME_LEN + 1];
	const char *id, *kind, *state, *image;
	int64_t created;
	/* the key: decoded strings (owned) or the stored label values (borrowed) */
	char *k_owned[4];
	const char *key[4];      /* scope, thread, agent, call */
	bool from_key_v1;
};

static const char *label(const json_t *labels, const char *k)
{
	return json_string_value(json_object_get(labels, k));
}

/*
 * Upstream's strict recovery (doc/upstream.md §2.3): key.v1 decodes to four strings, each of
 * scope/thread/agent maps to its label through label_value, and the call is
 * asymmetric (an empty call needs no call label, a non-empty one must match).
 */
static bool key_from_v1(const json_t *labels, const char *v1, char *out[4])
{
	if (!v1 || !v1[0])
		return false;
	char *k[4] = { NULL, NULL, NULL, NULL };
	if (mafsbx_key_attribution_decode(v1, &k[0], &k[1], &k[2], &k[3]) < 0)
		return false;
	static const char *const which[3] = { MAFSBX_LABEL_SCOPE, MAFSBX_LABEL_THREAD, MAFSBX_LABEL_AGENT };
	bool ok = true;
	char lv[MAFSBX_LABEL_VALUE_MAX + 1];
	for (size_t i = 0; i < 3 && ok; i++) {
		mafsbx_label_value(k[i], lv);
		const char *stored = label(labels, which[i]);
		ok = stored && strcmp(stored, lv) == 0;
	}
	if (ok) {
		const char *call = label(labels, MAFSBX_LABEL_CALL);
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

/* A workload's proxy's key.v1, when it decodes and agrees (upstream writes the key there). */
static bool key_from_proxy(json_t *list, const char *name, const json_t *labels, char *out[4])
{
	char proxy[MAFSBX_NAME_LEN + 8];
	mafsbx_proxy_name(name, proxy);
	size_t j;
	json_t *p;
	json_array_foreach(list, j, p) {
		const char *pn = json_string_value(json_array_get(json_object_get(p, "Names"), 0));
		const json_t *pl = json_object_get(p, "Labels");
		if (!pn || strcmp(pn[0] == '/' ? pn + 1 : pn, proxy) != 0 || !json_is_object(pl))
			continue;
		const char *role = label(pl, MAFSBX_LABEL_ROLE);
		if (!role || strcmp(role, "proxy") != 0 ||
		    !json_equal(json_object_get(pl, MAFSBX_LABEL_KIND), json_object_get(labels, MAFSBX_LABEL_KIND)))
			continue;
		return key_from_v1(labels, label(pl, MAFSBX_LABEL_KEY_V1), out);
	}
	return false;
}

/* The key of a row: decoded from key.v1 (this container's, else its proxy's), else the stored label values. */
static void row_key(json_t *list, const char *name, const json_t *labels, struct row *rw)
{
	rw->from_key_v1 = key_from_v1(labels, label(labels, MAFSBX_LABEL_KEY_V1), rw->k_owned) ||
			  key_from_proxy(list, name, labels, rw->k_owned);
	if (rw->from_key_v1) {
		for (size_t k = 0; k < 4; k++)
			rw->key[k] = rw->k_owned[k];
		return;
	}
	rw->key[0] = label(labels, MAFSBX_LABEL_SCOPE);
	rw->key[1] = label(labels, MAFSBX_LABEL_THREAD);
	rw->key[2] = label(labels, MAFSBX_LABEL_AGENT);
	rw->key[3] = label(labels, MAFSBX_LABEL_CALL);
	if (!rw->key[3])
		rw->key[3] = "";
}

/* Fill `rw` from one listed container; false (nothing written) when it is not a complete workload of ours. */
static bool row_from_entry(json_t *list, json_t *ent, struct row *rw)
{
	const char *name = json_string_value(json_array_get(json_object_get(ent, "Names"), 0));
	const json_t *labels = json_object_get(ent, "Labels");
	enum mafsbx_reap_kind kind;
	char sandbox[MAFSBX_NAME_LEN + 1];
	if (name && name[0] == '/')
		name++;
	if (!name || !json_is_object(labels) || !mafsbx_reap_parse_name(name, false, &kind, sandbox) ||
	    kind != MAFSBX_REAP_WORKLOAD || json_object_get(labels, MAFSBX_LABEL_ROLE) ||
	    !mafsbx_has_identity_labels(labels))
		return false;
	snprintf(rw->name, sizeof(rw->name), "%s", name);
	rw->id = json_string_value(json_object_get(ent, "Id"));
	rw->kind = label(labels, MAFSBX_LABEL_KIND);
	rw->state = json_string_value(json_object_get(ent, "State"));
	rw->image = json_string_value(json_object_get(ent, "Image"));
	rw->created = json_integer_value(json_object_get(ent, "Created"));
	if (!rw->id)
		rw->id = "";
	if (!rw->state)
		rw->state = "unknown";
	if (!rw->image)
		rw->image = "";
	row_key(list, name, labels, rw);
	return true;
}

/*
 * ONE container list call, filtered as reap's inventory (of `scope` only,
 * when given), into rows, oldest first. An exit code; the rows borrow from
 * *list (free both, even on failure).
 */
static int ls_rows(struct mafsbx_engine *e, const char *scope, json_t **list, struct row **rows, size_t *n)
{
	char lv[MAFSBX_LABEL_VALUE_MAX + 1];
	if (scope)
		mafsbx_label_value(scope, lv);
	json_t *filters = mafsbx_reap_filters(scope ? lv : NULL);
	if (!filters) {
		cli_error("ls: out of memory");
		return MAFSBX_EXIT_FAILURE;
	}
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_container_list(e, filters, true, list, &err);
	json_decref(filters);
	if (r < 0 || !json_is_array(*list)) {
		cli_error("ls: could not list containers: %s", err.message[0] ? err.message : "the answer is not an array");
		return MAFSBX_EXIT_ENGINE;
	}
	*rows = calloc(json_array_size(*list) + 1, sizeof(**rows));
	if (!*rows) {
		cli_error("ls: out of memory");
		return MAFSBX_EXIT_FAILURE;
	}
	size_t i;
	json_t *ent;
	json_array_foreach(*list, i, ent)
		if (row_from_entry(*list, ent, &(*rows)[*n]))
			(*n)++;
	if (*n)
		qsort(*rows, *n, sizeof(**rows), cmp_row);
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
	json_t *list = NULL;
	struct row *rows = NULL;
	size_t n = 0;
	code = ls_rows(e, scope, &list, &rows, &n);
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
	for (size_t k = 0; rows && k < n; k++)
		for (size_t m = 0; m < 4; m++)
			free(rows[k].k_owned[m]);
	free(rows);
	json_decref(list);
	mafsbx_engine_close(e);
	return code;
}
