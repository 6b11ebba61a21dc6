/*
 * declarations.c: the backend declarations shown in .ctl/declarations
 * (doc/protocol.md "The tree", doc/upstream.md §1.5): isolation is "container" whatever the
 * hardening options; the capabilities a request may ask for; the egress
 * modes actually served ("closed", and "allowlist" when an egress proxy image
 * is configured: egress.c builds and proves its network); both isolation
 * scopes; the transfer ceilings and the mount's read/write caps; and the OS
 * family, "posix" only when the engine reports linux.
 */
#include <stdio.h>
#include <string.h>

#include "egress.h"
#include "log.h"
#include "sbx_internal.h"

static json_t *transfer(uint64_t per_file, uint64_t total, uint32_t files)
{
	return json_pack("{s:I, s:I, s:I}", "max_bytes_per_file", (json_int_t)per_file, "max_total_bytes",
			 (json_int_t)total, "max_files", (json_int_t)files);
}

json_t *mafsbx_sandbox_declarations(struct mafsbx_backend *b, struct mafsbx_error *err)
{
	if (!b) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "declarations: no backend");
		return NULL;
	}
	bool known, linux;
	pthread_mutex_lock(&b->mu);
	known = b->os_known, linux = b->os_linux;
	pthread_mutex_unlock(&b->mu);
	if (!known) {
		struct mafsbx_error e;
		if (mafsbx_sbx_read_os(b, &linux, &e) < 0) {
			log_warn("could not read the engine's OS (%s): no OS family is declared", e.message);
			linux = false;
		}
	}
	json_t *caps = json_array();
	/* every capability bit is served, reclaim included (reclaim.h, doc/upstream.md §1.5 "include RECLAIM") */
	for (unsigned bit = 1; caps && (bit & MAFSBX_CAP_ALL); bit <<= 1)
		if (json_array_append_new(caps, json_string(mafsbx_cap_name(bit))) < 0) {
			json_decref(caps);   /* a list missing a capability would declare less than is served */
			caps = NULL;
		}
	json_t *limits = json_pack("{s:o, s:o, s:I, s:I}", "files_in",
				   transfer(MAFSBX_CEIL_BYTES_PER_FILE, MAFSBX_CEIL_TOTAL_BYTES, MAFSBX_CEIL_FILES),
				   "files_out",
				   transfer(MAFSBX_CEIL_BYTES_PER_FILE, MAFSBX_CEIL_TOTAL_BYTES, MAFSBX_CEIL_FILES),
				   "max_read_bytes", (json_int_t)b->cfg.max_read_bytes, "max_write_bytes",
				   (json_int_t)b->cfg.max_write_bytes);
	json_t *modes = mafsbx_egress_proxy_image(b) ? json_pack("[s,s]", "closed", "allowlist")
						     : json_pack("[s]", "closed");
	json_t *d = json_pack("{s:s, s:o, s:o, s:[s,s], s:o, s:o}", "isolation", "container", "capabilities", caps,
			      "egress_modes", modes, "isolation_scopes", "conversation", "call", "limits", limits,
			      "os_families", linux ? json_pack("[s]", "posix") : json_array());
	if (!d)
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	return d;
}
