/*
 * The marker log: how a tool learns the markers of objects a traced process
 * loads after the tool listed its markers (lib/marker_log.c has the essay).
 *
 * A memfd, sealed against shrinking and growing, that the agent writes and
 * the tool maps read-only:
 *
 *   header   u32 magic, u32 header size, u64 size (the memfd's),
 *            u64 used (bytes of records, release-stored after each one),
 *            u32 full (set when a record did not fit)
 *   records  at `header size`, one after the other: u32 len, then len bytes
 *            laid out as one entry of a MARKERS frame (lib/proto.h):
 *            u32 id, u64 addr, u8 nargs, str name, str format, str object
 */
#ifndef DJP_LIB_MARKER_LOG_H
#define DJP_LIB_MARKER_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/proto.h"

#define DJP_MLOG_MAGIC 0x474c4d44u /* "DMLG" */
#define DJP_MLOG_HDR_SIZE 64u
#define DJP_MLOG_SIZE (8u << 20)

struct djp_mlog_hdr {
	uint32_t magic;
	uint32_t hdr_size;
	uint64_t size;
	uint64_t used; /* atomic: written by the producer only */
	uint32_t full; /* atomic */
};

/* ---- the producer (the agent) -------------------------------------------- */

struct djp_mlog {
	struct djp_mlog_hdr *hdr;
	int fd;
};

/* A new sealed log of DJP_MLOG_SIZE bytes (pages are only used as written);
 * 0 or -errno. */
int djp_mlog_create(struct djp_mlog *log);
/* Append one entry; one writer at a time.  A log that is full stays full
 * (the tool asks the agent instead); returns false then. */
bool djp_mlog_append(struct djp_mlog *log, uint32_t id, uint64_t addr, uint8_t nargs, const char *name,
		     const char *format, const char *object);

/* ---- the consumer (the tool) --------------------------------------------- */

struct djp_mlog_reader {
	const uint8_t *base;
	uint64_t size; /* what is mapped */
	uint64_t pos;  /* offset of the next record */
	bool bad;      /* the log broke its own layout: nothing more is read */
};

struct djp_mlog_entry {
	uint32_t id;
	uint64_t addr;
	uint8_t nargs;
	char name[DJP_PROTO_STR_MAX + 1], format[DJP_PROTO_STR_MAX + 1], object[DJP_PROTO_STR_MAX + 1];
};

/* Map the log behind fd read-only; 0 or -errno (-EPERM: not sealed,
 * -EINVAL: not a marker log). */
int djp_mlog_open(int fd, struct djp_mlog_reader *r);
void djp_mlog_close(struct djp_mlog_reader *r);
/* The next record written since the last call: 1 and *e filled, 0 when
 * there is none (yet), -EPROTO when the log is malformed. */
int djp_mlog_next(struct djp_mlog_reader *r, struct djp_mlog_entry *e);
/* True when the producer ran out of room: later markers are not in it. */
bool djp_mlog_full(const struct djp_mlog_reader *r);

#endif
