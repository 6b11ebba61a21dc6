/*
 * acquire.c: get-or-create the sandbox of a key and kind (doc/upstream.md §4):
 * under one lock per container name, check the work-dir label of what is
 * there, thaw a container a dead process left paused (never a live freeze),
 * re-ask the engine's OS on cold paths, then reuse a running container,
 * start a stopped one (a failed start: remove and recreate), or create a
 * missing one (pulling an absent image first; a name conflict with another
 * process is adopted). A container we create is hardened (no network, or
 * for an allowlist its own internal network built and proven by egress.c,
 * no-new-privileges, a pids limit, opt-in cap-drop/memory/cpus, no mounts
 * of any kind, `sleep infinity` as keep-alive) and read back with inspect,
 * because the engine silently drops fields it does not know. Then the
 * guest identity, the capability probes and the work directory.
 *
 * The warm path (a running sandbox whose identity and probes are cached)
 * costs the one inspect of step 1 and nothing else on an engine of this
 * host: the work directory, prepared on every acquire (doc/upstream.md §4.8), is
 * checked from the container's root without a freeze (warm_base_present);
 * on a remote engine by one HEAD per component, still without a freeze
 * (warm_base_heads). A base that is missing or wrong is made (or refused)
 * by the local plane beneath the pinned root with no freeze, where it serves
 * the container (mafsbx_backend_set_base_preparer), else by the frozen path.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "pin.h"
#include "egress.h"
#include "files.h"
#include "guestpath.h"
#include "log.h"
#include "sbx_internal.h"
#include "names.h"

#ifdef MAFSBX_TEST_KNOBS
void (*sbx_test_before_create)(const char *name, void *ctx);
void *sbx_test_before_create_ctx;
#endif

json_t *mafsbx_sbx_str_array(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static bool array_has(json_t *a, const char *s, bool prefix_ok)
{
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) {
		const char *t = json_string_value(v);
		if (!t)
			continue;
		if (strcasecmp(t, s) == 0)
			return true;
		/* "no-new-privileges:true" is the same option */
		if (prefix_ok && strncasecmp(t, s, strlen(s)) == 0 && (strcasecmp(t + strlen(s), ":true") == 0 ||
									 strcasecmp(t + strlen(s), "=true") == 0))
			return true;
	}
	return false;
}

static bool empty_or_null(json_t *v)
{
	return !v || json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0) ||
	       (json_is_object(v) && json_object_size(v) == 0);
}

static int64_t nano_cpus(double cpus)
{
	return (int64_t)(cpus * 1e9 + 0.5);
}

json_t *mafsbx_sbx_create_labels(const struct mafsbx_acquire_spec *spec)
{
	__do_json json_t *labels = mafsbx_workload_labels(&spec->key, spec->kind, spec->labels, spec->work_dir);
	__do_free char *attribution = mafsbx_key_attribution(&spec->key);
	__do_json json_t *outputs = mafsbx_sbx_str_array(spec->outputs, spec->n_outputs);
	__do_free char *outputs_text = outputs ? json_dumps(outputs, JSON_COMPACT) : NULL;
	if (!labels || !attribution || !outputs_text)
		return NULL;
	/* key.v1 on the workload too (upstream writes it on the proxy only): it lets a mount show the
	 * key behind digested labels. An extra label changes nothing for a Python host. */
	if (json_object_set_new(labels, MAFSBX_LABEL_KEY_V1, json_string(attribution)) < 0 ||
	    json_object_set_new(labels, MAFSBX_LABEL_OUTPUTS, json_string(outputs_text)) < 0)
		return NULL;
	return move_ptr(labels);
}

/* The create body; NULL when out of memory (a label or setting that could not be added included). */
static json_t *create_config(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *image,
			     const char *egress_name)
{
	__do_json json_t *labels = mafsbx_sbx_create_labels(spec);
	if (!labels)
		return NULL;

	json_t *hc = json_pack("{s:s, s:[s]}", "NetworkMode", "none", "SecurityOpt", "no-new-privileges");
	if (!hc)
		return NULL;
	int r = 0;
	if (b->cfg.pids_limit > 0)
		r |= json_object_set_new(hc, "PidsLimit", json_integer(b->cfg.pids_limit));
	if (b->cfg.cap_drop_all)
		r |= json_object_set_new(hc, "CapDrop", json_pack("[s]", "ALL"));
	if (b->cfg.memory_bytes > 0) {
		r |= json_object_set_new(hc, "Memory", json_integer(b->cfg.memory_bytes));
		r |= json_object_set_new(hc, "MemorySwap", json_integer(b->cfg.memory_bytes));
	}
	if (b->cfg.cpus > 0)
		r |= json_object_set_new(hc, "NanoCpus", json_integer(nano_cpus(b->cfg.cpus)));
	__do_json json_t *cfg = json_pack("{s:s, s:[s,s], s:O, s:b, s:b, s:b, s:b, s:b, s:o}", "Image", image, "Cmd",
					  "sleep", "infinity", "Labels", labels, "AttachStdin", 0, "AttachStdout", 0,
					  "AttachStderr", 0, "Tty", 0, "OpenStdin", 0, "HostConfig", hc);
	if (!cfg || r)
		return NULL;
	if (spec->env && spec->n_env && json_object_set_new(cfg, "Env", mafsbx_sbx_str_array(spec->env, spec->n_env)) < 0)
		return NULL;
	/* allowlist: on NAME-net only, the proxy variables after the caller's, IPv6 off */
	if (egress_name && mafsbx_sbx_egress_workload_config(egress_name, cfg) < 0)
		return NULL;
	return move_ptr(cfg);
}

/* The hardening of a container we created, as the engine recorded it. "" when all took. */
/* False when the engine said it cannot apply a pids limit (no cgroups): acquire then warns instead. */
static bool sbx_pids_limit_applies(struct mafsbx_backend *b)
{
	pthread_mutex_lock(&b->mu);
	bool no = b->cg_known && !b->cg.pids_limit;
	pthread_mutex_unlock(&b->mu);
	return !no;
}

static void check_hardening(struct mafsbx_backend *b, json_t *insp, const char *egress_name, char *why, size_t whysz)
{
	json_t *hc = json_object_get(insp, "HostConfig");
	const char *nm = json_string_value(json_object_get(hc, "NetworkMode"));
	char want_net[MAFSBX_NAME_LEN + 8] = "none";
	if (egress_name)
		mafsbx_network_name(egress_name, want_net);
	const char *v6 = json_string_value(
		json_object_get(json_object_get(hc, "Sysctls"), "net.ipv6.conf.all.disable_ipv6"));
	const char *dns = json_string_value(json_array_get(json_object_get(hc, "Dns"), 0));
	why[0] = '\0';
	if (!hc)
		snprintf(why, whysz, "no HostConfig");
	else if (!nm || strcmp(nm, want_net) != 0)
		snprintf(why, whysz, "NetworkMode is %s, not %s", nm ? nm : "unset", want_net);
	else if (egress_name && (!v6 || strcmp(v6, "1") != 0))
		snprintf(why, whysz, "the sysctl net.ipv6.conf.all.disable_ipv6 is not 1");
	else if (egress_name && (json_array_size(json_object_get(hc, "Dns")) != 1 || !dns ||
				 strcmp(dns, MAFSBX_EGRESS_DNS_SINK) != 0))
		snprintf(why, whysz, "the DNS server is not %s", MAFSBX_EGRESS_DNS_SINK);
	else if (!array_has(json_object_get(hc, "SecurityOpt"), "no-new-privileges", true))
		snprintf(why, whysz, "SecurityOpt lacks no-new-privileges");
	else if (b->cfg.pids_limit > 0 && sbx_pids_limit_applies(b) &&
		 json_integer_value(json_object_get(hc, "PidsLimit")) != (json_int_t)b->cfg.pids_limit)
		snprintf(why, whysz, "PidsLimit is not %ld", b->cfg.pids_limit);
	else if (b->cfg.cap_drop_all && !array_has(json_object_get(hc, "CapDrop"), "ALL", false))
		snprintf(why, whysz, "CapDrop lacks ALL");
	else if (b->cfg.memory_bytes > 0 &&
		 (json_integer_value(json_object_get(hc, "Memory")) != (json_int_t)b->cfg.memory_bytes ||
		  json_integer_value(json_object_get(hc, "MemorySwap")) != (json_int_t)b->cfg.memory_bytes))
		snprintf(why, whysz, "Memory/MemorySwap are not %lld", (long long)b->cfg.memory_bytes);
	else if (b->cfg.cpus > 0 &&
		 json_integer_value(json_object_get(hc, "NanoCpus")) != (json_int_t)nano_cpus(b->cfg.cpus))
		snprintf(why, whysz, "NanoCpus is not %lld", (long long)nano_cpus(b->cfg.cpus));
	else if (!empty_or_null(json_object_get(hc, "Binds")) || !empty_or_null(json_object_get(hc, "Mounts")) ||
		 !empty_or_null(json_object_get(hc, "Tmpfs")) || !empty_or_null(json_object_get(insp, "Mounts")) ||
		 !empty_or_null(json_object_get(json_object_get(insp, "Config"), "Volumes")))
		snprintf(why, whysz, "the container has mounts or volumes (from the image?)");
	else if (json_is_true(json_object_get(hc, "Privileged")))
		snprintf(why, whysz, "the container is privileged");
}

static void remove_quietly(struct mafsbx_backend *b, const char *id_or_name)
{
	struct mafsbx_error e;
	if (mafsbx_container_delete(b->engine, id_or_name, true, &e) < 0 && e.kind != MAFSBX_EK_NO_CONTAINER)
		log_warn("could not remove container %s: %s", id_or_name, e.message);
	mafsbx_sbx_facts_drop(b, NULL, id_or_name);
}

/* Make sure `image` is present: inspect, else an explicit pull with the pull timeout. */
static int ensure_image(struct mafsbx_backend *b, const char *image, struct mafsbx_error *err)
{
	json_t *img = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_image_inspect(b->engine, image, &img, &e);
	json_decref(img);
	if (r == 0)
		return 0;
	if (e.kind != MAFSBX_EK_NO_IMAGE) {
		if (err)
			*err = e;
		mafsbx_error_prefix(err, "could not inspect image %s", image);
		return r;
	}
	log_info("image %s is absent: pulling it", image);
	mafsbx_error_clear(&e);
	r = mafsbx_image_pull_watch(b->engine, image, b->cfg.on_pull_line, b->cfg.pull_ctx, &e);
	if (r < 0)
		return mafsbx_error_set(err, e.kind == MAFSBX_EK_TIMEOUT || e.kind == MAFSBX_EK_UNREACHABLE ? e.kind
														: MAFSBX_EK_NO_IMAGE,
					"could not pull image %s: %s", image, e.message);
	return 0;
}

struct acq {
	char id[65];
	enum mafsbx_acquire_state state;
	json_t *insp;            /* the current container's inspect */
	bool present, running;   /* what step 1 found under the name */
	bool thawed;             /* a paused orphan was thawed */
};

static int inspect_into(struct mafsbx_backend *b, const char *ref, struct acq *a, struct mafsbx_error *err)
{
	json_t *j = NULL;
	int r = mafsbx_container_inspect(b->engine, ref, &j, err);
	if (r < 0)
		return r;
	json_decref(a->insp);
	a->insp = j;
	const char *id = json_string_value(json_object_get(j, "Id"));
	snprintf(a->id, sizeof(a->id), "%s", id ? id : "");
	return 0;
}

/* Create (or adopt on a name conflict). On success a->insp/a->id/a->state are set. */
static int create_container(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *image,
			    const char *name, bool allowlist, struct acq *a, struct mafsbx_error *err)
{
	int r = ensure_image(b, image, err);
	if (r < 0)
		return r;
	json_t *cfg = create_config(b, spec, image, allowlist ? name : NULL);
	if (!cfg)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	mafsbx_sbx_facts_drop(b, name, NULL);
#ifdef MAFSBX_TEST_KNOBS
	if (sbx_test_before_create)
		sbx_test_before_create(name, sbx_test_before_create_ctx);
#endif
	char id[65] = "";
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	r = mafsbx_container_create(b->engine, name, cfg, id, &e);
	json_decref(cfg);
	if (r < 0 && e.kind == MAFSBX_EK_CONFLICT) {
		/* another process made it meanwhile: adopt it when it runs or starts */
		log_info("sandbox %s: name in use, adopting the existing container", name);
		struct mafsbx_error e2;
		mafsbx_error_clear(&e2);
		/* The engine reserves a name before the container is registered: for a moment
		 * the winner's create answers 409 to us while inspect still says 404. */
		long long until = mafsbx_now_ms() + (b->cfg.command_timeout_ms < 5000 ? b->cfg.command_timeout_ms : 5000);
		while ((r = inspect_into(b, name, a, &e2)) < 0 && e2.kind == MAFSBX_EK_NO_CONTAINER &&
		       mafsbx_now_ms() < until)
			usleep(20 * 1000);
		if (r < 0)
			return mafsbx_error_set(err, MAFSBX_EK_ENGINE,
						"could not create container %s: the name is in use and the container could "
						"not be adopted: %s",
						name, e2.message);
		json_t *st = json_object_get(a->insp, "State");
		if (json_is_true(json_object_get(st, "Running"))) {
			a->state = MAFSBX_ACQ_REUSED;
			return 0;
		}
		if (mafsbx_container_start(b->engine, a->id, &e2) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_ENGINE,
						"could not create container %s: the name is in use and the container did not "
						"start: %s",
						name, e2.message);
		a->state = MAFSBX_ACQ_STARTED;
		return 0;
	}
	if (r < 0) {
		if (err)
			*err = e;
		mafsbx_error_prefix(err, "could not create container %s", name);
		return r;
	}
	/* read back what the engine recorded before anything runs in it */
	if ((r = inspect_into(b, id, a, err)) < 0) {
		remove_quietly(b, id);
		mafsbx_error_prefix(err, "could not read back the new container %s (removed)", name);
		return r;
	}
	char why[200];
	check_hardening(b, a->insp, allowlist ? name : NULL, why, sizeof(why));
	if (why[0]) {
		remove_quietly(b, id);
		return mafsbx_error_set(err, MAFSBX_EK_ENGINE,
					"container %s was created without its hardening (%s); it was removed", name, why);
	}
	mafsbx_error_clear(&e);
	if ((r = mafsbx_container_start(b->engine, id, &e)) < 0) {
		remove_quietly(b, id);
		if (err)
			*err = e;
		mafsbx_error_prefix(err, "could not start the new container %s (removed)", name);
		return r;
	}
	a->state = MAFSBX_ACQ_CREATED;
	return 0;
}

static int check_work_dir_label(json_t *insp, const char *name, const char *want, bool strict,
				struct mafsbx_error *err)
{
	const char *have = json_string_value(json_object_get(json_object_get(json_object_get(insp, "Config"), "Labels"),
							     MAFSBX_LABEL_WORK_DIR_V1));
	if (have && strcmp(have, want) == 0)
		return 0;
	if (!have)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"sandbox %s has no %s label (made by an older release%s); dispose it before "
					"acquiring it with work_dir %s",
					name, MAFSBX_LABEL_WORK_DIR_V1, strict ? ", or not by a sandbox backend" : "", want);
	return mafsbx_error_set(err, MAFSBX_EK_INVALID,
				"sandbox %s was created with work_dir %s; dispose it before asking for work_dir %s", name,
				have, want);
}

static int os_refusal(struct mafsbx_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int os_refusal(struct mafsbx_error *err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, 0, "SandboxOsFamilyNotSupported", "%s", msg);
}

/*
 * Warm check of the work dir (doc/upstream.md §4.8 prepares it on every acquire):
 * true when the whole base is there as directories, seen from the
 * container's root, with no engine call and no freeze. Only for an engine on
 * this host (a unix socket) whose container init we can prove is this
 * container's: /proc/PID/cgroup must name its full ID (or, with no cgroup of
 * its own, its parent be its runtime shim: pin.h), read AFTER the root
 * handle was taken (a PID recycled before the open then shows another
 * cgroup). The walk resolves no link, no magic link and no other mount.
 * A check that finds everything present changes nothing, so it needs no
 * freeze: a guest that swaps a component right after is no different from
 * one that does so after a frozen check. False for anything else (missing,
 * a link, not a directory, no access, a remote engine): the caller then takes
 * the frozen engine path, which makes what is missing or refuses.
 */
static bool warm_base_present(struct mafsbx_backend *b, json_t *insp, const char *id, const char *base)
{
	const struct mafsbx_endpoint *ep = mafsbx_engine_endpoint(b->engine);
	json_int_t pid = json_integer_value(json_object_get(json_object_get(insp, "State"), "Pid"));
	if (!ep || ep->scheme != MAFSBX_EP_UNIX || pid <= 1 || !mafsbx_is_engine_id(id))
		return false;
	__do_free char *nb = mafsbx_gp_normalise(base, NULL);
	if (!nb)
		return false;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%lld/root", (long long)pid);
	__do_close int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%lld/cgroup", (long long)pid);
	__do_close int cg = open(path, O_RDONLY | O_CLOEXEC);
	if (cg < 0)
		return false;
	char text[4096];
	ssize_t n = read(cg, text, sizeof(text) - 1);
	if (n <= 0)
		return false;
	text[n] = '\0';
	if (!mafsbx_cgroup_names_container(text, id)) {
		/* no cgroup of its own (cgroup driver 'none'): its parent is its shim (pin.h) */
		snprintf(path, sizeof(path), "/proc/%lld", (long long)pid);
		int piddir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		bool shim = piddir >= 0 && mafsbx_pid_shim_names(piddir, id);
		if (piddir >= 0)
			close(piddir);
		if (!shim)
			return false;
	}
	if (strcmp(nb, "/") == 0)
		return true;
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	__do_close int fd = (int)syscall(SYS_openat2, root, nb + 1, &how, sizeof(how));
	if (fd < 0)
		return false;
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * The same warm check through the engine, for an engine elsewhere (or a
 * local one whose /proc we may not read): one HEAD per component of the base
 * from the top, each an lstat of that component (the engine resolves the
 * parents, which the HEADs before have shown to be directories), and no
 * freeze, for the reason given above. True when every component is a
 * directory; anything else (an error included) is for the frozen path.
 */
static bool warm_base_heads(struct mafsbx_backend *b, const char *id, const char *base)
{
	char *nb = mafsbx_gp_normalise(base, NULL);
	if (!nb)
		return false;
	struct mafsbx_gp_chain chain = { 0 };
	bool ok = strcmp(nb, "/") == 0;
	if (!ok && mafsbx_gp_ancestors(nb, nb, true, &chain, NULL) == 0) {
		ok = chain.n > 0;
		for (size_t i = 0; ok && i < chain.n; i++) {
			struct mafsbx_path_stat st;
			struct mafsbx_error e;
			ok = mafsbx_archive_head(b->engine, id, chain.paths[i], &st, &e) == 0 && S_ISDIR(st.mode);
		}
		mafsbx_gp_chain_free(&chain);
	}
	free(nb);
	return ok;
}

/*
 * 1-2: what is there under the name, and its storage base; a container left
 * paused with no live freeze is thawed (never a live one). Sets a->present,
 * a->running, a->thawed.
 */
static int acquire_look(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *name,
			struct acq *a, struct mafsbx_error *err)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = inspect_into(b, name, a, &e);
	if (r < 0 && e.kind != MAFSBX_EK_NO_CONTAINER) {
		if (err)
			*err = e;
		mafsbx_error_prefix(err, "acquire %s", name);
		return r;
	}
	a->present = r == 0;
	if (!a->present)
		return 0;
	if ((r = check_work_dir_label(a->insp, name, spec->work_dir, false, err)) < 0)
		return r;
	json_t *st = json_object_get(a->insp, "State");
	if (json_is_true(json_object_get(st, "Paused"))) {
		bool unpaused = false;
		mafsbx_error_clear(&e);
		if (b->fz)
			r = mafsbx_freeze_recover(b->fz, a->id, true, &unpaused, mafsbx_now_ms() + b->cfg.command_timeout_ms,
						  &e);
		else if ((r = mafsbx_container_unpause(b->engine, a->id, &e)) == 0)
			unpaused = true;
		if (r < 0)
			return mafsbx_error_set(err, MAFSBX_EK_ENGINE,
						"sandbox %s is paused and could not be thawed, so it is not served: %s", name,
						e.message);
		if (unpaused) {
			log_info("sandbox %s: thawed a freeze left by a process that is gone", name);
			a->thawed = true;
		}
	}
	a->running = json_is_true(json_object_get(st, "Running"));
	return 0;
}

/* 3: on a cold path, ask the engine's OS again before creating or restarting anything. */
static int acquire_cold_os(struct mafsbx_backend *b, const char *name, struct mafsbx_error *err)
{
	bool linux = true;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_sbx_read_os(b, &linux, &e) < 0)
		log_warn("acquire %s: could not read the engine's OS (%s); serving anyway", name, e.message);
	else if (!linux)
		return os_refusal(err, "the engine no longer reports linux (%s): no sandbox is created", b->os);
	return 0;
}

/* 6: the guest identity, the capability probes, the work dir (made, or checked warm). */
static int acquire_ready(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *image,
			 const char *name, struct acq *a, struct mafsbx_acquire_result *res, struct mafsbx_error *err)
{
	uid_t uid = 0;
	gid_t gid = 0;
	bool resolved = false;
	char why[sizeof(res->identity_why)];
	int r = mafsbx_sbx_identity(b, a->id, name, a->insp, &uid, &gid, &resolved, why, sizeof(why), err);
	if (r < 0) {
		mafsbx_error_prefix(err, "acquire %s: resolving the guest user", name);
		return r;
	}
	if (!resolved && (spec->caps & (MAFSBX_CAP_FILES_OUT | MAFSBX_CAP_HOST_TOOLS)))
		return mafsbx_error_set(err, MAFSBX_EK_UNSUPPORTED,
					"sandbox %s: the guest user could not be resolved (%s), and %s needs it (the next "
					"acquire retries)",
					name, why, (spec->caps & MAFSBX_CAP_FILES_OUT) ? "files_out" : "host_tools");
	if ((r = mafsbx_sbx_probes(b, a->id, name, image, spec->caps, err)) < 0)
		return r;
	if ((spec->caps & (MAFSBX_CAP_EXEC | MAFSBX_CAP_ANY_FILES)) && a->state == MAFSBX_ACQ_REUSED &&
	    (warm_base_present(b, a->insp, a->id, spec->work_dir) || warm_base_heads(b, a->id, spec->work_dir))) {
		log_debug("sandbox %s: work dir %s present (warm check)", name, spec->work_dir);
	} else if (spec->caps & (MAFSBX_CAP_EXEC | MAFSBX_CAP_ANY_FILES)) {
		unsigned made = 0;
		/* the local plane makes it beneath the pinned root, with no freeze; else the frozen engine path */
		pthread_mutex_lock(&b->mu);
		mafsbx_base_preparer_fn prep = b->prepare_base;
		void *prep_ctx = b->prepare_base_ctx;
		pthread_mutex_unlock(&b->mu);
		r = prep ? prep(prep_ctx, a->id, name, spec->work_dir, uid, gid, &made, err) : 0;
		if (r == 0 && !b->fz)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "acquire %s: no freezer to prepare the work dir",
						name);
		if (r == 0)
			r = mafsbx_files_prepare_base(b->fz, a->id, spec->work_dir, uid, gid,
						      mafsbx_now_ms() + b->cfg.command_timeout_ms, &made, err);
		if (r < 0) {
			mafsbx_error_prefix(err, "acquire %s: work dir %s", name, spec->work_dir);
			return r;
		}
		if (made)
			log_debug("sandbox %s: made %u directories for work dir %s", name, made, spec->work_dir);
	}
	snprintf(res->name, sizeof(res->name), "%s", name);
	snprintf(res->id, sizeof(res->id), "%s", a->id);
	snprintf(res->work_dir, sizeof(res->work_dir), "%s", spec->work_dir);
	res->state = a->state;
	res->uid = uid;
	res->gid = gid;
	res->identity_resolved = resolved;
	snprintf(res->identity_why, sizeof(res->identity_why), "%s", resolved ? "" : why);
	if (b->cfg.pids_limit > 0 && !sbx_pids_limit_applies(b))
		snprintf(res->warning, sizeof(res->warning),
			 "the engine ignores the pids limit of %ld (it has no cgroups for containers): this sandbox "
			 "runs without one", b->cfg.pids_limit);
	return 0;
}

int mafsbx_sbx_acquire_ready_id(struct mafsbx_backend *nb, const struct mafsbx_acquire_spec *spec, const char *image,
				const char *name, const char *id, enum mafsbx_acquire_state state,
				struct mafsbx_acquire_result *res, struct mafsbx_error *err)
{
	struct acq a = { .id = "", .state = state, .insp = NULL };
	int r = inspect_into(nb, id, &a, err);
	if (r == 0 && (r = check_work_dir_label(a.insp, name, spec->work_dir, true, err)) == 0)
		r = acquire_ready(nb, spec, image, name, &a, res, err);
	json_decref(a.insp);
	return r;
}

static int acquire_locked(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *image,
			  const char *name, bool allowlist, struct mafsbx_acquire_result *res, struct mafsbx_error *err)
{
	struct acq a = { .id = "", .state = 0, .insp = NULL };
	struct mafsbx_error e;
	int r;
	if ((r = acquire_look(b, spec, name, &a, err)) < 0)
		goto out;
	/* 2b. allowlist: a sandbox whose network is gone or not isolated is removed and rebuilt (doc/upstream.md §7.4) */
	if (allowlist && a.present) {
		bool discarded = false;
		if ((r = mafsbx_sbx_egress_discard_unusable(b, name, &discarded, err)) < 0)
			goto out;
		if (discarded)
			a.present = a.running = false;
	}
	if (!a.running && (r = acquire_cold_os(b, name, err)) < 0)
		goto out;
	/* 3b. allowlist: the network and the proxy, before the workload joins them */
	if (allowlist && (r = mafsbx_sbx_egress_ensure(b, spec, name, !a.present, err)) < 0)
		goto out;

	/* 4. reuse, start, or create */
	if (a.running) {
		a.state = a.thawed ? MAFSBX_ACQ_STARTED : MAFSBX_ACQ_REUSED;
	} else if (a.present) {
		mafsbx_error_clear(&e);
		if (mafsbx_container_start(b->engine, a.id, &e) == 0) {
			a.state = MAFSBX_ACQ_STARTED;
		} else {
			log_warn("sandbox %s did not start (%s): removing and recreating it", name, e.message);
			remove_quietly(b, a.id);
			a.present = false;
		}
	}
	if (!a.state && (r = create_container(b, spec, image, name, allowlist, &a, err)) < 0) {
		if (allowlist && !a.present)
			mafsbx_sbx_egress_teardown(b, name, NULL);
		goto out;
	}

	/* 4b. allowlist: prove the isolation on this host, as the running workload sees it */
	if (allowlist && ((r = inspect_into(b, a.id, &a, err)) < 0 || (r = mafsbx_sbx_egress_prove(b, name, a.insp, err)) < 0))
		goto out;

	/* 5. the instance, and its storage base strictly */
	if (!a.id[0]) {
		struct mafsbx_dispose_result dr = { 0 };
		mafsbx_sandbox_dispose_key(b, &spec->key, spec->kind, &dr, NULL);
		mafsbx_dispose_result_free(&dr);
		r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "sandbox %s: the engine gave no container ID (disposed)",
				     name);
		goto out;
	}
	if ((r = check_work_dir_label(a.insp, name, spec->work_dir, true, err)) < 0 ||
	    (r = acquire_ready(b, spec, image, name, &a, res, err)) < 0)
		goto out;
	log_info("sandbox %s %s", name, mafsbx_acquire_state_name(a.state));
	r = 0;
out:
	/* a container this call made is not left behind by a failure after its creation (a probe, the
	 * work dir, the egress proof): the caller sees an error, so nobody would serve or dispose it */
	if (r < 0 && a.state == MAFSBX_ACQ_CREATED && a.id[0]) {
		remove_quietly(b, a.id);
		if (allowlist)
			mafsbx_sbx_egress_teardown(b, name, NULL);
		mafsbx_error_prefix(err, "the new container %s was removed", name);
		log_info("sandbox %s: the acquire failed after creating it; removed", name);
	}
	json_decref(a.insp);
	return r;
}

int mafsbx_sandbox_acquire(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec,
			   struct mafsbx_acquire_result *res, struct mafsbx_error *err)
{
	if (!res)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "acquire: no result");
	memset(res, 0, sizeof(*res));
	if (!b || !spec || !spec->key.scope || !spec->key.thread || !spec->key.agent || !spec->kind || !*spec->kind ||
	    !spec->work_dir)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "acquire: incomplete spec");
	/* a pinned image ID takes precedence over the reference (doc/upstream.md §1.3, §4.4); either is passed on
	 * unparsed, and an absent one is pulled, whose failure is "could not pull image" */
	const char *image = spec->image_id && *spec->image_id ? spec->image_id
			    : spec->image && *spec->image ? spec->image : b->cfg.default_image;
	if (!image)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "field 'image': required (no default image is configured)");
	if (spec->isolation_scope == MAFSBX_SCOPE_CALL && (!spec->key.call || !*spec->key.call))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "field 'call': isolation_scope 'call' requires a call id");
	if (spec->caps & ~MAFSBX_CAP_ALL)
		return mafsbx_error_set(err, MAFSBX_EK_UNSUPPORTED, "acquire: unknown capability bits");

	/* Egress: closed is --network none. An allowlist needs a proxy image; with hosts it is
	 * served on its own network whose isolation is proven on this host (egress.c; Engine
	 * 20.10 silently ignores gateway_mode=isolated). An empty allowlist allows nothing: it
	 * is served closed under the closed name, as upstream. */
	bool allowlist = false;
	if (spec->egress == MAFSBX_EGRESS_ALLOWLIST && b->cluster)
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, 0, "SandboxEgressNotEnforced",
					     "egress 'allowlist' is not served over a swarm (-o cluster=swarm): its "
					     "isolation is proven on the engine's own host, which a cluster's node is "
					     "not; this mount serves only 'closed'");
	if (spec->egress == MAFSBX_EGRESS_ALLOWLIST) {
		if (!mafsbx_egress_proxy_image(b))
			return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, 0, "SandboxEgressNotEnforced",
						     "egress 'allowlist' needs an egress proxy image (-o "
						     "egress_proxy_image, or build %s with `mafsbx mkimage "
						     "--egress-proxy`); this mount serves only 'closed'",
						     MAFSBX_DEFAULT_PROXY_IMAGE);
		allowlist = spec->n_egress_allow > 0;
	}
	if (allowlist) {
		/* Podman 4 reads a container's own network back as NetworkMode "bridge", so the isolation the
		 * allowlist rests on cannot be read back and proven (doc/engines.md) */
		bool known, podman;
		struct mafsbx_error e;
		pthread_mutex_lock(&b->mu);
		known = b->os_known, podman = b->podman;
		pthread_mutex_unlock(&b->mu);
		bool lx;
		if (!known && mafsbx_sbx_read_os(b, &lx, &e) == 0) {
			pthread_mutex_lock(&b->mu);
			podman = b->podman;
			pthread_mutex_unlock(&b->mu);
		}
		if (podman)
			return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, 0, "SandboxEgressNotEnforced",
						     "egress 'allowlist' is not served on Podman: it reports a container's "
						     "own network as NetworkMode 'bridge', so the isolation cannot be "
						     "proven; this mount serves only 'closed' there");
	}
	if (spec->requires_os_family == MAFSBX_OS_WINDOWS)
		return os_refusal(err, "%s", "the docker backend declares no windows OS family");
	if (spec->requires_os_family == MAFSBX_OS_POSIX) {
		bool known, linux;
		pthread_mutex_lock(&b->mu);
		known = b->os_known, linux = b->os_linux;
		pthread_mutex_unlock(&b->mu);
		struct mafsbx_error e;
		if (!known && mafsbx_sbx_read_os(b, &linux, &e) < 0)
			return os_refusal(err, "the engine's OS could not be read (%s), so posix is not declared",
					  e.message);
		if (!linux) {
			char os[32];
			pthread_mutex_lock(&b->mu);
			snprintf(os, sizeof(os), "%s", b->os);
			pthread_mutex_unlock(&b->mu);
			return os_refusal(err, "the engine's OS is %s, so posix is not declared", os);
		}
	}

	char name[MAFSBX_NAME_LEN + 1];
	char *egress_id = allowlist ? mafsbx_egress_id((const char *const *)spec->egress_allow, spec->n_egress_allow)
				    : NULL;
	if (allowlist && !egress_id)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	mafsbx_container_name(&spec->key, spec->kind, egress_id ? egress_id : "", name);
	free(egress_id);
	struct sbx_keylock *l;
	int lr = mafsbx_sbx_lock_name(b, name, SBX_KEY_WAIT_MS, &l);
	if (lr == -ENOMEM)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (lr < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EBUSY, "RuntimeError",
					     "acquire of %s: another acquire of the same key has been running for over "
					     "%d s; retry when it ends", name, SBX_KEY_WAIT_MS / 1000);
	int r = b->cluster ? mafsbx_sbx_swarm_acquire(b, spec, image, name, res, err)
			   : acquire_locked(b, spec, image, name, allowlist, res, err);
	mafsbx_sbx_unlock_name(b, l);
	return r;
}
