/*
 * pullprogress.c: an image pull's progress summed per layer (pullprogress.h).
 */
#include "pullprogress.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void mafsbx_pull_progress_init(struct mafsbx_pull_progress *p)
{
	memset(p, 0, sizeof(*p));
}

static struct mafsbx_pull_layer *layer_of(struct mafsbx_pull_progress *p, const char *id)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->layers[i].id, id) == 0)
			return &p->layers[i];
	if (p->n == MAFSBX_PULL_LAYERS_MAX || strlen(id) >= sizeof(p->layers[0].id)) {
		p->more = true;
		return NULL;
	}
	struct mafsbx_pull_layer *l = &p->layers[p->n++];
	memset(l, 0, sizeof(*l));
	snprintf(l->id, sizeof(l->id), "%s", id);
	return l;
}

/* progressDetail's field as a byte count, or 0. */
static uint64_t detail(const json_t *line, const char *field)
{
	json_int_t v = json_integer_value(json_object_get(json_object_get(line, "progressDetail"), field));
	return v > 0 ? (uint64_t)v : 0;
}

bool mafsbx_pull_progress_feed(struct mafsbx_pull_progress *p, const json_t *line)
{
	const char *status = json_string_value(json_object_get(line, "status"));
	const char *id = json_string_value(json_object_get(line, "id"));
	if (!status || !id || !*id)
		return false;
	/* the per-layer statuses; "Pulling from REPO" names the tag in `id` */
	static const char *const layer_status[] = { "Pulling fs layer", "Waiting", "Downloading",
						    "Verifying Checksum", "Download complete", "Extracting",
						    "Pull complete", "Already exists", "Retrying" };
	bool known = false;
	for (size_t i = 0; i < sizeof(layer_status) / sizeof(layer_status[0]) && !known; i++)
		known = strncmp(status, layer_status[i], strlen(layer_status[i])) == 0;
	if (!known)
		return false;
	struct mafsbx_pull_layer *l = layer_of(p, id);
	if (!l)
		return true;
	if (strcmp(status, "Downloading") == 0) {
		uint64_t cur = detail(line, "current"), tot = detail(line, "total");
		if (tot)
			l->total = tot;
		l->current = l->total && cur > l->total ? l->total : cur;
	} else if (strcmp(status, "Download complete") == 0 || strcmp(status, "Verifying Checksum") == 0 ||
		   strcmp(status, "Extracting") == 0) {
		l->downloaded = true;
		if (l->total)
			l->current = l->total;
	} else if (strcmp(status, "Pull complete") == 0 || strcmp(status, "Already exists") == 0) {
		l->downloaded = l->done = true;
		if (l->total)
			l->current = l->total;
	}
	return true;
}

void mafsbx_pull_progress_sum(const struct mafsbx_pull_progress *p, struct mafsbx_pull_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->layers = p->n;
	s->more = p->more;
	for (size_t i = 0; i < p->n; i++) {
		const struct mafsbx_pull_layer *l = &p->layers[i];
		s->downloaded += l->downloaded;
		s->done += l->done;
		if (l->total) {
			s->bytes += l->current;
			s->bytes_total += l->total;
		}
	}
}

/* Bytes as "12.3 MB" (decimal units, as docker pull shows them). */
static void human(uint64_t v, char out[24])
{
	static const char *const unit[] = { "B", "kB", "MB", "GB", "TB" };
	double d = (double)v;
	size_t u = 0;
	while (d >= 1000 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		d /= 1000;
		u++;
	}
	if (u == 0)
		snprintf(out, 24, "%" PRIu64 " B", v);
	else
		snprintf(out, 24, "%.1f %s", d, unit[u]);
}

void mafsbx_pull_progress_format(const struct mafsbx_pull_progress *p, char *out, size_t size)
{
	struct mafsbx_pull_summary s;
	mafsbx_pull_progress_sum(p, &s);
	if (!size)
		return;
	if (!s.layers) {
		snprintf(out, size, "waiting for the registry");
		return;
	}
	char have[24], all[24];
	human(s.bytes, have);
	human(s.bytes_total, all);
	if (s.downloaded < s.layers)
		snprintf(out, size, "%zu/%zu%s layers done, %s of %s", s.done, s.layers, s.more ? "+" : "", have, all);
	else if (s.done < s.layers || s.more)
		snprintf(out, size, "%zu/%zu%s layers done, %s downloaded, extracting", s.done, s.layers,
			 s.more ? "+" : "", all);
	else
		snprintf(out, size, "%zu/%zu layers done, %s downloaded", s.done, s.layers, all);
}
