/*
 * passthrough.c: FUSE passthrough for local-plane reads.
 *
 * Where libfuse (3.16 or later, meson option `passthrough`) and the kernel
 * (FUSE_CAP_PASSTHROUGH) have it, an open for reading of a local-plane file
 * hands the kernel the descriptor the plane opened, confined and checked
 * (src/plane/plane_local.c): the kernel then reads the backing file itself, and
 * the bytes never pass through this daemon. Everything the daemon decides
 * (confinement, the open's type check, the per-user open bound) is decided
 * at open, as before; only the reads are the kernel's. Writes, the engine
 * plane and the virtual files keep the plain path.
 *
 * The kernel takes one backing file per FUSE inode at a time: while a node
 * is open with one, another open of it with another backing id fails EBUSY
 * and one without passthrough EIO. So the backing ids are kept per node id:
 * a second open of the same file shares the first's id. An open of a node
 * whose path now holds another file (the guest replaced it while the old
 * one is still open) is answered ESTALE after the path is given up by the
 * node (mfs_nodes_detach): the kernel then looks the path up again
 * (LOOKUP_REVAL), gets a new node for the new file and opens that. The
 * last release of a node's opens closes its id.
 *
 * The backing files live on the container's overlayfs, so the mount
 * declares a backing stack depth of 1: nothing can stack another
 * overlayfs over a mount with passthrough on.
 */
#include "mfs.h"
#include "mount.h"
#include "passthrough.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

#include "log.h"

struct pt_node {
	uint64_t ino;                /* the node id the kernel knows */
	int backing_id;
	dev_t dev;                   /* the backing file */
	ino_t file;
	unsigned opens;
	struct pt_node *next;
};

struct mfs_passthrough {
	pthread_mutex_t mu;          /* guards why and nodes */
	atomic_bool on;              /* read unlocked by every open */
	char why[160];               /* when off: why */
	struct pt_node *nodes;
	atomic_ulong opens;          /* opens whose reads the kernel serves */
	atomic_ulong relookups;      /* opens answered ESTALE: their node held another file */
	atomic_ulong daemon_reads;   /* reads of work/ and rootfs/ files this daemon served */
};

static struct mfs_passthrough *pt_new(bool on, const char *why)
{
	struct mfs_passthrough *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->mu, NULL);
	atomic_init(&p->on, on);
	snprintf(p->why, sizeof(p->why), "%s", why ? why : "");
	return p;
}

void mfs_passthrough_init(struct mfs *fs, struct fuse_conn_info *conn)
{
	bool on = false;
	const char *why;
#if MFS_HAVE_PASSTHROUGH
	if (fs->opt.plane == MAFSBX_PLANE_ENGINE) {
		why = "the engine plane reads through its spools";
	} else if (!(conn->capable & FUSE_CAP_PASSTHROUGH)) {
		why = "the kernel does not offer it (FUSE_CAP_PASSTHROUGH)";
	} else {
		conn->want |= FUSE_CAP_PASSTHROUGH;
		/* the backing files are on the containers' overlayfs */
		conn->max_backing_stack_depth = FUSE_BACKING_STACKED_OVER;
		on = true;
		why = "";
	}
#else
	(void)conn;
	why = "built without it (libfuse before 3.16, or -Dpassthrough=disabled)";
#endif
	fs->passthrough = pt_new(on, why);
	log_info("FUSE passthrough %s%s%s", on ? "on" : "off", on ? "" : ": ", why);
}

void mfs_passthrough_fini(struct mfs *fs)
{
	struct mfs_passthrough *p = fs->passthrough;
	if (!p)
		return;
	/* the ids die with the connection; only the memory is ours to free */
	while (p->nodes) {
		struct pt_node *n = p->nodes;
		p->nodes = n->next;
		free(n);
	}
	pthread_mutex_destroy(&p->mu);
	free(p);
	fs->passthrough = NULL;
}

int mfs_passthrough_open(struct mfs *fs, fuse_req_t req, uint64_t ino, const char *path, struct fuse_file_info *fi)
{
	struct mfs_passthrough *p = fs->passthrough;
	struct mfs_handle *h = mfs_handle_of(fi);
	if (!p || !atomic_load(&p->on) || !h || (fi->flags & O_ACCMODE) != O_RDONLY)
		return 0;
	int fd = mfs_work_read_fd(h);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return 0;
#if MFS_HAVE_PASSTHROUGH
	pthread_mutex_lock(&p->mu);
	struct pt_node *n = p->nodes;
	while (n && n->ino != ino)
		n = n->next;
	if (n && (n->dev != st.st_dev || n->file != st.st_ino)) {
		/* the node's open files read another file: the path gets a new node */
		pthread_mutex_unlock(&p->mu);
		uint64_t at;
		if (mfs_nodes_find(&fs->nodes, path, &at) && at == ino)
			mfs_nodes_detach(&fs->nodes, path);
		atomic_fetch_add(&p->relookups, 1);
		return -ESTALE;
	}
	if (!n) {
		int id = fuse_passthrough_open(req, fd);
		if (id <= 0) {
			/* e.g. EPERM: registering a backing file needs CAP_SYS_ADMIN */
			atomic_store(&p->on, false);
			snprintf(p->why, sizeof(p->why), "the kernel refused a backing file (registering one needs "
				 "CAP_SYS_ADMIN); reads go through the daemon");
			pthread_mutex_unlock(&p->mu);
			log_warn("FUSE passthrough off: %s", p->why);
			return 0;
		}
		n = calloc(1, sizeof(*n));
		if (!n) {
			fuse_passthrough_close(req, id);
			pthread_mutex_unlock(&p->mu);
			return 0;
		}
		*n = (struct pt_node){ .ino = ino, .backing_id = id, .dev = st.st_dev, .file = st.st_ino, .next = p->nodes };
		p->nodes = n;
	}
	n->opens++;
	fi->backing_id = n->backing_id;
	/* direct_io would override passthrough; the kernel now reads the live file itself */
	fi->direct_io = 0;
	fi->keep_cache = 0;
	h->pt_ino = ino;
	pthread_mutex_unlock(&p->mu);
	atomic_fetch_add(&p->opens, 1);
#else
	(void)req;
	(void)ino;
	(void)path;
#endif
	return 0;
}

void mfs_passthrough_release(struct mfs *fs, fuse_req_t req, const struct fuse_file_info *fi)
{
	struct mfs_passthrough *p = fs->passthrough;
	struct mfs_handle *h = mfs_handle_of(fi);
	if (!p || !h || !h->pt_ino)
		return;
#if MFS_HAVE_PASSTHROUGH
	pthread_mutex_lock(&p->mu);
	for (struct pt_node **pp = &p->nodes; *pp; pp = &(*pp)->next) {
		struct pt_node *n = *pp;
		if (n->ino != h->pt_ino)
			continue;
		if (--n->opens == 0) {
			fuse_passthrough_close(req, n->backing_id);
			*pp = n->next;
			free(n);
		}
		break;
	}
	pthread_mutex_unlock(&p->mu);
#else
	(void)req;
#endif
	h->pt_ino = 0;
}

void mfs_passthrough_count_read(struct mfs *fs)
{
	struct mfs_passthrough *p = fs->passthrough;
	if (p)
		atomic_fetch_add(&p->daemon_reads, 1);
}

json_t *mfs_passthrough_json(struct mfs *fs)
{
	struct mfs_passthrough *p = fs->passthrough;
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = 0;
	bool on = false;
	char why[sizeof(p->why)] = "not mounted";
	unsigned long opens = 0, relookups = 0, reads = 0;
	if (p) {
		pthread_mutex_lock(&p->mu);
		on = atomic_load(&p->on);
		snprintf(why, sizeof(why), "%s", p->why);
		pthread_mutex_unlock(&p->mu);
		opens = atomic_load(&p->opens);
		relookups = atomic_load(&p->relookups);
		reads = atomic_load(&p->daemon_reads);
	}
	bad |= json_object_set_new(o, "on", json_boolean(on));
	bad |= json_object_set_new(o, "why", on ? json_null() : json_string(why));
	bad |= json_object_set_new(o, "opens", json_integer((json_int_t)opens));
	bad |= json_object_set_new(o, "relookups", json_integer((json_int_t)relookups));
	bad |= json_object_set_new(o, "daemon_reads", json_integer((json_int_t)reads));
	if (bad) {
		json_decref(o);   /* a part missing would pass for a passthrough that is off */
		return NULL;
	}
	return o;
}
