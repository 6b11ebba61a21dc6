/*
 * execs.h: detached execs (execs.c and its execs_*.c, doc/protocol.md
 * "Detached execs"): started, adopted, listed, cancelled, and their
 * NAME/execs/ID/ files read. The module's state (its list, lock and
 * threads) is its own: struct mfs_execs, in dexec.h.
 */
#ifndef MAFSBXFS_EXECS_H
#define MAFSBXFS_EXECS_H

#define FUSE_USE_VERSION 312

#include <fuse.h>
#include <jansson.h>
#include <stdbool.h>
#include <sys/stat.h>

#define MFS_EXEC_STREAM_CAP (8 * 1024 * 1024)   /* output kept per stream of one exec */
#define MFS_EXECS_KEPT 32                    /* kept per sandbox */
#define MFS_EXECS_TOTAL 1024                 /* kept on the mount */
#define MFS_EXECS_RUNNING 64                 /* running at once on the mount */

struct mfs;
struct mfs_node;
struct mfs_exec_handle;
struct mafsbx_error;
struct mafsbx_exec_spec;
struct mafsbx_job_meta;

/* The module's state made (fs->execs): 0, or -ENOMEM. */
int mfs_execs_init(struct mfs *fs);
/* Cancel what runs (this host's engine), wait for the threads, free.
 * false: some still ran after the grace (left to the exit, nothing freed). */
bool mfs_execs_fini(struct mfs *fs);
/* Start `spec` (taken over) detached: the reply names its ID and path. */
int mfs_exec_detach(struct mfs *fs, struct mafsbx_exec_spec *spec, json_t **reply, struct mafsbx_error *err);
bool mfs_exec_exists(struct mfs *fs, const char *sandbox, const char *id);
/* A job an earlier daemon left (jobs.c found it): listed, watched if it runs. Takes dfd. */
void mfs_exec_adopt(struct mfs *fs, int dfd, const struct mafsbx_job_meta *m);
int mfs_execs_list(struct mfs *fs, const char *sandbox, void *buf, fuse_fill_dir_t filler);
/* rmdir NAME/execs/ID: cancel a running command, forget a finished one. */
int mfs_exec_remove(struct mfs *fs, const char *sandbox, const char *id, struct mafsbx_error *err);
int mfs_exec_getattr(struct mfs *fs, const struct mfs_node *n, struct stat *st);
int mfs_exec_open(struct mfs *fs, const struct mfs_node *n, struct fuse_file_info *fi);
/* A read; on `wait` it blocks until the end unless the caller parked it first. */
int mfs_exec_read(struct mfs_exec_handle *x, char *buf, size_t size, off_t off);
/* A `wait` whose command still runs: fn(arg) is called once it ended (0);
 * 1 when a read can be served now; -ENOMEM. */
int mfs_exec_when_done(struct mfs_exec_handle *x, void (*fn)(void *arg), void *arg);
/* Take back a call registered with `arg` (its reader was interrupted): true
 * when it was still waiting (fn will not be called), false when the
 * command's end has taken it (fn is called, or is being called). */
bool mfs_exec_unpark(struct mfs_exec_handle *x, void *arg);
void mfs_exec_release(struct mfs_exec_handle *x);

#endif
