/*
 * names.h: sandbox identity, byte-identical to the Python maf-sandbox-docker
 * backend (doc/upstream.md §2): container, network and
 * proxy names from a key and kind, label values, the identity label set and
 * the key.v1 attribution label.
 */
#ifndef MAFSBX_NAMES_H
#define MAFSBX_NAMES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define MAFSBX_NAME_PREFIX "maf-sandbox-docker-"
#define MAFSBX_NAME_LEN 31            /* prefix + 12 hex */
#define MAFSBX_LABEL_VALUE_MAX 63
#define MAFSBX_DEFAULT_WORK_DIR "/maf-sandbox/work"

#define MAFSBX_LABEL_SCOPE "maf-sandbox.scope"
#define MAFSBX_LABEL_THREAD "maf-sandbox.thread"
#define MAFSBX_LABEL_AGENT "maf-sandbox.agent"
#define MAFSBX_LABEL_KIND "maf-sandbox.kind"
#define MAFSBX_LABEL_CALL "maf-sandbox.call"
#define MAFSBX_LABEL_ROLE "maf-sandbox.role"
#define MAFSBX_LABEL_KEY_V1 "maf-sandbox.key.v1"
#define MAFSBX_LABEL_WORK_DIR_V1 "maf-sandbox.work-dir.v1"
#define MAFSBX_LABEL_USER_PREFIX "maf-sandbox.label."
#define MAFSBX_LABEL_OUTPUTS "mafsbxfs.outputs"   /* ours: JSON array of declared outputs */

struct mafsbx_key {
	const char *scope;
	const char *thread;
	const char *agent;
	const char *call;        /* "" (or NULL) for a conversation-scoped sandbox */
};

/*
 * label_value: the value unchanged when it is 1..63 chars of [A-Za-z0-9._-]
 * and not shaped like sha256-<48 hex>; otherwise "sha256-" + 48 hex of
 * SHA-256(value). `out` needs MAFSBX_LABEL_VALUE_MAX + 1 bytes.
 */
void mafsbx_label_value(const char *value, char out[MAFSBX_LABEL_VALUE_MAX + 1]);

/*
 * Container name: "maf-sandbox-docker-" + 12 hex of SHA-256 over the
 * length-prefixed parts scope, thread, agent, kind[, egress_id][, "call:"+call].
 * egress_id is "" unless a proxy image is configured and egress_allow is
 * non-empty (see mafsbx_egress_id). `out` needs MAFSBX_NAME_LEN + 1 bytes.
 */
void mafsbx_container_name(const struct mafsbx_key *key, const char *kind, const char *egress_id,
			   char out[MAFSBX_NAME_LEN + 1]);
/* "allow:" + ",".join(sorted(allow)) (code-point sort), malloc'd; "" when n == 0. */
char *mafsbx_egress_id(const char *const *allow, size_t n);

/* key.v1: base64url(JSON [scope, thread, agent, call] with ", " separators and \uXXXX for
 * non-ASCII), "" when the key is over 4096 characters or the encoding is. malloc'd. */
char *mafsbx_key_attribution(const struct mafsbx_key *key);
/* Decode a key.v1 value strictly into four malloc'd strings; -EINVAL when malformed. */
int mafsbx_key_attribution_decode(const char *value, char **scope, char **thread, char **agent, char **call);

/*
 * The identity label set for a workload as a new JSON object: scope, thread,
 * agent, kind, call (only when non-empty), maf-sandbox.label.<k> for each of
 * `user_labels` (object of strings, may be NULL), and work-dir.v1 (raw).
 */
json_t *mafsbx_workload_labels(const struct mafsbx_key *key, const char *kind, const json_t *user_labels,
			       const char *work_dir);

/* The identity labels every sandbox carries: scope, thread, agent, kind. */
#define MAFSBX_IDENTITY_LABELS 4
extern const char *const mafsbx_identity_labels[MAFSBX_IDENTITY_LABELS];
/* True when `labels` is an object holding each identity label as a non-empty string. */
bool mafsbx_has_identity_labels(const json_t *labels);

/*
 * The sandbox listings (the mount's, `mafsbx ls`, `mafsbx reap`) ask the
 * engine for the cheapest list that holds every sandbox (doc/performance.md
 * "The engine's list filters") and check the rest here as the list streams.
 * want[3] are the scope, thread and agent label values to match (NULL: any;
 * a thread only with a scope, an agent only with a thread).
 *
 * mafsbx_list_filters: {"label": ["maf-sandbox.scope"]}, or one "KEY=VALUE"
 * per value given. New object, NULL without memory.
 */
json_t *mafsbx_list_filters(const char *const want[3]);
/* The members of a list entry the listings read (NULL-terminated): the rest is never parsed. */
extern const char *const mafsbx_list_keys[];
/*
 * True when the list entry `ent` (GET /containers/json) passes the filters
 * the listings sent the engine before: a name starting with
 * MAFSBX_NAME_PREFIX (the canonical name, one leading '/' optional: a
 * legacy link's alias "/PARENT/ALIAS" is not the container's name), each
 * identity label present (any value) and each label value of `want` equal.
 * Byte for byte the engine's own "name" regex and "label" matches.
 */
bool mafsbx_list_entry_selected(const json_t *ent, const char *const want[3]);

/* True when `name` is a workload name (prefix + 12 lowercase hex, no suffix). */
bool mafsbx_is_workload_name(const char *name);

/*
 * A sandbox with an egress allowlist has two more objects named after its
 * workload: the proxy container NAME-proxy and the internal network
 * NAME-net. These are the only places the suffixes are written or read.
 */
#define MAFSBX_PROXY_SUFFIX "-proxy"
#define MAFSBX_NETWORK_SUFFIX "-net"
/* Bytes a proxy's or a network's name needs, with its NUL. */
#define MAFSBX_SIDE_NAME_SIZE (MAFSBX_NAME_LEN + sizeof(MAFSBX_PROXY_SUFFIX))

/* NAME-proxy and NAME-net of the sandbox `name`: only its first MAFSBX_NAME_LEN bytes
 * count, so the proxy's own name gives its network's. */
void mafsbx_proxy_name(const char *name, char out[MAFSBX_SIDE_NAME_SIZE]);
void mafsbx_network_name(const char *name, char out[MAFSBX_SIDE_NAME_SIZE]);

enum mafsbx_name_role {
	MAFSBX_NAME_FOREIGN = 0,   /* none of ours */
	MAFSBX_NAME_WORKLOAD,
	MAFSBX_NAME_PROXY,
	MAFSBX_NAME_NETWORK,
};
/* What `name` (may be NULL) names; unless FOREIGN, `workload` (may be NULL) gets the workload's name. */
enum mafsbx_name_role mafsbx_name_parse(const char *name, char workload[MAFSBX_NAME_LEN + 1]);

/*
 * True when `s` is a full engine object ID as the engine writes them (a
 * container's or an exec's): exactly 64 lowercase hex digits. NULL is false.
 */
bool mafsbx_is_engine_id(const char *s);

#endif
