/*
 * http_internal.h: what the libcurl client's three files share: http.c (the
 * pool, the stall watchdog, one request), httpssh.c (the ssh:// transport)
 * and hijack.c (the hijacked exec stream). Not part of the library's API:
 * only those three include it.
 */
#ifndef MAFSBX_HTTP_INTERNAL_H
#define MAFSBX_HTTP_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "http.h"

#define POOL_MAX 32

/* ssh: how much of its stderr a failure message carries (the tail). */
#define SSH_DIAG_MAX 512

/* ssh: a master that died is started again at most this often. */
#define SSH_MASTER_RETRY_MS 5000

/* ssh: the path of a handle's one-shot listener, in the client's private directory. */
#define SSH_LISTEN_NAME_MAX 108  /* sizeof(sun_path) */

/* ssh: the private directory's path, short enough for "/master" and "/c<20 digits>" in a sun_path. */
#define SSH_DIR_MAX 80

#define PCONN_FDS 4

/*
 * An easy handle and the sockets libcurl opened for it (recorded by the
 * sockopt callback, dropped by the close callback, both under wd_mu). libcurl
 * 7.88 does not tell CURLINFO_ACTIVESOCKET during a transfer, so this is how
 * the watchdog knows which socket to cut. One connection per handle
 * (MAXCONNECTS 1); the spare slots cover connection attempts in flight.
 */
struct pconn {
	CURL *c;
	struct mafsbx_http *h;
	curl_socket_t fds[PCONN_FDS];
	pid_t ssh_pid[PCONN_FDS];    /* ssh: the process behind fds[i], 0 when none */
	bool ssh_mux[PCONN_FDS];     /* ssh: it runs over the master (counted in h->ssh_muxed) */
	int ssh_err[PCONN_FDS];      /* ssh: read end of its stderr pipe, -1 when none */
	int ssh_listen[PCONN_FDS];   /* ssh: the listener fds[i] connects to, until accepted; -1 */
	char ssh_name[SSH_LISTEN_NAME_MAX]; /* ssh: this handle's listener path */
	char ssh_diag[SSH_DIAG_MAX + 64]; /* ssh: how the last transport ended by itself, "" if not */
	bool tls_resume;             /* TLS: the current transfer may offer a cached session */
};

/* One streamed transfer under watch. Lives on the requesting thread's stack. */
struct watch {
	struct watch *next;
	struct watch *prev;
	struct pconn *pc;
	long long last_ms;       /* last time a byte moved */
	long long stall_ms;
	bool fired;
};

struct mafsbx_http {
	struct mafsbx_endpoint ep;
	char base[1200];         /* "http://localhost", "https://[::1]:2376" */
	long connect_ms;
	long timeout_ms;

	pthread_mutex_t pool_mu;
	struct pconn *idle[POOL_MAX];
	size_t n_idle;

	pthread_mutex_t wd_mu;
	pthread_cond_t wd_cv;
	pthread_t wd_thread;
	bool wd_running;
	bool wd_stop;
	struct watch *watches;
	int dead_fd;             /* an unconnected socket: dup3'd over a cut connection */

	/* ssh: one master connection that the transports multiplex over (see ssh_master_path). */
	pthread_mutex_t ssh_mu;
	pid_t ssh_master;        /* 0: none running */
	int ssh_master_in;       /* write end of the master's stdin, -1 when none */
	long long ssh_master_at; /* when it was last started (respawns are spaced) */
	/* The private 0700 directory of the sockets (ssh_dir_checked): "" until
	 * made, replaced by a fresh one when it vanished or changed. */
	char ssh_dir[SSH_DIR_MAX];
	char ssh_ctl[SSH_LISTEN_NAME_MAX]; /* the control socket, in ssh_dir */
	unsigned ssh_muxed;      /* transports running over the master now */
	/* TLS: the server refused a resumed session once; no session is offered to it again
	 * (tls_resume_refused). Never goes back: the server's set-up does not change. */
	_Atomic bool tls_no_resume;
	/* The end of the client's use (mafsbx_http_end_by): 0, or the
	 * mafsbx_now_ms() past which every request and stream is cut. */
	_Atomic long long end_ms;
};

/* http.c */
bool mafsbx_http_ended(struct mafsbx_http *h);
int mafsbx_http_ended_error(const char *method, const char *target, struct mafsbx_error *err);
struct pconn *mafsbx_http_pconn_new(struct mafsbx_http *h);
void mafsbx_http_pconn_free(struct pconn *pc);
int mafsbx_http_setup(struct mafsbx_http *h, struct pconn *pc, char *errbuf);
bool mafsbx_http_tls_resume_refused(struct mafsbx_http *h, struct pconn *pc, CURLcode rc, char *errbuf);
bool mafsbx_http_status_ok(long s);
int mafsbx_http_curl_error(struct mafsbx_http *h, struct pconn *pc, CURLcode rc, const char *errbuf,
			  const char *method, const char *target, struct mafsbx_error *err);
int mafsbx_http_sink_error(int rc, struct mafsbx_error *err);
void mafsbx_http_count_request(void);

/* httpssh.c */
int mafsbx_ssh_dir_fresh(struct mafsbx_http *h, struct mafsbx_error *err);
void mafsbx_ssh_master_stop(struct mafsbx_http *h);
void mafsbx_ssh_listen_name(struct mafsbx_http *h, struct pconn *pc);
curl_socket_t mafsbx_ssh_on_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr);
int mafsbx_ssh_on_prereq(void *clientp, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
		     int conn_local_port);
int mafsbx_ssh_attach(struct pconn *pc);
void mafsbx_ssh_reap(struct pconn *pc, pid_t pid, int errfd);
void mafsbx_ssh_mux_done(struct mafsbx_http *h);

#endif
