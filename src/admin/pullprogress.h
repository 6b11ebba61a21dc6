/*
 * pullprogress.h: an image pull's progress, summed from the engine's
 * progress stream (POST /images/create: one JSON object per line, per layer
 * "Pulling fs layer", "Waiting", "Downloading" with progressDetail
 * {current, total}, "Verifying Checksum", "Download complete",
 * "Extracting", "Pull complete", or "Already exists"), for a one-line
 * display such as `mafsbx acquire` draws on a terminal. No engine call, no
 * allocation: a fixed table of layers (an image with more shows the first
 * MAFSBX_PULL_LAYERS_MAX and says "+").
 */
#ifndef MAFSBX_PULLPROGRESS_H
#define MAFSBX_PULLPROGRESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAFSBX_PULL_LAYERS_MAX 128

struct mafsbx_pull_layer {
	char id[72];                 /* the engine's short layer ID */
	uint64_t current, total;     /* download bytes (total 0: not known yet) */
	bool downloaded;             /* the download ended (or the layer was there already) */
	bool done;                   /* extracted, or already there */
};

struct mafsbx_pull_progress {
	struct mafsbx_pull_layer layers[MAFSBX_PULL_LAYERS_MAX];
	size_t n;
	bool more;                   /* layers past the table were seen */
};

void mafsbx_pull_progress_init(struct mafsbx_pull_progress *p);

/* Take one line of the stream; true when the summary may have changed. Lines
 * that are not about a layer ("Pulling from", "Digest:", "Status:") change nothing. */
bool mafsbx_pull_progress_feed(struct mafsbx_pull_progress *p, const json_t *line);

struct mafsbx_pull_summary {
	size_t layers, downloaded, done;
	uint64_t bytes, bytes_total; /* over the layers whose size is known */
	bool more;
};
void mafsbx_pull_progress_sum(const struct mafsbx_pull_progress *p, struct mafsbx_pull_summary *s);

/*
 * "3/5 layers done, 12.3 MB of 40.1 MB" (or "waiting for the registry"
 * before any layer is known) into out (NUL-terminated, cut to size).
 */
void mafsbx_pull_progress_format(const struct mafsbx_pull_progress *p, char *out, size_t size);

#endif
