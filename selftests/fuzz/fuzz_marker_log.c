/*
 * libFuzzer target for the tool's marker-log reader (lib/marker_log.c):
 * the input is the whole log as a traced process could have written it,
 * header included.  The reader must refuse it or read records that lie
 * inside it, never past the end.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>

#include "lib/marker_log.h"

static struct djp_mlog_entry e;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct djp_mlog_reader r;
	int fd = memfd_create("fuzz-mlog", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t len = size < DJP_MLOG_HDR_SIZE ? DJP_MLOG_HDR_SIZE : size;
	int n;

	if (fd < 0)
		return 0;
	if (ftruncate(fd, (off_t)len) == 0 && pwrite(fd, data, size, 0) == (ssize_t)size &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0 && djp_mlog_open(fd, &r) == 0) {
		while ((n = djp_mlog_next(&r, &e)) > 0)
			if (r.pos > r.size)
				__builtin_trap();
		djp_mlog_full(&r);
		djp_mlog_close(&r);
	}
	close(fd);
	return 0;
}
