/*
 * job.c: the on-disk form of a job (job.h): its JSON files written whole
 * (a temporary file renamed over the name, so a reader never sees half of
 * one, whoever crashes when), read back with a size bound, its markers, its
 * lock, and its removal. The files are the daemon's and the monitor's only
 * channel: nothing here trusts them more than a request (every field is
 * checked on read), though only this uid can write the directory.
 */
#include "job.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "buf.h"
#include "rundir.h"
#include "sbx_internal.h"

/* A job's JSON files are small; the spec with its stdin is the largest. */
#define JOB_JSON_MAX (16u << 20)

char *mafsbx_jobs_dir(struct mafsbx_error *err)
{
	__do_free char *run = mafsbx_rundir_choose(NULL);
	if (!run) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	size_t n = strlen(run) + sizeof("/jobs");
	char *dir = malloc(n);
	if (!dir) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	snprintf(dir, n, "%s/jobs", run);
	if (mafsbx_rundir_ensure(dir, err) < 0) {
		free(dir);
		return NULL;
	}
	return dir;
}

static int write_json(int dirfd, const char *name, json_t *o, struct mafsbx_error *err)
{
	if (!o)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "job %s: out of memory", name);
	char tmp[64];
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "job %s: cannot write it: %s", name,
					     strerror(errno));
	int r = json_dumpfd(o, fd, JSON_COMPACT);
	int e = r < 0 ? EIO : 0;
	if (close(fd) < 0 && !e)
		e = errno;
	if (!e && renameat(dirfd, tmp, dirfd, name) < 0)
		e = errno;
	if (e) {
		unlinkat(dirfd, tmp, 0);
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, NULL, "job %s: cannot write it: %s", name,
					     strerror(e));
	}
	return 0;
}

static json_t *read_json(int dirfd, const char *name, struct mafsbx_error *err)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		mafsbx_error_set_full(err, errno == ENOENT ? MAFSBX_EK_NO_PATH : MAFSBX_EK_SYSTEM, errno, NULL,
				      "job %s: cannot read it: %s", name, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > JOB_JSON_MAX) {
		close(fd);
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "job %s: not a file of at most %u bytes", name, JOB_JSON_MAX);
		return NULL;
	}
	json_error_t je;
	json_t *o = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	close(fd);
	if (!json_is_object(o)) {
		json_decref(o);
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "job %s: not a JSON object (%s)", name, je.text);
		return NULL;
	}
	return o;
}

/* Copy a string member into out (at most size - 1 bytes). -1 when missing or too long. */
static int get_str(const json_t *o, const char *key, char *out, size_t size)
{
	const char *s = json_string_value(json_object_get(o, key));
	if (!s || strlen(s) >= size)
		return -1;
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

int mafsbx_job_meta_write(int dirfd, const struct mafsbx_job_meta *m, struct mafsbx_error *err)
{
	json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:b, s:s, s:I, s:I}", "version", MAFSBX_JOB_VERSION, "job",
			      m->job, "sandbox", m->sandbox, "container", m->container, "endpoint", m->endpoint,
			      "cluster", m->cluster, "scope", m->scope, "started", (json_int_t)m->started_s,
			      "stream_cap", (json_int_t)m->stream_cap);
	int r = write_json(dirfd, "meta", o, err);
	json_decref(o);
	return r;
}

int mafsbx_job_meta_read(int dirfd, struct mafsbx_job_meta *m, struct mafsbx_error *err)
{
	__do_json json_t *o = read_json(dirfd, "meta", err);
	if (!o)
		return -(err ? err->err : EINVAL);
	memset(m, 0, sizeof(*m));
	json_t *v = json_object_get(o, "version"), *s = json_object_get(o, "started"), *c = json_object_get(o, "stream_cap");
	if (json_integer_value(v) != MAFSBX_JOB_VERSION || !json_is_integer(s) || !json_is_integer(c) ||
	    json_integer_value(c) < 0 || get_str(o, "job", m->job, sizeof(m->job)) < 0 ||
	    get_str(o, "sandbox", m->sandbox, sizeof(m->sandbox)) < 0 ||
	    get_str(o, "container", m->container, sizeof(m->container)) < 0 ||
	    get_str(o, "endpoint", m->endpoint, sizeof(m->endpoint)) < 0 ||
	    get_str(o, "scope", m->scope, sizeof(m->scope)) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "job meta: not of version %d, or a field is missing",
					MAFSBX_JOB_VERSION);
	/* absent in a job of one engine's mount made before swarms were served: false */
	m->cluster = json_is_true(json_object_get(o, "cluster"));
	m->started_s = json_integer_value(s);
	m->stream_cap = (uint64_t)json_integer_value(c);
	return 0;
}

int mafsbx_job_spec_write(int dirfd, const struct mafsbx_exec_spec *s, struct mafsbx_error *err)
{
	__do_free char *in = s->has_stdin ? mafsbx_base64_encode(s->stdin_data ? s->stdin_data : (const unsigned char *)"",
								  s->stdin_len, 0)
					  : NULL;
	if (s->has_stdin && !in)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "job spec: out of memory");
	json_t *o = json_pack("{s:s, s:o, s:o, s:s, s:I, s:b}", "sandbox", s->sandbox, "argv", mafsbx_sbx_str_array(s->argv, s->argc),
			      "env", mafsbx_sbx_str_array(s->env, s->n_env), "cwd", s->cwd, "timeout_ms", (json_int_t)s->timeout_ms,
			      "dispose_on_timeout", s->on_timeout == MAFSBX_ON_TIMEOUT_DISPOSE);
	if (o && s->user && json_object_set_new(o, "user", json_string(s->user)) < 0)
		json_object_clear(o);
	if (o && in && json_object_set_new(o, "stdin_b64", json_string(in)) < 0)
		json_object_clear(o);
	int r = write_json(dirfd, "spec", json_object_size(o) ? o : NULL, err);
	json_decref(o);
	return r;
}

/* A JSON array of strings as a NULL-terminated vector. -1 when not that. */
static int strv_get(const json_t *a, char ***out, size_t *n)
{
	if (!json_is_array(a))
		return -1;
	size_t k = json_array_size(a);
	char **v = calloc(k + 1, sizeof(*v));
	if (!v)
		return -1;
	*out = v;
	for (size_t i = 0; i < k; i++) {
		const char *s = json_string_value(json_array_get(a, i));
		if (!s || !(v[i] = strdup(s)))
			return -1;
		*n = i + 1;
	}
	return 0;
}

static int spec_fields(const json_t *o, struct mafsbx_exec_spec *s)
{
	const char *sb = json_string_value(json_object_get(o, "sandbox"));
	const char *cwd = json_string_value(json_object_get(o, "cwd"));
	const char *user = json_string_value(json_object_get(o, "user"));
	const char *in = json_string_value(json_object_get(o, "stdin_b64"));
	json_t *t = json_object_get(o, "timeout_ms");
	if (!sb || !cwd || !json_is_integer(t) || json_integer_value(t) <= 0 || !(s->sandbox = strdup(sb)) ||
	    !(s->cwd = strdup(cwd)) || (user && !(s->user = strdup(user))))
		return -1;
	s->timeout_ms = (long)json_integer_value(t);
	s->on_timeout = json_is_true(json_object_get(o, "dispose_on_timeout")) ? MAFSBX_ON_TIMEOUT_DISPOSE
										: MAFSBX_ON_TIMEOUT_KILL;
	s->detach = true;
	if (strv_get(json_object_get(o, "argv"), &s->argv, &s->argc) < 0 || !s->argc)
		return -1;
	json_t *env = json_object_get(o, "env");
	if (json_array_size(env) && strv_get(env, &s->env, &s->n_env) < 0)
		return -1;
	if (in) {
		s->has_stdin = true;
		if (mafsbx_base64_decode(in, strlen(in), 0, &s->stdin_data, &s->stdin_len) < 0)
			return -1;
	}
	return 0;
}

int mafsbx_job_spec_read(int dirfd, struct mafsbx_exec_spec **out, struct mafsbx_error *err)
{
	__do_json json_t *o = read_json(dirfd, "spec", err);
	if (!o)
		return -(err ? err->err : EINVAL);
	struct mafsbx_exec_spec *s = calloc(1, sizeof(*s));
	if (!s || spec_fields(o, s) < 0) {
		mafsbx_exec_spec_free(s);
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "job spec: a field is missing or wrong");
	}
	s->shell = false;
	*out = s;
	return 0;
}

int mafsbx_job_status_write(int dirfd, const struct mafsbx_job_status *st, struct mafsbx_error *err)
{
	json_t *o = json_pack("{s:i, s:b, s:b, s:b, s:b, s:I}", "exit_code", st->exit_code, "timed_out", st->timed_out,
			      "sandbox_disposed", st->disposed, "launch_failed", st->launch_failed, "truncated",
			      st->truncated, "duration_ms", (json_int_t)st->duration_ms);
	if (o && st->error.err &&
	    json_object_set_new(o, "error", json_pack("{s:i, s:i, s:s, s:s}", "kind", (int)st->error.kind, "errno",
						      st->error.err, "type", st->error.type, "message",
						      st->error.message)) < 0)
		json_object_clear(o);
	int r = write_json(dirfd, "status", json_object_size(o) ? o : NULL, err);
	json_decref(o);
	return r;
}

static void status_error(const json_t *e, struct mafsbx_error *out)
{
	mafsbx_error_clear(out);
	json_t *err = json_object_get(e, "errno");
	if (!json_is_integer(err) || json_integer_value(err) <= 0 || json_integer_value(err) > 4095)
		return;
	out->err = (int)json_integer_value(err);
	out->kind = (enum mafsbx_err_kind)json_integer_value(json_object_get(e, "kind"));
	const char *m = json_string_value(json_object_get(e, "message"));
	const char *t = json_string_value(json_object_get(e, "type"));
	snprintf(out->message, sizeof(out->message), "%s", m ? m : "the job failed");
	snprintf(out->type, sizeof(out->type), "%s", t ? t : "");
}

int mafsbx_job_status_read(int dirfd, struct mafsbx_job_status *st, struct mafsbx_error *err)
{
	memset(st, 0, sizeof(*st));
	st->exit_code = -1;
	if (faccessat(dirfd, "status", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return -ENOENT;
	__do_json json_t *o = read_json(dirfd, "status", err);
	if (!o)
		return -(err ? err->err : EINVAL);
	json_t *x = json_object_get(o, "exit_code"), *d = json_object_get(o, "duration_ms");
	if (!json_is_integer(x) || !json_is_integer(d))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "job status: exit_code or duration_ms missing");
	st->exit_code = json_integer_value(x) >= -1 && json_integer_value(x) <= 255 ? (int)json_integer_value(x) : -1;
	st->duration_ms = json_integer_value(d);
	st->timed_out = json_is_true(json_object_get(o, "timed_out"));
	st->disposed = json_is_true(json_object_get(o, "sandbox_disposed"));
	st->launch_failed = json_is_true(json_object_get(o, "launch_failed"));
	st->truncated = json_is_true(json_object_get(o, "truncated"));
	status_error(json_object_get(o, "error"), &st->error);
	return 0;
}

int mafsbx_job_exec_write(int dirfd, const char *exec_id, struct mafsbx_error *err)
{
	json_t *o = json_pack("{s:s}", "exec", exec_id);
	int r = write_json(dirfd, "exec", o, err);
	json_decref(o);
	return r;
}

void mafsbx_job_exec_read(int dirfd, char exec_id[65])
{
	exec_id[0] = '\0';
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	__do_json json_t *o = read_json(dirfd, "exec", &e);
	if (o && get_str(o, "exec", exec_id, 65) < 0)
		exec_id[0] = '\0';
}

int mafsbx_job_mark(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

bool mafsbx_job_marked(int dirfd, const char *name)
{
	return faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

bool mafsbx_job_alive(int dirfd)
{
	int fd = openat(dirfd, "lock", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;   /* no lock file: no monitor ever took it */
	/* a new open file description: our own shared lock conflicts with the monitor's */
	bool held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

int mafsbx_job_remove(int parentfd, const char *name)
{
	int fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	return unlinkat(parentfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}
