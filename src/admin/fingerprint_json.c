/*
 * fingerprint_json.c: the JSON form of a snapshot (fingerprint.h,
 * MAFSBX_FP_FORMAT): writing one, and reading one back checked whole, each
 * entry and process refused by its item number when it is incomplete.
 */
#include "fingerprint.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fingerprint_internal.h"

static json_t *time_json(int64_t s, uint32_t ns)
{
	char b[48];
	snprintf(b, sizeof(b), "%" PRId64 ".%09" PRIu32, s, ns);
	return json_string(b);
}

json_t *mafsbx_fp_to_json(const struct mafsbx_fp *fp)
{
	__do_json json_t *mounts = json_array();
	__do_json json_t *entries = json_array();
	__do_json json_t *procs = json_array();
	__do_json json_t *o = json_object();
	if (!o || !mounts || !entries || !procs)
		return NULL;
	for (size_t i = 0; i < fp->n_mounts; i++)
		json_array_append_new(mounts, json_pack("{s:s, s:s, s:b}", "path", fp->mounts[i].path, "type",
							fp->mounts[i].fstype, "ro", fp->mounts[i].ro));
	for (size_t i = 0; i < fp->n_entries; i++) {
		const struct mafsbx_fp_entry *e = &fp->entries[i];
		char mode[8];
		snprintf(mode, sizeof(mode), "%04o", e->mode);
		json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:o}", "path", e->path, "type",
				      mafsbx_fp_type_name(e->type), "mode", mode, "uid", (json_int_t)e->uid, "gid",
				      (json_int_t)e->gid, "size", (json_int_t)e->size, "mtime",
				      time_json(e->mtime_s, e->mtime_ns), "ctime", time_json(e->ctime_s, e->ctime_ns));
		if (!j)
			return NULL;
		if (e->target)
			json_object_set_new(j, "target", json_string(e->target));
		if (e->sha256[0])
			json_object_set_new(j, "sha256", json_string(e->sha256));
		if (e->changing)
			json_object_set_new(j, "changing", json_true());
		if (e->type == MAFSBX_FP_CHAR || e->type == MAFSBX_FP_BLOCK) {
			char dev[32];
			snprintf(dev, sizeof(dev), "%" PRIu32 ":%" PRIu32, e->rdev_major, e->rdev_minor);
			json_object_set_new(j, "rdev", json_string(dev));
		}
		json_array_append_new(entries, j);
	}
	for (size_t i = 0; i < fp->n_procs; i++) {
		const struct mafsbx_fp_process *p = &fp->procs[i];
		json_t *argv = json_array();
		for (size_t k = 0; argv && k < p->argc; k++)
			json_array_append_new(argv, json_string(p->argv[k]));
		json_t *j = json_pack("{s:I, s:I, s:o}", "pid", (json_int_t)p->pid, "start", (json_int_t)p->start,
				      "cmdline", argv);
		if (!j)
			return NULL;
		if (p->truncated)
			json_object_set_new(j, "truncated", json_true());
		if (p->zombie)
			json_object_set_new(j, "zombie", json_true());
		if (p->name)
			json_object_set_new(j, "name", json_string(p->name));
		json_array_append_new(procs, j);
	}
	json_object_set_new(o, "format", json_string(MAFSBX_FP_FORMAT));
	json_object_set_new(o, "container", json_pack("{s:s, s:s, s:s}", "id", fp->id, "name", fp->name ? fp->name : "",
						     "started_at", fp->started_at));
	json_object_set_new(o, "taken_at", json_string(fp->taken_at));
	json_object_set_new(o, "limits", json_pack("{s:I, s:I, s:I, s:I}", "max_entries",
						  (json_int_t)fp->limits.max_entries, "max_hash_bytes",
						  (json_int_t)fp->limits.max_hash_bytes, "max_ms",
						  (json_int_t)fp->limits.max_ms, "max_depth",
						  (json_int_t)fp->limits.max_depth));
	json_object_set_new(o, "stats", json_pack("{s:I, s:I, s:I, s:I}", "entries", (json_int_t)fp->n_entries,
						 "processes", (json_int_t)fp->n_procs, "bytes_hashed",
						 (json_int_t)fp->bytes_hashed, "duration_ms",
						 (json_int_t)fp->duration_ms));
	json_object_set_new(o, "mounts", move_ptr(mounts));
	json_object_set_new(o, "entries", move_ptr(entries));
	json_object_set_new(o, "processes", move_ptr(procs));
	return move_ptr(o);
}

static int bad_json(struct mafsbx_error *err, const char *what, size_t i)
{
	return mafsbx_error_set(err, MAFSBX_EK_INVALID, "not a %s snapshot: %s (item %zu)", MAFSBX_FP_FORMAT, what, i);
}

static bool parse_time(json_t *v, int64_t *s, uint32_t *ns)
{
	const char *t = json_string_value(v);
	if (!t)
		return false;
	char *end;
	errno = 0;
	long long a = strtoll(t, &end, 10);
	if (errno || *end != '.' || strlen(end + 1) != 9)
		return false;
	char *e2;
	unsigned long b = strtoul(end + 1, &e2, 10);
	if (*e2 || b > 999999999ul)
		return false;
	*s = a;
	*ns = (uint32_t)b;
	return true;
}

static char *dup_str(json_t *v)
{
	const char *s = json_string_value(v);
	return s ? strdup(s) : NULL;
}

static int mounts_from_json(struct mafsbx_fp *fp, json_t *mounts, struct mafsbx_error *err)
{
	size_t i;
	json_t *v;
	if (json_array_size(mounts) && !(fp->mounts = calloc(json_array_size(mounts), sizeof(*fp->mounts))))
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	json_array_foreach(mounts, i, v) {
		struct mafsbx_fp_mount *m = &fp->mounts[fp->n_mounts++];
		m->path = dup_str(json_object_get(v, "path"));
		m->fstype = dup_str(json_object_get(v, "type"));
		m->ro = json_is_true(json_object_get(v, "ro"));
		if (!m->path || !m->fstype)
			return bad_json(err, "a mount lacks path or type", i);
	}
	return 0;
}

/* Entry `i` of "entries", checked whole, added to fp. */
static int entry_from_json(struct mafsbx_fp *fp, json_t *v, size_t i, struct mafsbx_error *err)
{
	struct mafsbx_fp_entry e;
	memset(&e, 0, sizeof(e));
	const char *mode = json_string_value(json_object_get(v, "mode"));
	const char *sha = json_string_value(json_object_get(v, "sha256"));
	const char *rdev = json_string_value(json_object_get(v, "rdev"));
	e.type = mafsbx_fp_type_from_name(json_string_value(json_object_get(v, "type")));
	e.path = dup_str(json_object_get(v, "path"));
	e.target = dup_str(json_object_get(v, "target"));
	char *mend = NULL;
	unsigned long mv = mode ? strtoul(mode, &mend, 8) : 0;
	bool ok = e.path && e.type && mode && *mend == '\0' && mv <= 07777 &&
		  json_is_integer(json_object_get(v, "uid")) && json_is_integer(json_object_get(v, "gid")) &&
		  json_is_integer(json_object_get(v, "size")) &&
		  parse_time(json_object_get(v, "mtime"), &e.mtime_s, &e.mtime_ns) &&
		  parse_time(json_object_get(v, "ctime"), &e.ctime_s, &e.ctime_ns) && (!sha || strlen(sha) == 64) &&
		  (e.type != MAFSBX_FP_LINK || e.target);
	if (rdev && sscanf(rdev, "%" SCNu32 ":%" SCNu32, &e.rdev_major, &e.rdev_minor) != 2)
		ok = false;
	if (!ok) {
		mafsbx_fp_entry_clear(&e);
		return bad_json(err, "an entry is incomplete", i);
	}
	e.mode = (uint32_t)mv;
	e.uid = (uint32_t)json_integer_value(json_object_get(v, "uid"));
	e.gid = (uint32_t)json_integer_value(json_object_get(v, "gid"));
	e.size = (uint64_t)json_integer_value(json_object_get(v, "size"));
	if (sha)
		memcpy(e.sha256, sha, 65);
	e.changing = json_is_true(json_object_get(v, "changing"));
	if (mafsbx_fp_add_entry(fp, &e) < 0) {
		mafsbx_fp_entry_clear(&e);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	return 0;
}

/* Process `i` of "processes", checked whole, added to fp. */
static int process_from_json(struct mafsbx_fp *fp, json_t *v, size_t i, struct mafsbx_error *err)
{
	struct mafsbx_fp_process p;
	memset(&p, 0, sizeof(p));
	json_t *argv = json_object_get(v, "cmdline"), *a;
	if (!json_is_integer(json_object_get(v, "pid")) || !json_is_integer(json_object_get(v, "start")) ||
	    !json_is_array(argv))
		return bad_json(err, "a process lacks pid, start or cmdline", i);
	p.pid = json_integer_value(json_object_get(v, "pid"));
	p.start = (unsigned long long)json_integer_value(json_object_get(v, "start"));
	p.truncated = json_is_true(json_object_get(v, "truncated"));
	p.zombie = json_is_true(json_object_get(v, "zombie"));
	json_t *name = json_object_get(v, "name");
	if (name && !json_is_string(name))
		return bad_json(err, "a process name is not a string", i);
	/* optional: snapshots written before the name was kept have none */
	if (name && !(p.name = dup_str(name)))
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (json_array_size(argv) && !(p.argv = calloc(json_array_size(argv), sizeof(*p.argv)))) {
		mafsbx_fp_proc_clear(&p);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	size_t k;
	bool ok = true;
	json_array_foreach(argv, k, a) {
		if (!(p.argv[p.argc] = dup_str(a))) {
			ok = false;
			break;
		}
		p.argc++;
	}
	if (!ok || mafsbx_fp_add_process(fp, &p) < 0) {
		mafsbx_fp_proc_clear(&p);
		return ok ? mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory")
			  : bad_json(err, "a command-line word is not a string", i);
	}
	return 0;
}

int mafsbx_fp_from_json(const json_t *j, struct mafsbx_fp **out, struct mafsbx_error *err)
{
	*out = NULL;
	const char *fmt = json_string_value(json_object_get(j, "format"));
	if (!fmt || strcmp(fmt, MAFSBX_FP_FORMAT))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "not a %s snapshot (its \"format\" is %s)",
					MAFSBX_FP_FORMAT, fmt ? "another" : "missing");
	json_t *mounts = json_object_get(j, "mounts"), *entries = json_object_get(j, "entries"),
	       *procs = json_object_get(j, "processes");
	if (!json_is_array(mounts) || !json_is_array(entries) || !json_is_array(procs))
		return bad_json(err, "mounts, entries or processes is not an array", 0);
	struct mafsbx_fp *fp = calloc(1, sizeof(*fp));
	if (!fp)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	json_t *c = json_object_get(j, "container");
	snprintf(fp->id, sizeof(fp->id), "%s", json_string_value(json_object_get(c, "id")) ?: "");
	snprintf(fp->started_at, sizeof(fp->started_at), "%s",
		 json_string_value(json_object_get(c, "started_at")) ?: "");
	snprintf(fp->taken_at, sizeof(fp->taken_at), "%s", json_string_value(json_object_get(j, "taken_at")) ?: "");
	fp->name = strdup(json_string_value(json_object_get(c, "name")) ?: "");
	json_t *st = json_object_get(j, "stats");
	fp->bytes_hashed = (uint64_t)json_integer_value(json_object_get(st, "bytes_hashed"));
	fp->duration_ms = json_integer_value(json_object_get(st, "duration_ms"));
	int r = mounts_from_json(fp, mounts, err);
	size_t i;
	for (i = 0; r == 0 && i < json_array_size(entries); i++)
		r = entry_from_json(fp, json_array_get(entries, i), i, err);
	for (i = 0; r == 0 && i < json_array_size(procs); i++)
		r = process_from_json(fp, json_array_get(procs, i), i, err);
	if (r < 0) {
		mafsbx_fp_free(fp);
		return r;
	}
	mafsbx_fp_sort(fp);
	*out = fp;
	return 0;
}
