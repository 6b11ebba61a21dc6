/*
 * faultctl.h: the client side of the fault relay's control socket (relay.c
 * serves it), shared by `relay ctl` and the soak program. One command per
 * connection: the command line goes out, one reply line ("ok ..." or
 * "err ...") comes back.
 */
#ifndef MAFSBX_FAULTCTL_H
#define MAFSBX_FAULTCTL_H

#include <stddef.h>

/*
 * Send `cmd` (no newline) to the relay listening on control socket `path`
 * and put its reply line (newline stripped) into reply[size]. Returns 0 when
 * the reply starts with "ok", 1 when it starts with anything else, -errno
 * when the relay could not be reached or did not answer within 10 s.
 */
int fault_ctl(const char *path, const char *cmd, char *reply, size_t size);

#endif
