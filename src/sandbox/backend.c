/*
 * backend.c: the sandbox backend object (sandbox.h): its configuration, the
 * per-name acquire locks (so two acquires of one key in this process make
 * one container), the per-instance facts cache (guest identity and verified
 * probes, keyed by container ID so a recreated container starts afresh), and
 * the engine's OS as read from /version.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "buf.h"
#include "log.h"
#include "sbx_internal.h"

void mafsbx_sandbox_config_defaults(struct mafsbx_sandbox_config *c)
{
	memset(c, 0, sizeof(*c));
	c->pids_limit = 512;
	c->exec_timeout_max_s = MAFSBX_DEFAULT_EXEC_TIMEOUT_MAX_S;
	c->exec_timeout_s = MAFSBX_DEFAULT_EXEC_TIMEOUT_S;
	c->pull_timeout_ms = 600000;
	c->probe_timeout_ms = 10000;
	c->command_timeout_ms = 60000;
	c->max_read_bytes = MAFSBX_CEIL_BYTES_PER_FILE;
	c->max_write_bytes = MAFSBX_CEIL_BYTES_PER_FILE;
}

struct mafsbx_backend *mafsbx_backend_new(struct mafsbx_engine *e, struct mafsbx_freezer *fz,
					  const struct mafsbx_sandbox_config *cfg, struct mafsbx_error *err)
{
	if (!e) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "sandbox backend: no engine");
		return NULL;
	}
	struct mafsbx_backend *b = calloc(1, sizeof(*b));
	if (!b) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	if (cfg)
		b->cfg = *cfg;
	else
		mafsbx_sandbox_config_defaults(&b->cfg);
	b->cfg.default_image = NULL;
	b->cfg.egress_proxy_image = NULL;
	b->cfg.egress_outbound_network = NULL;
	if ((cfg && cfg->egress_outbound_network && *cfg->egress_outbound_network &&
	     !(b->cfg.egress_outbound_network = strdup(cfg->egress_outbound_network))) ||
	    (cfg && cfg->default_image && *cfg->default_image && !(b->cfg.default_image = strdup(cfg->default_image))) ||
	    (cfg && cfg->egress_proxy_image && *cfg->egress_proxy_image &&
	     !(b->cfg.egress_proxy_image = strdup(cfg->egress_proxy_image)))) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		mafsbx_backend_free(b);
		return NULL;
	}
	if (b->cfg.pids_limit < 0)
		b->cfg.pids_limit = 0;
	if (b->cfg.exec_timeout_max_s == 0)
		b->cfg.exec_timeout_max_s = MAFSBX_DEFAULT_EXEC_TIMEOUT_MAX_S;
	else if (b->cfg.exec_timeout_max_s < 0)
		b->cfg.exec_timeout_max_s = MAFSBX_EXEC_TIMEOUT_NO_CEILING;
	if (b->cfg.exec_timeout_s <= 0)
		b->cfg.exec_timeout_s = MAFSBX_DEFAULT_EXEC_TIMEOUT_S;
	if (b->cfg.probe_timeout_ms <= 0)
		b->cfg.probe_timeout_ms = 10000;
	if (b->cfg.command_timeout_ms <= 0)
		b->cfg.command_timeout_ms = 60000;
	/* upstream: one deadline for all probes of an acquire, min(10 s, command timeout) */
	if (b->cfg.probe_timeout_ms > b->cfg.command_timeout_ms)
		b->cfg.probe_timeout_ms = b->cfg.command_timeout_ms;
	if (!b->cfg.max_read_bytes)
		b->cfg.max_read_bytes = MAFSBX_CEIL_BYTES_PER_FILE;
	if (!b->cfg.max_write_bytes)
		b->cfg.max_write_bytes = MAFSBX_CEIL_BYTES_PER_FILE;
	b->engine = e;
	b->fz = fz;
	pthread_mutex_init(&b->mu, NULL);
	return b;
}

void mafsbx_backend_set_base_preparer(struct mafsbx_backend *b, mafsbx_base_preparer_fn fn, void *ctx)
{
	b->prepare_base = fn;
	b->prepare_base_ctx = fn ? ctx : NULL;
}

void mafsbx_backend_free(struct mafsbx_backend *b)
{
	if (!b)
		return;
	while (b->locks) {
		struct sbx_keylock *l = b->locks;
		b->locks = l->next;
		pthread_mutex_destroy(&l->mu);
		free(l);
	}
	while (b->facts) {
		struct sbx_facts *f = b->facts;
		b->facts = f->next;
		free(f);
	}
	free((char *)b->cfg.default_image);
	free((char *)b->cfg.egress_proxy_image);
	free((char *)b->cfg.egress_outbound_network);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

void mafsbx_backend_spec_config(const struct mafsbx_backend *b, struct mafsbx_spec_config *out)
{
	out->default_image = b ? b->cfg.default_image : NULL;
	out->exec_timeout_max_s = b ? b->cfg.exec_timeout_max_s : MAFSBX_DEFAULT_EXEC_TIMEOUT_MAX_S;
	out->exec_timeout_s = b ? b->cfg.exec_timeout_s : MAFSBX_DEFAULT_EXEC_TIMEOUT_S;
}

const char *mafsbx_acquire_state_name(enum mafsbx_acquire_state s)
{
	switch (s) {
	case MAFSBX_ACQ_CREATED: return "created";
	case MAFSBX_ACQ_STARTED: return "started";
	case MAFSBX_ACQ_REUSED: return "reused";
	}
	return "unknown";
}

const char *mafsbx_disposal_code_name(enum mafsbx_disposal_code c)
{
	switch (c) {
	case MAFSBX_DISPOSAL_UNREACHABLE: return "unreachable";
	case MAFSBX_DISPOSAL_TIMEOUT: return "timeout";
	case MAFSBX_DISPOSAL_REFUSED: return "refused";
	case MAFSBX_DISPOSAL_UNLISTED: return "unlisted";
	case MAFSBX_DISPOSAL_UNKNOWN: return "unknown";
	}
	return "unknown";
}

/* ---- per-name locks ------------------------------------------------------ */

/* With b->mu held: forget a name lock nobody holds or waits for. */
static void keylock_drop(struct mafsbx_backend *b, struct sbx_keylock *l)
{
	for (struct sbx_keylock **pp = &b->locks; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	pthread_mutex_destroy(&l->mu);
	free(l);
}

int mafsbx_sbx_lock_name(struct mafsbx_backend *b, const char *name, long wait_ms, struct sbx_keylock **out)
{
	*out = NULL;
	pthread_mutex_lock(&b->mu);
	struct sbx_keylock *l;
	for (l = b->locks; l; l = l->next)
		if (strcmp(l->name, name) == 0)
			break;
	if (!l) {
		l = calloc(1, sizeof(*l));
		if (!l) {
			pthread_mutex_unlock(&b->mu);
			return -ENOMEM;
		}
		snprintf(l->name, sizeof(l->name), "%s", name);
		pthread_mutex_init(&l->mu, NULL);
		l->next = b->locks;
		b->locks = l;
	}
	l->refs++;
	pthread_mutex_unlock(&b->mu);
	/* timedlock takes the wall clock (clocklock would take the monotonic one,
	 * but ThreadSanitizer does not see it); a jump of the clock only moves a
	 * two-minute bound */
	struct timespec until = mafsbx_clock_after_ms(CLOCK_REALTIME, wait_ms);
	if (pthread_mutex_timedlock(&l->mu, &until) != 0) {
		/* the holder is still at it (an image pull, a slow engine): no unbounded queue */
		pthread_mutex_lock(&b->mu);
		if (--l->refs == 0)
			keylock_drop(b, l);
		pthread_mutex_unlock(&b->mu);
		return -EBUSY;
	}
	*out = l;
	return 0;
}

void mafsbx_sbx_unlock_name(struct mafsbx_backend *b, struct sbx_keylock *l)
{
	if (!l)
		return;
	pthread_mutex_unlock(&l->mu);
	pthread_mutex_lock(&b->mu);
	if (--l->refs == 0)
		keylock_drop(b, l);
	pthread_mutex_unlock(&b->mu);
}

/* ---- facts cache -------------------------------------------------------- */

static struct sbx_facts *facts_find(struct mafsbx_backend *b, const char *id)
{
	for (struct sbx_facts *f = b->facts; f; f = f->next)
		if (strcmp(f->id, id) == 0)
			return f;
	return NULL;
}

/* Find or make the entry of (id, name); caller holds b->mu. NULL on ENOMEM. */
static struct sbx_facts *facts_entry(struct mafsbx_backend *b, const char *id, const char *name)
{
	struct sbx_facts *f = facts_find(b, id);
	if (!f) {
		if (b->n_facts >= SBX_FACTS_MAX) {
			/* evict the least recently used */
			struct sbx_facts **victim = NULL;
			for (struct sbx_facts **pp = &b->facts; *pp; pp = &(*pp)->next)
				if (!victim || (*pp)->used < (*victim)->used)
					victim = pp;
			if (victim) {
				struct sbx_facts *v = *victim;
				*victim = v->next;
				free(v);
				b->n_facts--;
			}
		}
		f = calloc(1, sizeof(*f));
		if (!f)
			return NULL;
		snprintf(f->id, sizeof(f->id), "%s", id);
		f->next = b->facts;
		b->facts = f;
		b->n_facts++;
	}
	if (name)
		snprintf(f->name, sizeof(f->name), "%s", name);
	f->used = ++b->tick;
	return f;
}

bool mafsbx_sbx_facts_get(struct mafsbx_backend *b, const char *id, struct sbx_facts *out)
{
	pthread_mutex_lock(&b->mu);
	struct sbx_facts *f = facts_find(b, id);
	if (f) {
		f->used = ++b->tick;
		*out = *f;
		out->next = NULL;
	}
	pthread_mutex_unlock(&b->mu);
	return f != NULL;
}

void mafsbx_sbx_facts_put_identity(struct mafsbx_backend *b, const char *id, const char *name, uid_t uid, gid_t gid)
{
	pthread_mutex_lock(&b->mu);
	struct sbx_facts *f = facts_entry(b, id, name);
	if (f) {
		f->identity_resolved = true;
		f->uid = uid;
		f->gid = gid;
	}
	pthread_mutex_unlock(&b->mu);
}

void mafsbx_sbx_facts_add_probes(struct mafsbx_backend *b, const char *id, const char *name, unsigned bits)
{
	pthread_mutex_lock(&b->mu);
	struct sbx_facts *f = facts_entry(b, id, name);
	if (f)
		f->probes_ok |= bits;
	pthread_mutex_unlock(&b->mu);
}

void mafsbx_sbx_facts_drop(struct mafsbx_backend *b, const char *name, const char *id)
{
	pthread_mutex_lock(&b->mu);
	for (struct sbx_facts **pp = &b->facts; *pp;) {
		struct sbx_facts *f = *pp;
		bool match = (name && *name && strcmp(f->name, name) == 0) ||
			     (id && *id && strncmp(f->id, id, strlen(id)) == 0);
		if (match) {
			*pp = f->next;
			free(f);
			b->n_facts--;
		} else {
			pp = &f->next;
		}
	}
	pthread_mutex_unlock(&b->mu);
}

/* ---- OS family ---------------------------------------------------------- */

int mafsbx_sbx_read_os(struct mafsbx_backend *b, bool *linux, struct mafsbx_error *err)
{
	struct mafsbx_engine_version v;
	memset(&v, 0, sizeof(v));
	int r = mafsbx_engine_version(b->engine, &v, err);
	if (r < 0)
		return r;
	bool is_linux = strcasecmp(v.os, "linux") == 0;
	struct mafsbx_engine_cgroups cg;
	struct mafsbx_error ce;
	bool cg_ok = mafsbx_engine_cgroups(b->engine, &cg, &ce) == 0;
	if (cg_ok && !cg.pids_limit)
		log_warn("the engine ignores --pids-limit (cgroup driver '%s'): sandboxes run without a pids limit",
			 cg.driver);
	pthread_mutex_lock(&b->mu);
	if (cg_ok) {
		b->cg_known = true;
		b->cg = cg;
	}
	b->os_known = true;
	b->os_linux = is_linux;
	b->podman = v.podman;
	snprintf(b->os, sizeof(b->os), "%s", v.os);
	pthread_mutex_unlock(&b->mu);
	if (!is_linux)
		log_warn("the engine reports OS '%s', not linux: no OS family is declared", v.os);
	*linux = is_linux;
	return 0;
}
