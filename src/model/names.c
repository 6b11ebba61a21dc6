/*
 * names.c: sandbox identity, byte-identical to the Python maf-sandbox-docker
 * backend (doc/upstream.md §2): the container name
 * digest, label_value, the workload label set and the key.v1 attribution
 * (Python json.dumps spelling, then base64url). A name or label computed
 * here must equal the one the Python host computes for the same key, or the
 * two never find each other's sandboxes; every vector of doc/upstream.md §2 is a unit test.
 */
#include "names.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "buf.h"
#include "log.h"
#include "utf8.h"

#define KEY_ATTRIBUTION_MAX 4096

static void sha256(const void *data, size_t len, unsigned char out[32])
{
	unsigned int n = 0;
	/* EVP_Digest cannot fail for SHA-256 on valid memory; zero the output if it ever does. */
	if (!EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) || n != 32)
		memset(out, 0, 32);
}

static void hex_lower(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static bool label_safe_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
	       c == '-';
}

static bool is_lower_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Already shaped like a digest: "sha256-" + exactly 48 lowercase hex. */
static bool digest_shaped(const char *v, size_t len)
{
	if (len != 7 + 48 || strncmp(v, "sha256-", 7) != 0)
		return false;
	for (size_t i = 7; i < len; i++)
		if (!is_lower_hex((unsigned char)v[i]))
			return false;
	return true;
}

void mafsbx_label_value(const char *value, char out[MAFSBX_LABEL_VALUE_MAX + 1])
{
	if (!value)
		value = "";
	size_t len = strlen(value);
	bool plain = len >= 1 && len <= MAFSBX_LABEL_VALUE_MAX && !digest_shaped(value, len);
	for (size_t i = 0; plain && i < len; i++)
		plain = label_safe_char((unsigned char)value[i]);
	if (plain) {
		memcpy(out, value, len + 1);
		return;
	}
	unsigned char md[32];
	char hex[65];
	sha256(value, len, md);
	hex_lower(md, 32, hex);
	/* "sha256-" + 48 hex = 55 chars: within the 63-char bound. */
	snprintf(out, MAFSBX_LABEL_VALUE_MAX + 1, "sha256-%.48s", hex);
}

/* Feed "<decimal byte length>:<bytes>" for one part. */
static void digest_part(EVP_MD_CTX *ctx, const char *p)
{
	char prefix[32];
	size_t len = strlen(p);
	int n = snprintf(prefix, sizeof(prefix), "%zu:", len);
	EVP_DigestUpdate(ctx, prefix, (size_t)n);
	EVP_DigestUpdate(ctx, p, len);
}

void mafsbx_container_name(const struct mafsbx_key *key, const char *kind, const char *egress_id,
			   char out[MAFSBX_NAME_LEN + 1])
{
	unsigned char md[32] = { 0 };
	unsigned int mdlen = 0;
	char hex[65];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		digest_part(ctx, key->scope ? key->scope : "");
		digest_part(ctx, key->thread ? key->thread : "");
		digest_part(ctx, key->agent ? key->agent : "");
		digest_part(ctx, kind ? kind : "");
		if (egress_id && *egress_id)
			digest_part(ctx, egress_id);
		if (key->call && *key->call) {
			/* The part is "call:" + id, length-prefixed as one part. */
			size_t n = strlen(key->call);
			char prefix[32];
			int pn = snprintf(prefix, sizeof(prefix), "%zu:call:", n + 5);
			EVP_DigestUpdate(ctx, prefix, (size_t)pn);
			EVP_DigestUpdate(ctx, key->call, n);
		}
		EVP_DigestFinal_ex(ctx, md, &mdlen);
	}
	EVP_MD_CTX_free(ctx);
	hex_lower(md, 32, hex);
	snprintf(out, MAFSBX_NAME_LEN + 1, "%s%.12s", MAFSBX_NAME_PREFIX, hex);
}

static int cmp_codepoint(const void *a, const void *b)
{
	/* strcmp compares bytes as unsigned char; for valid UTF-8 that is code-point order,
	 * which is what Python's sorted() on str gives. */
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *mafsbx_egress_id(const char *const *allow, size_t n)
{
	if (n == 0)
		return strdup("");
	const char **sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return NULL;
	memcpy(sorted, allow, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_codepoint);
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	int r = mafsbx_buf_puts(&b, "allow:");
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (i)
			r = mafsbx_buf_puts(&b, ",");
		if (r == 0)
			r = mafsbx_buf_puts(&b, sorted[i]);
	}
	free(sorted);
	if (r) {
		mafsbx_buf_free(&b);
		return NULL;
	}
	return mafsbx_buf_steal(&b, NULL);
}

/*
 * Decode one UTF-8 sequence at s (n bytes available). Returns its length
 * and sets *cp; an invalid byte is returned as length 1 with *cp set to
 * 0xDC00 + byte (Python's surrogateescape spelling of the same byte).
 */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t k = mafsbx_utf8_decode(s, n, cp, NULL);
	if (k)
		return k;
	*cp = 0xdc00 + s[0];
	return 1;
}

static size_t codepoints(const char *s)
{
	size_t n = 0, len = strlen(s);
	const unsigned char *p = (const unsigned char *)s;
	while (len) {
		uint32_t cp;
		size_t k = utf8_next(p, len, &cp);
		p += k, len -= k, n++;
	}
	return n;
}

/* Python json.dumps(str) with ensure_ascii=True. */
static int json_py_string(struct mafsbx_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	int r = mafsbx_buf_puts(b, "\"");
	while (r == 0 && len) {
		uint32_t cp;
		size_t k = utf8_next(p, len, &cp);
		p += k, len -= k;
		switch (cp) {
		case '"': r = mafsbx_buf_puts(b, "\\\""); break;
		case '\\': r = mafsbx_buf_puts(b, "\\\\"); break;
		case '\n': r = mafsbx_buf_puts(b, "\\n"); break;
		case '\r': r = mafsbx_buf_puts(b, "\\r"); break;
		case '\t': r = mafsbx_buf_puts(b, "\\t"); break;
		case '\b': r = mafsbx_buf_puts(b, "\\b"); break;
		case '\f': r = mafsbx_buf_puts(b, "\\f"); break;
		default:
			if (cp >= 0x20 && cp <= 0x7e) {
				char c = (char)cp;
				r = mafsbx_buf_append(b, &c, 1);
			} else if (cp < 0x10000) {
				r = mafsbx_buf_printf(b, "\\u%04x", cp);
			} else {
				uint32_t v = cp - 0x10000;
				r = mafsbx_buf_printf(b, "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
			}
		}
	}
	if (r == 0)
		r = mafsbx_buf_puts(b, "\"");
	return r;
}

char *mafsbx_key_attribution(const struct mafsbx_key *key)
{
	const char *f[4] = { key->scope ? key->scope : "", key->thread ? key->thread : "",
			     key->agent ? key->agent : "", key->call ? key->call : "" };
	size_t chars = 0;
	for (int i = 0; i < 4; i++)
		chars += codepoints(f[i]);
	if (chars > KEY_ATTRIBUTION_MAX) {
		log_warn("sandbox key is %zu characters, over %d: the %s label is left empty", chars,
			 KEY_ATTRIBUTION_MAX, MAFSBX_LABEL_KEY_V1);
		return strdup("");
	}
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	int r = mafsbx_buf_puts(&b, "[");
	for (int i = 0; r == 0 && i < 4; i++) {
		if (i)
			r = mafsbx_buf_puts(&b, ", ");
		if (r == 0)
			r = json_py_string(&b, f[i]);
	}
	if (r == 0)
		r = mafsbx_buf_puts(&b, "]");
	if (r) {
		mafsbx_buf_free(&b);
		return NULL;
	}
	char *enc = mafsbx_base64_encode(b.data, b.len, MAFSBX_B64_URL);
	mafsbx_buf_free(&b);
	if (enc && strlen(enc) > KEY_ATTRIBUTION_MAX) {
		log_warn("sandbox key attribution is over %d characters: the %s label is left empty",
			 KEY_ATTRIBUTION_MAX, MAFSBX_LABEL_KEY_V1);
		enc[0] = '\0';
	}
	return enc;
}

int mafsbx_key_attribution_decode(const char *value, char **scope, char **thread, char **agent, char **call)
{
	char **outs[4] = { scope, thread, agent, call };
	unsigned char *raw = NULL;
	size_t rawlen = 0;
	if (!value)
		return -EINVAL;
	/* Python writes it padded with zero spare bits; anything else is not a key.v1 value. */
	int r = mafsbx_base64_decode(value, strlen(value), MAFSBX_B64_URL | MAFSBX_B64_NONEMPTY, &raw, &rawlen);
	if (r)
		return r;
	json_error_t jerr;
	json_t *arr = json_loadb((const char *)raw, rawlen, JSON_REJECT_DUPLICATES, &jerr);
	free(raw);
	if (!arr || !json_is_array(arr) || json_array_size(arr) != 4) {
		json_decref(arr);
		return -EINVAL;
	}
	char *vals[4] = { NULL, NULL, NULL, NULL };
	for (size_t i = 0; i < 4; i++) {
		json_t *s = json_array_get(arr, i);
		/* A NUL inside a string cannot be a key field (C strings). */
		if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s)) {
			r = -EINVAL;
			break;
		}
		vals[i] = strdup(json_string_value(s));
		if (!vals[i]) {
			r = -ENOMEM;
			break;
		}
	}
	json_decref(arr);
	for (int i = 0; i < 4; i++) {
		if (r) {
			free(vals[i]);
		} else if (outs[i]) {
			*outs[i] = vals[i];
		} else {
			free(vals[i]);
		}
	}
	return r;
}

static int set_label(json_t *labels, const char *k, const char *raw)
{
	char v[MAFSBX_LABEL_VALUE_MAX + 1];
	mafsbx_label_value(raw, v);
	return json_object_set_new(labels, k, json_string(v));
}

json_t *mafsbx_workload_labels(const struct mafsbx_key *key, const char *kind, const json_t *user_labels,
			       const char *work_dir)
{
	json_t *l = json_object();
	if (!l)
		return NULL;
	int r = set_label(l, MAFSBX_LABEL_SCOPE, key->scope);
	r |= set_label(l, MAFSBX_LABEL_THREAD, key->thread);
	r |= set_label(l, MAFSBX_LABEL_AGENT, key->agent);
	r |= set_label(l, MAFSBX_LABEL_KIND, kind);
	if (key->call && *key->call)
		r |= set_label(l, MAFSBX_LABEL_CALL, key->call);
	if (user_labels && json_is_object(user_labels)) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)user_labels, k, v) {
			if (!json_is_string(v))
				continue;
			char *full = NULL;
			if (asprintf(&full, "%s%s", MAFSBX_LABEL_USER_PREFIX, k) < 0) {
				r = -1;
				break;
			}
			r |= set_label(l, full, json_string_value(v));
			free(full);
		}
	}
	r |= json_object_set_new(l, MAFSBX_LABEL_WORK_DIR_V1,
				 json_string(work_dir ? work_dir : MAFSBX_DEFAULT_WORK_DIR));
	if (r) {
		json_decref(l);
		return NULL;
	}
	return l;
}

bool mafsbx_is_workload_name(const char *name)
{
	size_t pl = strlen(MAFSBX_NAME_PREFIX);
	if (!name || strlen(name) != MAFSBX_NAME_LEN || strncmp(name, MAFSBX_NAME_PREFIX, pl) != 0)
		return false;
	for (size_t i = pl; i < MAFSBX_NAME_LEN; i++)
		if (!is_lower_hex((unsigned char)name[i]))
			return false;
	return true;
}

static void side_name(const char *name, const char *suffix, char out[MAFSBX_SIDE_NAME_SIZE])
{
	snprintf(out, MAFSBX_SIDE_NAME_SIZE, "%.*s%s", MAFSBX_NAME_LEN, name, suffix);
}

void mafsbx_proxy_name(const char *name, char out[MAFSBX_SIDE_NAME_SIZE])
{
	side_name(name, MAFSBX_PROXY_SUFFIX, out);
}

void mafsbx_network_name(const char *name, char out[MAFSBX_SIDE_NAME_SIZE])
{
	side_name(name, MAFSBX_NETWORK_SUFFIX, out);
}

enum mafsbx_name_role mafsbx_name_parse(const char *name, char workload[MAFSBX_NAME_LEN + 1])
{
	char base[MAFSBX_NAME_LEN + 1];
	if (!name || strnlen(name, MAFSBX_NAME_LEN) < MAFSBX_NAME_LEN)
		return MAFSBX_NAME_FOREIGN;
	memcpy(base, name, MAFSBX_NAME_LEN);
	base[MAFSBX_NAME_LEN] = '\0';
	if (!mafsbx_is_workload_name(base))
		return MAFSBX_NAME_FOREIGN;
	const char *suffix = name + MAFSBX_NAME_LEN;
	enum mafsbx_name_role role = !*suffix				    ? MAFSBX_NAME_WORKLOAD
				     : !strcmp(suffix, MAFSBX_PROXY_SUFFIX)   ? MAFSBX_NAME_PROXY
				     : !strcmp(suffix, MAFSBX_NETWORK_SUFFIX) ? MAFSBX_NAME_NETWORK
									      : MAFSBX_NAME_FOREIGN;
	if (role != MAFSBX_NAME_FOREIGN && workload)
		memcpy(workload, base, MAFSBX_NAME_LEN + 1);
	return role;
}

bool mafsbx_is_engine_id(const char *s)
{
	size_t n = 0;
	if (!s)
		return false;
	for (; s[n]; n++)
		if (!is_lower_hex((unsigned char)s[n]))
			return false;
	return n == 64;
}

const char *const mafsbx_identity_labels[MAFSBX_IDENTITY_LABELS] = {
	MAFSBX_LABEL_SCOPE,
	MAFSBX_LABEL_THREAD,
	MAFSBX_LABEL_AGENT,
	MAFSBX_LABEL_KIND,
};

bool mafsbx_has_identity_labels(const json_t *labels)
{
	if (!json_is_object(labels))
		return false;
	for (size_t i = 0; i < MAFSBX_IDENTITY_LABELS; i++) {
		const char *v = json_string_value(json_object_get(labels, mafsbx_identity_labels[i]));
		if (!v || !v[0])
			return false;
	}
	return true;
}

/* The keys of want[] in mafsbx_list_filters and mafsbx_list_entry_selected. */
static const char *const want_keys[3] = { MAFSBX_LABEL_SCOPE, MAFSBX_LABEL_THREAD, MAFSBX_LABEL_AGENT };

/* Config: Podman's list entry carries "Config": null (mafsbx_sbx_labels_of); HostConfig: its NetworkMode. */
const char *const mafsbx_list_keys[] = { "Id", "Names", "Image", "State", "Created", "Labels", "HostConfig", "Config",
					 NULL };

json_t *mafsbx_list_filters(const char *const want[3])
{
	json_t *f = json_object();
	json_t *labels = json_array();
	if (!f || !labels || json_object_set(f, "label", labels) < 0) {
		json_decref(f);
		json_decref(labels);
		return NULL;
	}
	json_decref(labels);   /* f holds it */
	/*
	 * One label: dockerd evaluates every filter on every container it holds,
	 * and a name regex or more labels cost it more than they save
	 * (doc/performance.md); a value keeps a scope's list that scope's size.
	 */
	int r = 0;
	for (size_t k = 0; k < 3 && r == 0; k++) {
		if (!want[k])
			continue;
		char kv[sizeof(MAFSBX_LABEL_THREAD) + MAFSBX_LABEL_VALUE_MAX + 2];
		snprintf(kv, sizeof(kv), "%s=%s", want_keys[k], want[k]);
		r = json_array_append_new(labels, json_string(kv));
	}
	if (r == 0 && json_array_size(labels) == 0)
		r = json_array_append_new(labels, json_string(MAFSBX_LABEL_SCOPE));
	if (r < 0) {
		json_decref(f);
		return NULL;
	}
	return f;
}

/* The container's own name among a list entry's Names, without its '/': the one without a second '/'. */
static const char *canonical_name(const json_t *ent)
{
	size_t i;
	const json_t *v;
	json_array_foreach(json_object_get(ent, "Names"), i, v) {
		const char *nm = json_string_value(v);
		if (!nm)
			continue;
		if (*nm == '/')
			nm++;
		if (!strchr(nm, '/'))
			return nm;
	}
	return NULL;
}

bool mafsbx_list_entry_selected(const json_t *ent, const char *const want[3])
{
	const char *nm = canonical_name(ent);
	const json_t *labels = json_object_get(ent, "Labels");
	if (!nm || strncmp(nm, MAFSBX_NAME_PREFIX, strlen(MAFSBX_NAME_PREFIX)) != 0 || !json_is_object(labels))
		return false;
	for (size_t k = 0; k < MAFSBX_IDENTITY_LABELS; k++)
		if (!json_object_get(labels, mafsbx_identity_labels[k]))
			return false;
	for (size_t k = 0; k < 3; k++) {
		const char *v = json_string_value(json_object_get(labels, want_keys[k]));
		if (want[k] && (!v || strcmp(v, want[k]) != 0))
			return false;
	}
	return true;
}
