/*
 * The marker log (lib/marker_log.c): what the agent appends the tool reads
 * back, and a log the traced process scribbled on is refused, never read
 * past its end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "lib/marker_log.h"

static struct djp_mlog_entry e;

TEST(marker_log_round_trip)
{
	struct djp_mlog log;
	struct djp_mlog_reader r;

	CHECK_EQ(djp_mlog_create(&log), 0);
	CHECK_EQ(djp_mlog_open(log.fd, &r), 0);
	CHECK_EQ(djp_mlog_next(&r, &e), 0);
	CHECK(djp_mlog_append(&log, 7, 0x1234, 2, "tp_plugin", "n=%d m=%s", "/lib/x.so"));
	CHECK(djp_mlog_append(&log, 8, 0x5678, 0, "empty", NULL, ""));
	CHECK_EQ(djp_mlog_next(&r, &e), 1);
	CHECK_EQ(e.id, 7);
	CHECK_EQ(e.addr, 0x1234);
	CHECK_EQ(e.nargs, 2);
	CHECK_STR(e.name, "tp_plugin");
	CHECK_STR(e.format, "n=%d m=%s");
	CHECK_STR(e.object, "/lib/x.so");
	CHECK_EQ(djp_mlog_next(&r, &e), 1);
	CHECK_EQ(e.id, 8);
	CHECK_STR(e.format, "");
	CHECK_EQ(djp_mlog_next(&r, &e), 0);
	CHECK(!djp_mlog_full(&r));
	djp_mlog_close(&r);
	close(log.fd);
}

TEST(marker_log_full_says_so)
{
	struct djp_mlog log;
	struct djp_mlog_reader r;
	static char big[DJP_PROTO_STR_MAX + 1];
	unsigned n = 0;

	memset(big, 'x', sizeof(big) - 1);
	CHECK_EQ(djp_mlog_create(&log), 0);
	while (djp_mlog_append(&log, n, 0, 0, big, big, big))
		n++;
	CHECK(n > 100);
	CHECK(!djp_mlog_append(&log, n, 0, 0, "small", "", ""));
	CHECK_EQ(djp_mlog_open(log.fd, &r), 0);
	CHECK(djp_mlog_full(&r));
	for (unsigned i = 0; i < n; i++) {
		CHECK_EQ(djp_mlog_next(&r, &e), 1);
		CHECK_EQ(e.id, i);
		CHECK_EQ(strlen(e.name), DJP_PROTO_STR_MAX);
	}
	CHECK_EQ(djp_mlog_next(&r, &e), 0);
	djp_mlog_close(&r);
	close(log.fd);
}

/* The writer is the traced process: any bytes at all. */
TEST(marker_log_hostile_writer)
{
	struct djp_mlog log;
	struct djp_mlog_reader r;
	int fd;
	unsigned seed = 12345;

	/* not sealed: a file it could shrink under the reader */
	fd = memfd_create("x", MFD_CLOEXEC);
	CHECK(fd >= 0 && ftruncate(fd, DJP_MLOG_SIZE) == 0);
	CHECK_EQ(djp_mlog_open(fd, &r), -EPERM);
	close(fd);

	CHECK_EQ(djp_mlog_create(&log), 0);
	/* used past the end */
	CHECK(djp_mlog_append(&log, 1, 0, 0, "a", "", ""));
	CHECK_EQ(djp_mlog_open(log.fd, &r), 0);
	log.hdr->used = UINT64_MAX - 3;
	CHECK_EQ(djp_mlog_next(&r, &e), -EPROTO);
	CHECK_EQ(djp_mlog_next(&r, &e), -EPROTO); /* and stays refused */
	djp_mlog_close(&r);
	/* a record length past `used` */
	log.hdr->used = 30;
	memset((char *)log.hdr + DJP_MLOG_HDR_SIZE, 0xff, 4);
	CHECK_EQ(djp_mlog_open(log.fd, &r), 0);
	CHECK_EQ(djp_mlog_next(&r, &e), -EPROTO);
	djp_mlog_close(&r);
	/* random bytes, random `used`: refused or read, never past the end */
	for (int round = 0; round < 2000; round++) {
		uint8_t *p = (uint8_t *)log.hdr + DJP_MLOG_HDR_SIZE;
		int rc;
		for (int i = 0; i < 256; i++) {
			seed = seed * 1103515245u + 12345u;
			p[i] = (uint8_t)(seed >> 16);
		}
		if (round & 1) { /* plausible lengths */
			p[0] = (uint8_t)(seed % 40), p[1] = p[2] = p[3] = 0;
		}
		log.hdr->used = (seed >> 4) % 300;
		if (round % 97 == 0)
			log.hdr->used = DJP_MLOG_SIZE - DJP_MLOG_HDR_SIZE;
		CHECK_EQ(djp_mlog_open(log.fd, &r), 0);
		while ((rc = djp_mlog_next(&r, &e)) > 0)
			CHECK(r.pos <= DJP_MLOG_HDR_SIZE + log.hdr->used);
		CHECK(rc == 0 || rc == -EPROTO);
		djp_mlog_close(&r);
	}
	log.hdr->magic = 0;
	CHECK_EQ(djp_mlog_open(log.fd, &r), -EINVAL);
	close(log.fd);
}
