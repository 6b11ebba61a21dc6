/*
 * engine_retry.c: what a swarm manager answers while its swarm has no leader
 * (a manager stopped, an election under way: over 15 s on 26.1 with the leader's
 * node paused, doc/scale-out.md),
 * told apart from a real refusal, and the error given when the handle's
 * bound passes: mafsbx_eng_do_call (engine.c) asks such an answer again.
 * Only a handle marked with mafsbx_engine_set_transient_retry (the cluster's
 * manager) retries; a single engine's 5xx fails at once as before.
 */
#include <errno.h>
#include <string.h>

#include "buf.h"
#include "engine_internal.h"
#include "log.h"

void mafsbx_engine_set_transient_retry(struct mafsbx_engine *e, long ms)
{
	if (e)
		e->transient_retry_ms = ms > 0 ? ms : 0;
}

bool mafsbx_eng_transient(const struct mafsbx_error *err)
{
	/* swarmkit's gRPC codes as the daemon words them ("rpc error: code = DeadlineExceeded desc = context
	 * deadline exceeded", "... code = Unavailable ..."), and its own "The swarm does not have a leader" */
	static const char *const words[] = { "DeadlineExceeded", "deadline exceeded", "code = Unavailable",
					     "does not have a leader", "no leader", "leader election", NULL };
	if (!err || err->http_status < 500)
		return false;
	if (err->http_status == 503)
		return true;
	for (size_t i = 0; words[i]; i++)
		if (strcasestr(err->message, words[i]))
			return true;
	return false;
}

int mafsbx_eng_transient_give_up(const struct mafsbx_engine *e, struct mafsbx_error *err)
{
	char last[MAFSBX_ERR_MSG_MAX];
	memcpy(last, err->message, sizeof(last));
	long status = err->http_status;
	int r = mafsbx_error_set_full(err, MAFSBX_EK_UNREACHABLE, ENOTCONN, NULL,
				      "the swarm manager at %s still has no leader after %ld s: %s", e->ep.url,
				      e->transient_retry_ms / 1000, last);
	err->http_status = status;
	return r;
}

void mafsbx_eng_transient_waited(const struct mafsbx_engine *e, const char *what, long long start_ms, int r)
{
	log_info("%s: the swarm manager at %s answered %s after %lld ms of election answers", what, e->ep.url,
		 r == 0 ? "at last" : "another error", mafsbx_now_ms() - start_ms);
}
