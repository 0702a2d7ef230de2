/*
 * The marker log.
 *
 * An event names its marker by id; the tool turns ids into names with the
 * marker table it asks the agent for (LIST).  A library loaded later gets
 * new ids, and its events may be read after the process that recorded them
 * is gone: a program that loads a plugin, fires its markers and exits
 * leaves the tool with ids nobody can answer for.  So the agent writes the
 * description of every marker of a newly loaded object into this log
 * *before* any of its sites is armed (the engine calls the agent while it
 * reads the object, under its lock, which also makes the agent the only
 * writer), and the tool reads the log as it meets ids it does not know.
 * The tool keeps the memfd, so the log outlives the process.
 *
 * Publication is one release store of `used` after the record's bytes; the
 * tool's acquire load of it orders the bytes before it.  Records are never
 * changed once published.
 *
 * The tool trusts nothing in it: the process it traces could write any
 * bytes there.  The memfd must be sealed against shrinking (a shrunk file
 * would fault the reader), `used` is bounded by the mapping, each length by
 * what is left, and each record must parse exactly with the protocol's
 * reader.  A malformed log is reported once and read no further; the tool
 * falls back on LIST.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/marker_log.h"

int djp_mlog_create(struct djp_mlog *log)
{
	void *base;
	int fd = memfd_create("djp-markers", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, DJP_MLOG_SIZE) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
	    (base = mmap(NULL, DJP_MLOG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		int err = -errno;
		close(fd);
		return err;
	}
	log->hdr = base;
	log->hdr->magic = DJP_MLOG_MAGIC;
	log->hdr->hdr_size = DJP_MLOG_HDR_SIZE;
	log->hdr->size = DJP_MLOG_SIZE;
	log->fd = fd;
	return 0;
}

static uint8_t *put(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

static size_t str_len(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n < DJP_PROTO_STR_MAX ? n : DJP_PROTO_STR_MAX;
}

static uint8_t *put_str(uint8_t *p, const char *s)
{
	size_t n = str_len(s);
	p = put(p, n, 2);
	if (n)
		memcpy(p, s, n);
	return p + n;
}

bool djp_mlog_append(struct djp_mlog *log, uint32_t id, uint64_t addr, uint8_t nargs, const char *name,
		     const char *format, const char *object)
{
	struct djp_mlog_hdr *h = log->hdr;
	uint64_t used = __atomic_load_n(&h->used, __ATOMIC_RELAXED);
	size_t len = 4 + 8 + 1 + 6 + str_len(name) + str_len(format) + str_len(object);
	uint8_t *p;

	if (__atomic_load_n(&h->full, __ATOMIC_RELAXED) || DJP_MLOG_HDR_SIZE + used + 4 + len > h->size) {
		__atomic_store_n(&h->full, 1, __ATOMIC_RELEASE);
		return false;
	}
	p = (uint8_t *)h + DJP_MLOG_HDR_SIZE + used;
	p = put(p, len, 4);
	p = put(p, id, 4);
	p = put(p, addr, 8);
	p = put(p, nargs, 1);
	p = put_str(p, name);
	p = put_str(p, format);
	put_str(p, object);
	__atomic_store_n(&h->used, used + 4 + len, __ATOMIC_RELEASE);
	return true;
}

int djp_mlog_open(int fd, struct djp_mlog_reader *r)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);
	const struct djp_mlog_hdr *h;
	void *base;

	memset(r, 0, sizeof(*r));
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPERM;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < (off_t)DJP_MLOG_HDR_SIZE || st.st_size > (off_t)64 << 20)
		return -EINVAL;
	base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	h = base;
	if (h->magic != DJP_MLOG_MAGIC || h->hdr_size != DJP_MLOG_HDR_SIZE) {
		munmap(base, (size_t)st.st_size);
		return -EINVAL;
	}
	r->base = base;
	r->size = (uint64_t)st.st_size;
	r->pos = DJP_MLOG_HDR_SIZE;
	return 0;
}

void djp_mlog_close(struct djp_mlog_reader *r)
{
	if (r->base)
		munmap((void *)r->base, r->size);
	memset(r, 0, sizeof(*r));
}

int djp_mlog_next(struct djp_mlog_reader *r, struct djp_mlog_entry *e)
{
	const struct djp_mlog_hdr *h = (const void *)r->base;
	uint64_t used, end, len;
	struct djp_preader pr;

	if (!r->base)
		return 0;
	if (r->bad)
		return -EPROTO;
	used = __atomic_load_n(&h->used, __ATOMIC_ACQUIRE);
	if (used > r->size - DJP_MLOG_HDR_SIZE)
		goto bad;
	end = DJP_MLOG_HDR_SIZE + used;
	if (r->pos >= end)
		return 0;
	if (end - r->pos < 4)
		goto bad;
	djp_preader_init(&pr, r->base + r->pos, 4);
	len = djp_get_u32(&pr);
	if (len > end - r->pos - 4)
		goto bad;
	djp_preader_init(&pr, r->base + r->pos + 4, (size_t)len);
	e->id = djp_get_u32(&pr);
	e->addr = djp_get_u64(&pr);
	e->nargs = djp_get_u8(&pr);
	djp_get_str(&pr, e->name, sizeof(e->name));
	djp_get_str(&pr, e->format, sizeof(e->format));
	djp_get_str(&pr, e->object, sizeof(e->object));
	if (!djp_preader_done(&pr))
		goto bad;
	r->pos += 4 + len;
	return 1;
bad:
	r->bad = true;
	return -EPROTO;
}

bool djp_mlog_full(const struct djp_mlog_reader *r)
{
	const struct djp_mlog_hdr *h = (const void *)r->base;
	return h && __atomic_load_n(&h->full, __ATOMIC_ACQUIRE);
}
