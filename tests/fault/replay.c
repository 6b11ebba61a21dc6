/*
 * replay.c: the fault relay's stale answers (replay.h). A thread of its own
 * asks the engine for the target every REPLAY_EVERY_MS over a connection of
 * its own (HTTP/1.0: the engine closes it after the answer, so the answer is
 * everything read) and keeps the last REPLAY_KEEP answers with the time each
 * arrived; a request is answered with the newest one at least the age asked
 * for. Its SystemTime (or any time in it) is then older than the request by
 * at least that age, as a dockerd 26 singleflight answer can be, and its
 * Date header is written fresh, as dockerd writes one for every answer.
 */
#include "replay.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define REPLAY_EVERY_MS 100
#define REPLAY_KEEP 128           /* 12.8 s of answers */
#define ANSWER_MAX (1024 * 1024)

struct kept {
	char *raw;
	size_t len;
	long long got_ms;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t fetcher;
static bool running, stopping;
static char engine_path[108], target_now[256];
static struct kept ring[REPLAY_KEEP];
static unsigned long n_kept;

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One whole answer of the engine to GET target (HTTP/1.0), or NULL. */
static char *fetch(const char *target, size_t *len)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", engine_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	char req[400];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: docker\r\n\r\n", target);
	char *buf = malloc(ANSWER_MAX);
	size_t got = 0;
	bool ok = buf && write(fd, req, (size_t)n) == n;
	while (ok) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 5000) <= 0 || got == ANSWER_MAX) {
			ok = false;
			break;
		}
		ssize_t r = read(fd, buf + got, ANSWER_MAX - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ok = r == 0 && got > 0;
			break;
		}
		got += (size_t)r;
	}
	close(fd);
	if (!ok) {
		free(buf);
		return NULL;
	}
	*len = got;
	return buf;
}

static void *fetch_loop(void *unused)
{
	(void)unused;
	for (;;) {
		char target[sizeof(target_now)];
		pthread_mutex_lock(&mu);
		bool stop = stopping;
		snprintf(target, sizeof(target), "%s", target_now);
		pthread_mutex_unlock(&mu);
		if (stop)
			return NULL;
		size_t len = 0;
		char *raw = fetch(target, &len);
		if (raw) {
			pthread_mutex_lock(&mu);
			if (!strcmp(target, target_now)) {
				struct kept *k = &ring[n_kept++ % REPLAY_KEEP];
				free(k->raw);
				*k = (struct kept){ raw, len, mono_ms() };
				raw = NULL;
			}
			pthread_mutex_unlock(&mu);
			free(raw);
		}
		usleep(REPLAY_EVERY_MS * 1000);
	}
}

static bool drop_header(const char *line, size_t n)
{
	static const char *const drop[] = { "Date:", "Connection:", "Content-Length:", "Transfer-Encoding:",
					    "Keep-Alive:" };
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (n >= strlen(drop[i]) && !strncasecmp(line, drop[i], strlen(drop[i])))
			return true;
	return false;
}

/* An HTTP/1.0 answer read to its end, as an HTTP/1.1 one with a length and a Date of now. */
static char *frame(const char *raw, size_t len, size_t *out_len)
{
	const char *end = memmem(raw, len, "\r\n\r\n", 4), *sp = memchr(raw, ' ', len);
	if (!end || !sp || sp > end)
		return NULL;
	const char *body = end + 4;
	size_t blen = len - (size_t)(body - raw);
	char *out = malloc(len + 256);
	if (!out)
		return NULL;
	size_t o = (size_t)sprintf(out, "HTTP/1.1");
	const char *eol = strstr(sp, "\r\n");
	memcpy(out + o, sp, (size_t)(eol - sp + 2));
	o += (size_t)(eol - sp + 2);
	for (const char *l = eol + 2; l < end;) {
		const char *le = strstr(l, "\r\n");
		if (!drop_header(l, (size_t)(le - l))) {
			memcpy(out + o, l, (size_t)(le - l + 2));
			o += (size_t)(le - l + 2);
		}
		l = le + 2;
	}
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	o += strftime(out + o, 64, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
	o += (size_t)sprintf(out + o, "Content-Length: %zu\r\n\r\n", blen);
	memcpy(out + o, body, blen);
	*out_len = o + blen;
	return out;
}

char *replay_answer(const char *engine, const char *target, long age_ms, size_t *len)
{
	pthread_mutex_lock(&mu);
	if (strcmp(target, target_now) != 0) {
		/* another target: the answers kept are of the old one */
		snprintf(target_now, sizeof(target_now), "%s", target);
		for (int i = 0; i < REPLAY_KEEP; i++) {
			free(ring[i].raw);
			ring[i] = (struct kept){ 0 };
		}
	}
	if (!running) {
		snprintf(engine_path, sizeof(engine_path), "%s", engine);
		running = pthread_create(&fetcher, NULL, fetch_loop, NULL) == 0;
	}
	long long now = mono_ms();
	const struct kept *best = NULL;
	for (int i = 0; i < REPLAY_KEEP; i++)
		if (ring[i].raw && now - ring[i].got_ms >= age_ms && (!best || ring[i].got_ms > best->got_ms))
			best = &ring[i];
	char *out = best ? frame(best->raw, best->len, len) : NULL;
	pthread_mutex_unlock(&mu);
	return out;
}

void replay_stop(void)
{
	pthread_mutex_lock(&mu);
	bool was = running;
	stopping = true;
	pthread_mutex_unlock(&mu);
	if (was)
		pthread_join(fetcher, NULL);
	for (int i = 0; i < REPLAY_KEEP; i++)
		free(ring[i].raw);
}
