/*
 * it_sandbox.c: the sandbox backend seen from outside, against the real
 * dockerd: interop with a container made by hand through the plain API with
 * the upstream name and labels (found, reused by acquire, removed by
 * dispose by conversation); what the filesystem shows (list by scope,
 * lookup by name, the key behind digested labels, outputs, work dir,
 * paused state, proxies excluded, containers that only partly look like a
 * sandbox excluded, in `mafsbx ls` too); the declarations; and an absent image
 * pulled from a local registry (Debian's docker-registry on 127.0.0.1),
 * by the library and by `mafsbx acquire` (MAFSBX_CLI), which draws the
 * pull's progress on its stderr when that is a terminal (a pseudo-terminal
 * here) and prints nothing but errors on stderr otherwise.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "http.h"
#include "sbx_testlib.h"

static void test_interop_upstream_container(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX], plain[MAFSBX_NAME_LEN + 1], dig[MAFSBX_NAME_LEN + 1], id1[65], id2[65];
	sbxt_scope(scope);
	/* what a Python host would have made: upstream name, identity + work-dir labels, no key.v1 */
	sbxt_upstream_container(scope, "devops-engineer", "bicep", NULL, true, plain, id1);
	sbxt_upstream_container(scope, "an agent with spaces", "python", NULL, true, dig, id2);

	struct mafsbx_sandbox_info *list;
	size_t n;
	struct mafsbx_error e;
	harness_check(mafsbx_sandbox_list(sbxt_g.b, scope, &list, &n, &e), &e, "list");
	assert_int_equal(n, 2);
	mafsbx_sandbox_info_free_array(list, n);

	struct mafsbx_sandbox_info i;
	harness_check(mafsbx_sandbox_lookup(sbxt_g.b, plain, &i, &e), &e, "lookup");
	assert_string_equal(i.id, id1);
	assert_string_equal(i.kind, "bicep");
	assert_string_equal(i.call, "");
	assert_string_equal(i.work_dir, "/maf-sandbox/work");
	/* no key.v1, but no label was digested: the labels are the key */
	assert_true(i.key_known);
	assert_string_equal(i.key_agent, "devops-engineer");
	assert_int_equal(i.n_outputs, 0);
	mafsbx_sandbox_info_clear(&i);
	harness_check(mafsbx_sandbox_lookup(sbxt_g.b, dig, &i, &e), &e, "lookup");
	assert_false(i.key_known);   /* a digested label without key.v1 cannot be read back */
	mafsbx_sandbox_info_clear(&i);

	/* acquire of that key reuses it */
	struct mafsbx_acquire_result r;
	sbxt_acquire_ok(scope, "devops-engineer", "bicep", NULL, &r);
	assert_int_equal(r.state, MAFSBX_ACQ_REUSED);
	assert_string_equal(r.id, id1);
	sbxt_acquire_ok(scope, "an agent with spaces", "python", NULL, &r);
	assert_int_equal(r.state, MAFSBX_ACQ_REUSED);
	assert_string_equal(r.id, id2);

	/* and the conversation purge removes both */
	assert_int_equal(sbxt_dispose_scope(scope), 2);
	assert_false(sbxt_exists(id1));
	assert_false(sbxt_exists(id2));
}

static void test_inventory(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX], other[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	sbxt_scope(other);
	struct mafsbx_acquire_result a, c, o;
	sbxt_acquire_ok(scope, "agent with spaces", "k",
			"\"outputs\":[\"result.json\",\"plots/fig1.png\"],\"work_dir\":\"/srv/w\"", &a);
	sbxt_acquire_ok(scope, "a", "k", "\"call\":\"call 1\",\"isolation_scope\":\"call\",\"capabilities\":[]", &c);
	sbxt_acquire_ok(other, "a", "k", "\"capabilities\":[]", &o);

	struct mafsbx_sandbox_info i;
	struct mafsbx_error e;
	harness_check(mafsbx_sandbox_lookup(sbxt_g.b, a.name, &i, &e), &e, "lookup");
	assert_string_equal(i.name, a.name);
	assert_string_equal(i.id, a.id);
	assert_string_equal(i.state, "running");
	assert_false(i.paused);
	assert_true(i.created > 1700000000);
	assert_string_equal(i.image, harness_image());
	assert_string_equal(i.scope, scope);
	char v[MAFSBX_LABEL_VALUE_MAX + 1];
	mafsbx_label_value("agent with spaces", v);
	assert_string_equal(i.agent, v);
	/* key.v1 recovers what the labels digested */
	assert_true(i.key_known);
	assert_string_equal(i.key_scope, scope);
	assert_string_equal(i.key_agent, "agent with spaces");
	assert_string_equal(i.key_call, "");
	assert_string_equal(i.work_dir, "/srv/w");
	assert_int_equal(i.n_outputs, 2);
	assert_string_equal(i.outputs[0], "result.json");
	assert_string_equal(i.outputs[1], "plots/fig1.png");
	assert_string_equal(i.network_mode, "none");
	assert_true(i.identity_known);
	assert_int_equal(i.uid, 0);
	mafsbx_sandbox_info_clear(&i);

	harness_check(mafsbx_sandbox_lookup(sbxt_g.b, c.name, &i, &e), &e, "lookup call");
	mafsbx_label_value("call 1", v);
	assert_string_equal(i.call, v);
	assert_true(i.key_known);
	assert_string_equal(i.key_call, "call 1");
	mafsbx_sandbox_info_clear(&i);

	/* paused shows as paused */
	harness_check(mafsbx_container_pause(harness_engine(), a.id, &e), &e, "pause");
	harness_check(mafsbx_sandbox_lookup(sbxt_g.b, a.name, &i, &e), &e, "lookup paused");
	assert_true(i.paused);
	assert_string_equal(i.state, "paused");
	mafsbx_sandbox_info_clear(&i);

	/* a proxy of this sandbox is not a sandbox */
	char proxy[MAFSBX_NAME_LEN + 8], pid[65];
	snprintf(proxy, sizeof(proxy), "%s-proxy", c.name);
	struct mafsbx_key k = { scope, SBXT_THREAD, "a", "call 1" };
	json_t *labels = mafsbx_workload_labels(&k, "k", NULL, NULL);
	json_object_set_new(labels, MAFSBX_LABEL_ROLE, json_string("proxy"));
	json_t *pcfg = json_pack("{s:s, s:[s,s], s:o, s:{s:s}}", "Image", harness_image(), "Cmd", "sleep", "infinity",
				 "Labels", labels, "HostConfig", "NetworkMode", "none");
	harness_register_container(proxy);
	harness_check(mafsbx_container_create(harness_engine(), proxy, pcfg, pid, &e), &e, "proxy");
	json_decref(pcfg);
	assert_int_equal(mafsbx_sandbox_lookup(sbxt_g.b, proxy, &i, &e), -ENOENT);

	struct mafsbx_sandbox_info *list;
	size_t n;
	harness_check(mafsbx_sandbox_list(sbxt_g.b, scope, &list, &n, &e), &e, "list");
	assert_int_equal(n, 2);
	bool saw_paused = false;
	for (size_t j = 0; j < n; j++) {
		assert_string_equal(list[j].scope, scope);
		if (strcmp(list[j].name, a.name) == 0) {
			saw_paused = list[j].paused;
			assert_int_equal(list[j].n_outputs, 2);
			assert_true(list[j].key_known);
		} else {
			assert_string_equal(list[j].name, c.name);
		}
	}
	assert_true(saw_paused);
	mafsbx_sandbox_info_free_array(list, n);
	/* unfiltered: ours are among them */
	harness_check(mafsbx_sandbox_list(sbxt_g.b, NULL, &list, &n, &e), &e, "list all");
	size_t ours = 0;
	for (size_t j = 0; j < n; j++)
		ours += strcmp(list[j].name, a.name) == 0 || strcmp(list[j].name, c.name) == 0 ||
			strcmp(list[j].name, o.name) == 0;
	assert_int_equal(ours, 3);
	mafsbx_sandbox_info_free_array(list, n);

	/* absent */
	char missing[MAFSBX_NAME_LEN + 1];
	snprintf(missing, sizeof(missing), "%s000000000000", MAFSBX_NAME_PREFIX);
	assert_int_equal(mafsbx_sandbox_lookup(sbxt_g.b, missing, &i, &e), -ENOENT);

	assert_int_equal(sbxt_dispose_scope(scope), 2);
	assert_false(sbxt_exists(proxy));
	assert_int_equal(sbxt_dispose_scope(other), 1);
}

/* `mafsbx ls -q --scope SCOPE`: its stdout (names, one a line), malloc'd. */
static char *cli_ls_quiet(const char *scope)
{
	const char *cli = getenv("MAFSBX_CLI");
	if (!cli)
		fail_msg("MAFSBX_CLI is not set (meson sets it to the built mafsbx)");
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "'%s' ls -q --scope '%s'", cli, scope);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	struct mafsbx_buf b = { 0 };
	char chunk[4096];
	size_t got;
	while ((got = fread(chunk, 1, sizeof(chunk), p)) > 0)
		assert_int_equal(mafsbx_buf_append(&b, chunk, got), 0);
	assert_int_equal(pclose(p), 0);
	assert_int_equal(mafsbx_buf_append(&b, "", 1), 0);
	return b.data;
}

/*
 * The listings ask the engine for one label and check the rest as the list
 * streams (mafsbx_list_filters): a container that only partly looks like a
 * sandbox (the identity labels under another name; the name without a
 * label) still does not show, in the mount's lists and in `mafsbx ls`,
 * while one the Python backend made does.
 */
static void test_lookalikes_not_listed(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX], up[MAFSBX_NAME_LEN + 1], upid[65], other[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	sbxt_upstream_container(scope, "a", "k", NULL, false, up, upid);

	/* the identity labels (of the same key), another name */
	struct mafsbx_key k = { scope, SBXT_THREAD, "b", "" };
	json_t *cfg = json_pack("{s:o}", "Labels", mafsbx_workload_labels(&k, "k", NULL, NULL));
	harness_container_cfg("lookalike", cfg, false, other);
	json_decref(cfg);
	/* the name, all labels but kind */
	char nolabel[MAFSBX_NAME_LEN + 1], id[65];
	struct mafsbx_key k2 = { scope, SBXT_THREAD, "c", "" };
	mafsbx_container_name(&k2, "k", "", nolabel);
	json_t *l = mafsbx_workload_labels(&k2, "k", NULL, NULL);
	json_object_del(l, MAFSBX_LABEL_KIND);
	cfg = json_pack("{s:s, s:[s,s], s:o, s:{s:s}}", "Image", harness_image(), "Cmd", "sleep", "infinity", "Labels",
			l, "HostConfig", "NetworkMode", "none");
	harness_register_container(nolabel);
	struct mafsbx_error e;
	harness_check(mafsbx_container_create(harness_engine(), nolabel, cfg, id, &e), &e, "create");
	json_decref(cfg);

	struct mafsbx_sandbox_info *list;
	size_t n;
	harness_check(mafsbx_sandbox_list(sbxt_g.b, scope, &list, &n, &e), &e, "list");
	assert_int_equal(n, 1);
	assert_string_equal(list[0].name, up);
	mafsbx_sandbox_info_free_array(list, n);
	harness_check(mafsbx_sandbox_list_labels(sbxt_g.b, scope, SBXT_THREAD, NULL, 0, NULL, &list, &n, &e), &e,
		      "list thread");
	assert_int_equal(n, 1);
	assert_string_equal(list[0].name, up);
	mafsbx_sandbox_info_free_array(list, n);
	/* the whole list: the upstream one, neither lookalike */
	harness_check(mafsbx_sandbox_list(sbxt_g.b, NULL, &list, &n, &e), &e, "list all");
	size_t seen = 0;
	for (size_t j = 0; j < n; j++) {
		assert_string_not_equal(list[j].name, nolabel);
		assert_string_not_equal(list[j].name, other);
		seen += strcmp(list[j].name, up) == 0;
	}
	assert_int_equal(seen, 1);
	mafsbx_sandbox_info_free_array(list, n);

	char *out = cli_ls_quiet(scope);
	char want[MAFSBX_NAME_LEN + 2];
	snprintf(want, sizeof(want), "%s\n", up);
	assert_string_equal(out, want);
	free(out);
}

static void test_declarations(void **state)
{
	(void)state;
	struct mafsbx_error e;
	json_t *d = mafsbx_sandbox_declarations(sbxt_g.b, &e);
	assert_non_null(d);
	char *text = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(
		text,
		"{\"capabilities\":[\"exec\",\"files_in\",\"files_out\",\"files_delete\",\"host_tools\",\"reclaim\"],"
		"\"egress_modes\":[\"closed\"],\"isolation\":\"container\",\"isolation_scopes\":[\"conversation\",\"call\"],"
		"\"limits\":{\"files_in\":{\"max_bytes_per_file\":67108864,\"max_files\":256,\"max_total_bytes\":268435456},"
		"\"files_out\":{\"max_bytes_per_file\":67108864,\"max_files\":256,\"max_total_bytes\":268435456},"
		"\"max_read_bytes\":67108864,\"max_write_bytes\":67108864},\"os_families\":[\"posix\"]}");
	free(text);
	json_decref(d);
	/* hardening options never change the isolation */
	struct mafsbx_sandbox_config cfg;
	mafsbx_sandbox_config_defaults(&cfg);
	cfg.cap_drop_all = true;
	cfg.memory_bytes = 1 << 28;
	cfg.max_read_bytes = 1024;
	struct mafsbx_backend *b = sbxt_backend_with(&cfg);
	d = mafsbx_sandbox_declarations(b, &e);
	assert_string_equal(json_string_value(json_object_get(d, "isolation")), "container");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "limits"), "max_read_bytes")), 1024);
	json_decref(d);
	mafsbx_backend_free(b);
}

/* ---- pull from a local registry ---------------------------------------- */

#define REGISTRY_BIN "/usr/bin/docker-registry"

static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || getsockname(s, (struct sockaddr *)&a, &len) < 0)
		fail_msg("no free port");
	close(s);
	return ntohs(a.sin_port);
}

static bool port_open(int port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	bool ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (s >= 0)
		close(s);
	return ok;
}

struct registry {
	pid_t pid;
	int port;
	char dir[64];
};

static void registry_stop(struct registry *r);
static struct registry *g_registry;

/* A failed assertion ends the program: never leave the registry process behind. */
static void registry_at_exit(void)
{
	if (g_registry)
		registry_stop(g_registry);
}

static void registry_start(struct registry *r)
{
	static bool hooked;
	if (!hooked)
		atexit(registry_at_exit), hooked = true;
	snprintf(r->dir, sizeof(r->dir), "/tmp/mafsbxtest-sbx-registry-XXXXXX");
	if (!mkdtemp(r->dir))
		fail_msg("mkdtemp");
	r->port = free_port();
	char cfg[128], store[96], logf[96];
	snprintf(cfg, sizeof(cfg), "%s/config.yml", r->dir);
	snprintf(store, sizeof(store), "%s/store", r->dir);
	snprintf(logf, sizeof(logf), "%s/log", r->dir);
	FILE *f = fopen(cfg, "w");
	if (!f)
		fail_msg("cannot write %s", cfg);
	fprintf(f, "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\n"
		   "http:\n  addr: 127.0.0.1:%d\n",
		store, r->port);
	fclose(f);
	r->pid = fork();
	if (r->pid == 0) {
		int fd = open(logf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(REGISTRY_BIN, "docker-registry", "serve", cfg, (char *)NULL);
		_exit(127);
	}
	if (r->pid < 0)
		fail_msg("fork");
	g_registry = r;
	for (int i = 0; i < 200 && !port_open(r->port); i++)
		usleep(50 * 1000);
	if (!port_open(r->port))
		fail_msg("docker-registry did not listen on 127.0.0.1:%d (see %s)", r->port, logf);
}

static void registry_stop(struct registry *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGTERM);
		int st;
		for (int i = 0; i < 100 && waitpid(r->pid, &st, WNOHANG) == 0; i++)
			usleep(50 * 1000);
		if (waitpid(r->pid, &st, WNOHANG) == 0) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, &st, 0);
		}
		r->pid = 0;
	}
	if (r->dir[0]) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", r->dir);
		r->dir[0] = '\0';
	}
	g_registry = NULL;
}

/* POST /images/NAME/push?tag=TAG through our own transport (the product never pushes). */
static void push(const char *repo, const char *tag)
{
	struct mafsbx_error e;
	struct mafsbx_http *h = mafsbx_http_open(mafsbx_engine_endpoint(harness_engine()), 5000, 120000, &e);
	harness_check(h ? 0 : -EIO, &e, "http open");
	char target[512];
	snprintf(target, sizeof(target), "/images/%s/push?tag=%s", repo, tag);
	/* no X-Registry-Auth header: the engine then reads the (empty) auth config from the body */
	struct mafsbx_http_req rq = { .method = "POST", .target = target, .content_type = "application/json",
				      .body = "{}", .body_len = 2, .timeout_ms = 120000 };
	struct mafsbx_http_resp resp = { 0 };
	harness_check(mafsbx_http_request(h, &rq, &resp, &e), &e, "push");
	if (resp.status != 200 || (resp.body.data && strstr(resp.body.data, "\"error\"")))
		fail_msg("push %s:%s: HTTP %ld %s", repo, tag, resp.status, resp.body.data ? resp.body.data : "");
	mafsbx_http_resp_free(&resp);
	mafsbx_http_close(h);
}

/*
 * `mafsbx acquire --scope SCOPE ... --image REF` with stderr on a
 * pseudo-terminal (tty) or a pipe, stdout a pipe: the exit code; stdout in
 * *out, what stderr showed in *err.
 */
static int cli_acquire(const char *scope, const char *ref, bool tty, struct mafsbx_buf *out, struct mafsbx_buf *err)
{
	const char *cli = getenv("MAFSBX_CLI");
	if (!cli)
		fail_msg("MAFSBX_CLI is not set (meson sets it to the built mafsbx)");
	int po[2], pe[2];
	assert_int_equal(pipe2(po, O_CLOEXEC), 0);
	if (tty)
		assert_int_equal(openpty(&pe[0], &pe[1], NULL, NULL, NULL), 0);
	else
		assert_int_equal(pipe2(pe, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		setenv(MAFSBX_RUNDIR_ENV, sbxt_g.rundir, 1);
		execl(cli, "mafsbx", "acquire", "--scope", scope, "--thread", SBXT_THREAD, "--agent", "a", "--kind",
		      "k", "--image", ref, (char *)NULL);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	struct pollfd fds[2] = { { .fd = po[0], .events = POLLIN }, { .fd = pe[0], .events = POLLIN } };
	struct mafsbx_buf *bufs[2] = { out, err };
	long long deadline = mafsbx_now_ms() + 120000;
	for (int open_fds = 2; open_fds > 0;) {
		long long left = deadline - mafsbx_now_ms();
		if (left <= 0) {
			kill(pid, SIGKILL);
			fail_msg("mafsbx acquire did not finish within 120 s");
		}
		if (poll(fds, 2, (int)left) < 0 && errno != EINTR)
			fail_msg("poll: %s", strerror(errno));
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char chunk[4096];
			ssize_t got = read(fds[i].fd, chunk, sizeof(chunk));
			if (got <= 0) {   /* a pty's master reads EIO once the last slave is closed */
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
				continue;
			}
			assert_int_equal(mafsbx_buf_append(bufs[i], chunk, (size_t)got), 0);
		}
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	mafsbx_buf_puts(out, "");
	mafsbx_buf_puts(err, "");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The CLI pulls REF (absent here) for a new sandbox: progress on a terminal only. */
static void cli_pull(const char *ref, bool tty)
{
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_buf out = MAFSBX_BUF_INIT, err = MAFSBX_BUF_INIT;
	int rc = cli_acquire(scope, ref, tty, &out, &err);
	if (rc != 0 || strlen(out.data) != MAFSBX_NAME_LEN + 1)
		fail_msg("mafsbx acquire (stderr %s): exit %d, stdout '%s', stderr '%s'", tty ? "a tty" : "a pipe", rc,
			 out.data, err.data);
	out.data[MAFSBX_NAME_LEN] = '\0';
	harness_register_container(out.data);
	if (tty) {
		/* drawn in place (\r, erase to the end of the line), the last state ended by a newline */
		char want[300];
		snprintf(want, sizeof(want), "\r\033[Kmafsbx: pulling %s: ", ref);
		if (!strstr(err.data, want) || !strstr(err.data, "1/1 layers done, ") || err.data[err.len - 1] != '\n')
			fail_msg("no pull progress on the terminal: '%s'", err.data);
	} else if (err.len) {
		fail_msg("stderr is not a terminal, yet it shows '%s'", err.data);
	}
	mafsbx_buf_free(&out);
	mafsbx_buf_free(&err);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
	struct mafsbx_error e;
	harness_check(mafsbx_image_delete(harness_engine(), ref, &e), &e, "image delete");
}

static void test_pull_from_local_registry(void **state)
{
	(void)state;
	if (access(REGISTRY_BIN, X_OK) != 0) {
		if (getenv("MAFSBX_REQUIRE_ENGINE"))
			fail_msg("%s is missing (Debian package docker-registry)", REGISTRY_BIN);
		skip();
	}
	static struct registry reg;
	memset(&reg, 0, sizeof(reg));
	registry_start(&reg);
	char rnd[HARNESS_NAME_MAX], repo[160], ref[200];
	harness_unique_name("sbx-pull", rnd);
	snprintf(repo, sizeof(repo), "127.0.0.1:%d/%s", reg.port, rnd);
	snprintf(ref, sizeof(ref), "%s:latest", repo);
	harness_register_image(ref);

	/* an image only the registry has: import it, push it, drop the local copy */
	struct mafsbx_error e;
	void *tar;
	size_t len;
	harness_check(mafsbx_rootfs_build(NULL, &tar, &len, NULL, &e), &e, "rootfs");
	static const char *const changes[] = { "CMD [\"/bin/sleep\", \"infinity\"]", NULL };
	harness_check(mafsbx_image_import(harness_engine(), tar, len, repo, "latest", changes, &e), &e, "import");
	free(tar);
	push(repo, "latest");
	harness_check(mafsbx_image_delete(harness_engine(), ref, &e), &e, "image delete");
	json_t *img = NULL;
	assert_int_equal(mafsbx_image_inspect(harness_engine(), ref, &img, &e), -ENOENT);

	/* the shell verb, pulling: with its progress on a terminal, silent into a pipe */
	cli_pull(ref, true);
	cli_pull(ref, false);

	char scope[HARNESS_NAME_MAX], extra[300];
	sbxt_scope(scope);
	struct mafsbx_acquire_result r;
	snprintf(extra, sizeof(extra), "\"image\":\"%s\"", ref);
	sbxt_acquire_ok(scope, "a", "k", extra, &r);
	assert_int_equal(r.state, MAFSBX_ACQ_CREATED);
	harness_check(mafsbx_image_inspect(harness_engine(), ref, &img, &e), &e, "pulled image");
	json_decref(img);

	/* an image the registry does not have: the pull fails, naming it */
	char absent[220];
	snprintf(absent, sizeof(absent), "%s:no-such-tag", repo);
	snprintf(extra, sizeof(extra), "\"image\":\"%s\"", absent);
	assert_int_equal(sbxt_acquire_fails(scope, "a", "other", extra, &e), -ENOENT);
	assert_int_equal(e.kind, MAFSBX_EK_NO_IMAGE);
	assert_non_null(strstr(e.message, "could not pull image"));
	assert_non_null(strstr(e.message, absent));
	assert_int_equal(sbxt_dispose_scope(scope), 1);
	registry_stop(&reg);
}

int main(void)
{
	sbxt_open();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interop_upstream_container),
		cmocka_unit_test(test_inventory),
		cmocka_unit_test(test_lookalikes_not_listed),
		cmocka_unit_test(test_declarations),
		cmocka_unit_test(test_pull_from_local_registry),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	sbxt_close();
	return r;
}
