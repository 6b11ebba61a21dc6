/*
 * swarm_acquire.c: acquire over a swarm (sbx_internal.h mafsbx_sbx_swarm_acquire):
 * get-or-create of the service named as upstream names the container, its
 * internal network, the wait for its one task to run, the node's
 * no-new-privileges checked, then the single engine's last steps (identity,
 * probes, work dir) on the node's engine. What the Service API cannot set
 * is refused with EOPNOTSUPP naming the guarantee, never served weaker.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "duration.h"
#include "log.h"
#include "sbx_internal.h"

static int refuse(struct mafsbx_error *err, const char *what, const char *api)
{
	return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, 0, "SandboxCapabilityNotSupported",
				     "cluster=swarm: %s (the manager's Engine API is %s)", what, api);
}

/* What this mount's hardening asks that the manager's Service API cannot set. */
static int swarm_can_harden(struct mafsbx_backend *b, struct mafsbx_error *err)
{
	int major = 0, minor = 0;
	if (sscanf(b->cluster_api, "%d.%d", &major, &minor) != 2)
		major = minor = 0;
	if (b->cfg.pids_limit > 0 && (major < 1 || (major == 1 && minor < 41)))
		return refuse(err, "a service's pids limit needs Resources.Limits.Pids, API 1.41 (Docker 20.10)",
			      b->cluster_api);
	if (b->cfg.cap_drop_all && (major < 1 || (major == 1 && minor < 41)))
		return refuse(err, "dropping a service's capabilities needs ContainerSpec.CapabilityDrop, API 1.41",
			      b->cluster_api);
	if (b->cfg.memory_bytes > 0)
		return refuse(err, "a service's memory limit cannot set MemorySwap equal to it (the Service API has "
				   "no swap limit), so -o memory would allow swap; not served", b->cluster_api);
	return 0;
}

static int add(json_t *o, const char *k, json_t *v)
{
	return v ? json_object_set_new(o, k, v) : -1;
}

/* The ServiceSpec; NULL out of memory. */
static json_t *service_spec(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *image,
			    const char *name, json_t *labels)
{
	/* StopGracePeriod: a disposal is a forced removal, as on one engine; the swarm's default 10 s
	 * holds a dispose for seconds (3.5 s measured) where 100 ms ends it in 0.2 s */
	__do_json json_t *cs = json_pack("{s:s, s:[s,s], s:O, s:b, s:I}", "Image", image, "Command", "sleep",
					 "infinity", "Labels", labels, "Init", 1, "StopGracePeriod",
					 (json_int_t)SBX_SWARM_STOP_GRACE_NS);
	__do_json json_t *limits = json_object();
	__do_json json_t *constraints = json_array();
	if (!cs || !limits || !constraints)
		return NULL;
	int r = 0;
	if (b->cfg.cap_drop_all)
		r |= add(cs, "CapabilityDrop", json_pack("[s]", "ALL"));
	if (spec->env && spec->n_env) {
		json_t *env = json_array();
		for (size_t i = 0; env && i < spec->n_env; i++)
			r |= json_array_append_new(env, json_string(spec->env[i]));
		r |= add(cs, "Env", env);
	}
	if (b->cfg.pids_limit > 0)
		r |= add(limits, "Pids", json_integer(b->cfg.pids_limit));
	if (b->cfg.cpus > 0)
		r |= add(limits, "NanoCPUs", json_integer((json_int_t)(b->cfg.cpus * 1e9 + 0.5)));
	for (size_t i = 0; i < b->n_placement; i++)
		r |= json_array_append_new(constraints, json_string(b->placement[i]));
	if (r)
		return NULL;
	/* Privileges.NoNewPrivileges: honoured by Docker 26.1 (the task's SecurityOpt says so), dropped by
	 * 20.10; check_nnp() decides from what the task got, never from what was asked */
	if (add(cs, "Privileges", json_pack("{s:b}", "NoNewPrivileges", 1)) < 0)
		return NULL;
	return json_pack("{s:s, s:O, s:{s:O, s:{s:O}, s:{s:s}, s:{s:O}, s:[{s:s}]}, s:{s:{s:i}}}", "Name", name,
			 "Labels", labels, "TaskTemplate", "ContainerSpec", cs, "Resources", "Limits", limits,
			 "RestartPolicy", "Condition", "none", "Placement", "Constraints", constraints, "Networks",
			 "Target", name, "Mode", "Replicated", "Replicas", 1);
}

/*
 * The sandbox's own network: internal (no route out), overlay (the task may
 * land on any node). Its name is the key's, so another mount acquiring the
 * same key at once may have made it: that one is taken when it is what this
 * acquire would make (internal, overlay, a sandbox's labels), else refused.
 */
static int ensure_network(struct mafsbx_backend *b, const char *name, json_t *labels, struct mafsbx_error *err)
{
	__do_json json_t *cfg = json_pack("{s:s, s:s, s:b, s:b, s:O}", "Name", name, "Driver", "overlay", "Internal", 1,
					  "CheckDuplicate", 1, "Labels", labels);
	if (!cfg)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	char id[65];
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_engine *m = mafsbx_cluster_manager(b->cluster);
	if (mafsbx_network_create(m, cfg, id, &e) == 0)
		return 0;
	__do_json json_t *have = NULL;
	if (e.kind == MAFSBX_EK_CONFLICT && mafsbx_network_inspect(m, name, &have, &e) == 0) {
		const char *drv = json_string_value(json_object_get(have, "Driver"));
		bool internal = json_is_true(json_object_get(have, "Internal"));
		bool labelled = mafsbx_has_identity_labels(json_object_get(have, "Labels"));
		if (internal && drv && strcmp(drv, "overlay") == 0 && labelled)
			return 0;
		/* NO_OBJECT: the acquire starts over (bounded); a network of the other mount read mid-create or
		 * mid-removal is then gone or whole, and a foreign one is refused after the last round */
		return mafsbx_error_set(err, MAFSBX_EK_NO_OBJECT, "acquire %s: a network of that name exists and is "
					"not a sandbox's internal overlay network (driver %s, internal %s, %s identity "
					"labels); remove it before acquiring this key", name, drv ? drv : "none",
					internal ? "true" : "false", labelled ? "with" : "without");
	}
	if (err)
		*err = e;
	mafsbx_error_prefix(err, "acquire %s: its internal network", name);
	return -mafsbx_error_errno(&e, EIO);
}

static bool task_terminal(const char *st)
{
	static const char *const end[] = { "complete", "shutdown", "failed", "rejected", "orphaned", "remove", NULL };
	for (size_t i = 0; end[i]; i++)
		if (strcmp(st, end[i]) == 0)
			return true;
	return false;
}

/* The service `sid` no longer exists (a failed acquire elsewhere removed what it made). */
static bool service_gone(struct mafsbx_backend *b, const char *sid)
{
	__do_json json_t *svc = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	return mafsbx_service_inspect(mafsbx_cluster_manager(b->cluster), sid, &svc, &e) < 0 &&
	       e.kind == MAFSBX_EK_NO_OBJECT;
}

/* Until the service's task runs: its node and container into w. A task that ended: EK_UNREACHABLE "lost". */
static int wait_running(struct mafsbx_backend *b, const char *name, const char *sid, struct mafsbx_cluster_where *w,
			struct mafsbx_error *err)
{
	long long deadline = mafsbx_now_ms() + SBX_SWARM_TASK_WAIT_MS;
	long nap_ms = 50;
	for (;;) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		int r = mafsbx_cluster_task(b->cluster, sid, w, &e);
		if (r < 0 && e.kind != MAFSBX_EK_NO_OBJECT) {
			if (err)
				*err = e;
			return r;
		}
		if (r < 0 && nap_ms >= 400 && service_gone(b, sid))
			return mafsbx_error_set(err, MAFSBX_EK_NO_OBJECT, "acquire %s: its service was removed while "
						"its task was awaited", name);
		if (r == 0 && strcmp(w->task_state, "running") == 0 && w->container_id[0] && w->node_id[0])
			return 0;
		if (r == 0 && task_terminal(w->task_state))
			return mafsbx_error_set_full(err, MAFSBX_EK_UNREACHABLE, ENOTCONN, NULL,
						     "sandbox %s is lost: its task is %s%s%s", name, w->task_state,
						     w->message[0] ? ": " : "", w->message);
		if (mafsbx_now_ms() + nap_ms > deadline)
			return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT,
						"acquire %s: its task did not run within %d s (state %s%s%s)", name,
						SBX_SWARM_TASK_WAIT_MS / 1000, r == 0 ? w->task_state : "none",
						r == 0 && w->message[0] ? ": " : "", r == 0 ? w->message : "");
		usleep((useconds_t)nap_ms * 1000);
		if (nap_ms < 400)
			nap_ms *= 2;
	}
}

static bool has_str(json_t *a, const char *const *any)
{
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) {
		const char *o = json_string_value(v);
		for (size_t k = 0; o && any[k]; k++)
			if (strcmp(o, any[k]) == 0)
				return true;
	}
	return false;
}

static bool empty(json_t *v)
{
	return !v || json_is_null(v) || (json_is_array(v) && !json_array_size(v)) ||
	       (json_is_object(v) && !json_object_size(v));
}

/*
 * The hardening of the task's container as its node recorded it ("" when all
 * took): the Service API drops what it does not know, as an engine does, so a
 * new sandbox is read back before anything runs in it. Its only network is its
 * own internal one.
 */
static void task_hardening(struct mafsbx_backend *b, json_t *insp, const char *name, char *why, size_t whysz)
{
	static const char *const all[] = { "ALL", NULL };
	json_t *hc = json_object_get(insp, "HostConfig");
	json_t *nets = json_object_get(json_object_get(insp, "NetworkSettings"), "Networks");
	why[0] = '\0';
	if (!hc)
		snprintf(why, whysz, "no HostConfig");
	else if (json_object_size(nets) != 1 || !json_object_get(nets, name))
		snprintf(why, whysz, "its networks are not its own internal network %s alone", name);
	else if (!json_is_true(json_object_get(hc, "Init")))
		snprintf(why, whysz, "Init is not set");
	else if (b->cfg.pids_limit > 0 &&
		 json_integer_value(json_object_get(hc, "PidsLimit")) != (json_int_t)b->cfg.pids_limit)
		snprintf(why, whysz, "PidsLimit is not %ld", b->cfg.pids_limit);
	else if (b->cfg.cap_drop_all && !has_str(json_object_get(hc, "CapDrop"), all))
		snprintf(why, whysz, "CapDrop lacks ALL");
	else if (b->cfg.cpus > 0 && json_integer_value(json_object_get(hc, "NanoCpus")) !=
					    (json_int_t)(b->cfg.cpus * 1e9 + 0.5))
		snprintf(why, whysz, "NanoCpus is not %.3f CPUs", b->cfg.cpus);
	else if (!empty(json_object_get(hc, "Binds")) || !empty(json_object_get(hc, "Mounts")) ||
		 !empty(json_object_get(hc, "Tmpfs")) || !empty(json_object_get(insp, "Mounts")) ||
		 !empty(json_object_get(json_object_get(insp, "Config"), "Volumes")))
		snprintf(why, whysz, "the container has mounts or volumes (from the image?)");
	else if (json_is_true(json_object_get(hc, "Privileged")))
		snprintf(why, whysz, "the container is privileged");
}

/*
 * No new privileges, from what the task got: its container's SecurityOpt
 * (Docker 26.1 applies the service's Privileges.NoNewPrivileges; 20.10 drops
 * it), else the node's dockerd runs with --no-new-privileges: 26.1 lists it
 * in /info; 20.10 does not, so the new task's init (docker-init, Init true)
 * is asked: the kernel's /proc/1/status says NoNewPrivs 1 or 0.
 */
static bool nnp_of(struct mafsbx_backend *nb, json_t *insp, bool listed, const char *container, char *why,
		   size_t whysz)
{
	static const char *const forms[] = { "no-new-privileges", "no-new-privileges=true", "no-new-privileges:true",
					     NULL };
	if (listed || has_str(json_object_get(json_object_get(insp, "HostConfig"), "SecurityOpt"), forms))
		return true;
	static const char *const argv[] = { "cat", "/proc/1/status", NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = nb->cfg.probe_timeout_ms, .max_output = 8192 };
	struct mafsbx_exec_result res;
	struct mafsbx_error e;
	int r = mafsbx_sbx_exec(nb, container, &rq, &res, &e);
	bool on = r == 0 && res.exit_code == 0 && res.out && strstr((const char *)res.out, "NoNewPrivs:\t1\n");
	mafsbx_exec_result_free(&res);
	snprintf(why, whysz, "%s%s", r < 0 ? ": " : "", r < 0 ? e.message : "");
	return on;
}

/* A new sandbox's task, read back on its node: every hardening took, no new privileges included. */
static int check_task(struct mafsbx_backend *b, struct mafsbx_backend *nb, bool nnp_listed, const char *name,
		      const char *node, const char *container, struct mafsbx_error *err)
{
	__do_json json_t *insp = NULL;
	int r = mafsbx_container_inspect(nb->engine, container, &insp, err);
	if (r < 0)
		return r;
	char why[256];
	task_hardening(b, insp, name, why, sizeof(why));
	if (why[0])
		return mafsbx_error_set(err, MAFSBX_EK_ENGINE, "sandbox %s: the swarm did not apply its hardening: %s",
					name, why);
	if (nnp_of(nb, insp, nnp_listed, container, why, sizeof(why)))
		return 0;
	return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, 0, "SandboxCapabilityNotSupported",
				     "sandbox %s: node %s does not run its containers with no-new-privileges (the "
				     "Service API cannot ask it on this Docker version; start that node's dockerd with "
				     "--no-new-privileges)%s", name, node, why);
}

/* Made less than a task's wait ago (by its CreatedAt; an unreadable one counts as young). */
static bool service_young(json_t *svc)
{
	struct mafsbx_time t = { 0, 0 };
	const char *created = json_string_value(json_object_get(svc, "CreatedAt"));
	if (!created || mafsbx_time_parse(created, &t, NULL) < 0)
		return true;
	return (long long)time(NULL) - (long long)t.sec < SBX_SWARM_TASK_WAIT_MS / 1000;
}

/* Step 1: the service under the name, if any; a lost one is removed (*sid then ""). */
static int acquire_look(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *name,
			char sid[65], struct mafsbx_error *err)
{
	sid[0] = 0;
	__do_json json_t *svc = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_engine *m = mafsbx_cluster_manager(b->cluster);
	if (mafsbx_service_inspect(m, name, &svc, &e) < 0) {
		if (e.kind == MAFSBX_EK_NO_OBJECT)
			return 0;
		if (err)
			*err = e;
		mafsbx_error_prefix(err, "acquire %s", name);
		return -mafsbx_error_errno(&e, EIO);
	}
	json_t *labels = json_object_get(json_object_get(svc, "Spec"), "Labels");
	const char *have = json_string_value(json_object_get(labels, MAFSBX_LABEL_WORK_DIR_V1));
	if (!mafsbx_has_identity_labels(labels))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "service %s is not a sandbox (it lacks the identity "
					"labels); remove it before acquiring this key", name);
	if (!have || strcmp(have, spec->work_dir) != 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "sandbox %s was created with work_dir %s; dispose it "
					"before asking for work_dir %s", name, have ? have : "(none)", spec->work_dir);
	const char *id = json_string_value(json_object_get(svc, "ID"));
	snprintf(sid, 65, "%s", id ? id : "");
	bool young = service_young(svc);
	struct mafsbx_cluster_where w;
	mafsbx_error_clear(&e);
	int r = mafsbx_cluster_task(b->cluster, sid, &w, &e);
	/* no task yet is not lost while the service is young: another mount just made it and awaits its
	 * task; removing it would remove that acquire's sandbox (and its network) under it */
	bool lost = (r == 0 && task_terminal(w.task_state)) ||
		    (r < 0 && e.kind == MAFSBX_EK_NO_OBJECT && !young);
	if (r == 0 && !lost && w.node_id[0]) {
		struct mafsbx_cluster_node ni;
		struct mafsbx_engine *ne;
		struct mafsbx_freezer *nfz;
		lost = mafsbx_cluster_node_engine(b->cluster, w.node_id, &ne, &nfz, NULL, &ni, &e) < 0;
	}
	if (!lost)
		return 0;
	/* its node died or was drained, or its task ended: the old service goes, a new one is made */
	log_info("sandbox %s is lost (%s): removing its service to make it anew", name,
		 r == 0 ? w.task_state : e.message);
	if ((r = mafsbx_sbx_swarm_remove(b, name, sid, err)) < 0)
		return r;
	sid[0] = 0;
	return 0;
}

/* Step 2: create the service (and its network); a name conflict takes the one another host just made. */
static int acquire_create(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *image,
			  const char *name, char sid[65], enum mafsbx_acquire_state *state, struct mafsbx_error *err)
{
	__do_json json_t *labels = mafsbx_sbx_create_labels(spec);
	__do_json json_t *svc = labels ? service_spec(b, spec, image, name, labels) : NULL;
	if (!svc)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	int r = ensure_network(b, name, labels, err);
	if (r < 0)
		return r;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_engine *m = mafsbx_cluster_manager(b->cluster);
	if (mafsbx_service_create(m, svc, sid, &e) == 0) {
		*state = MAFSBX_ACQ_CREATED;
		return 0;
	}
	/* the network another acquire's cleanup just removed: NO_OBJECT, so the acquire starts over */
	if (e.kind != MAFSBX_EK_CONFLICT && strcasestr(e.message, "network") && strcasestr(e.message, "not found"))
		e.kind = MAFSBX_EK_NO_OBJECT;
	json_t *other = NULL;
	if (e.kind != MAFSBX_EK_CONFLICT || mafsbx_service_inspect(m, name, &other, &e) < 0) {
		if (err)
			*err = e;
		mafsbx_error_prefix(err, "acquire %s", name);
		return -mafsbx_error_errno(&e, EIO);
	}
	/* the manager's name uniqueness is the lock across hosts: another acquire made it first */
	const char *id = json_string_value(json_object_get(other, "ID"));
	snprintf(sid, 65, "%s", id ? id : "");
	json_decref(other);
	*state = MAFSBX_ACQ_REUSED;
	log_info("sandbox %s: made by another acquire at the same time; taken", name);
	return 0;
}

/* A sandbox found paused with no live freeze (a mount that died inside one) is thawed, as on one engine:
 * its state is then "started". */
static int thaw_orphan(struct mafsbx_backend *nb, const char *name, const char *container,
		       enum mafsbx_acquire_state *state, struct mafsbx_error *err)
{
	bool unpaused = false;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_freeze_recover(nb->fz, container, true, &unpaused, mafsbx_now_ms() + nb->cfg.command_timeout_ms,
				  &e) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_ENGINE,
					"sandbox %s is paused and could not be thawed, so it is not served: %s", name,
					e.message);
	if (unpaused) {
		log_info("sandbox %s: thawed a freeze left by a process that is gone", name);
		*state = MAFSBX_ACQ_STARTED;
	}
	return 0;
}

/*
 * The single engine's last steps on the node. Two mounts that acquire one
 * new key at once run them together on one container; each one's freeze
 * then sees the other's pause and discards its transfer (freeze.c proves a
 * freeze held): the steps, which are idempotent, are run again, bounded. A
 * service removed meanwhile (the other mount failed) is NO_OBJECT: the
 * acquire starts over.
 */
static int ready(struct mafsbx_backend *b, struct mafsbx_backend *nb, const struct mafsbx_acquire_spec *spec,
		 const char *image, const char *name, const char *sid, const char *container,
		 enum mafsbx_acquire_state state, struct mafsbx_acquire_result *res, struct mafsbx_error *err)
{
	for (int k = 1;; k++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		int r = mafsbx_sbx_acquire_ready_id(nb, spec, image, name, container, state, res, &e);
		if (r == 0)
			return 0;
		if (service_gone(b, sid))
			return mafsbx_error_set(err, MAFSBX_EK_NO_OBJECT, "acquire %s: its service was removed while "
						"it was made ready (%s)", name, e.message);
		if (k == SBX_SWARM_ACQUIRE_ROUNDS || !strstr(e.message, "freeze")) {
			if (err)
				*err = e;
			return r;
		}
		log_info("acquire %s: %s; again", name, e.message);
		usleep((useconds_t)k * 300 * 1000);
	}
}

static int acquire_once(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *image,
			const char *name, struct mafsbx_acquire_result *res, struct mafsbx_error *err)
{
	char sid[65];
	enum mafsbx_acquire_state state = MAFSBX_ACQ_REUSED;
	int r = acquire_look(b, spec, name, sid, err);
	if (r < 0)
		return r;
	bool made_now = !sid[0];
	if (made_now && (r = acquire_create(b, spec, image, name, sid, &state, err)) < 0)
		return r;
	/* a service made in this acquire (here, or by another mount at the same moment: the create's
	 * conflict) is no orphan of a dead mount: a pause on it is the other mount's live freeze. One found
	 * already there is thawed when paused, as on one engine; should that be the other mount's freeze,
	 * its ready() runs its steps again */
	struct mafsbx_cluster_where w;
	struct mafsbx_backend *nb = NULL;
	struct mafsbx_engine *ne;
	struct mafsbx_freezer *nfz;
	bool nnp = false;
	struct mafsbx_cluster_node ni;
	if ((r = wait_running(b, name, sid, &w, err)) < 0 ||
	    (r = mafsbx_cluster_node_engine(b->cluster, w.node_id, &ne, &nfz, &nnp, &ni, err)) < 0 ||
	    (r = mafsbx_sbx_node_backend(b, w.node_id, &nb, err)) < 0 ||
	    (state == MAFSBX_ACQ_CREATED && (r = check_task(b, nb, nnp, name, w.node_id, w.container_id, err)) < 0) ||
	    (!made_now && (r = thaw_orphan(nb, name, w.container_id, &state, err)) < 0) ||
	    (r = ready(b, nb, spec, image, name, sid, w.container_id, state, res, err)) < 0) {
		if (state == MAFSBX_ACQ_CREATED) {
			/* not left behind: the caller sees an error, so nobody would serve or dispose it */
			mafsbx_sbx_swarm_remove(b, name, sid, NULL);
			mafsbx_error_prefix(err, "the new service %s was removed", name);
		}
		return r;
	}
	snprintf(res->id, sizeof(res->id), "%s", sid);
	mafsbx_sbx_where_put(b, name, sid, w.node_id, w.container_id);
	log_info("sandbox %s %s on node %s (%s)", name, mafsbx_acquire_state_name(state), ni.hostname, w.node_id);
	return 0;
}

/*
 * Get-or-create converges when two mounts acquire one key at once: each
 * takes what the other made (network, service). What one of them removes
 * after its own failure (its service and network) makes the other's next
 * call NO_OBJECT: that one starts over, a bounded number of times.
 */
int mafsbx_sbx_swarm_acquire(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *image,
			     const char *name, struct mafsbx_acquire_result *res, struct mafsbx_error *err)
{
	int r = swarm_can_harden(b, err);
	for (int round = 1; r == 0; round++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		r = acquire_once(b, spec, image, name, res, &e);
		if (r == 0 || e.kind != MAFSBX_EK_NO_OBJECT || round == SBX_SWARM_ACQUIRE_ROUNDS) {
			if (r < 0 && err)
				*err = e;
			return r;
		}
		log_info("acquire %s: %s; again (round %d)", name, e.message, round + 1);
		r = 0;
	}
	return r;
}
