/*
 * janitor.h: the mount's background housekeeping (janitor.c): freezes left
 * behind lifted, the files of containers gone collected. Its thread and
 * lock are its own (struct mfs_janitor, private to janitor.c).
 */
#ifndef MAFSBXFS_JANITOR_H
#define MAFSBXFS_JANITOR_H

struct mfs;

/* Start the background recovery (after mounting: it lifts freezes a dead
 * process left, and any unpause this mount failed). 0 or -errno. */
int mfs_janitor_start(struct mfs *fs);
/* Its thread ended and its state freed; nothing when it did not start. */
void mfs_janitor_stop(struct mfs *fs);

#endif
