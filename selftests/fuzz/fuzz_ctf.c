/*
 * libFuzzer target for the CTF reader (tools/djp/source/ctf.c), which
 * `djp trace --from` runs on files anyone may have written.  The first
 * byte says what the rest is: 0, a stream file, read under a metadata of
 * three classes (integers of every size, a string, the wide twin, an
 * unnamed marker); 1, the metadata after djp's first line, beside a stream
 * of one event.  The reader must refuse the input with its one line, or
 * hand out events whose strings end inside the file; never read past it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/djp/output/ctf.h"
#include "tools/djp/output/ctf_layout.h"
#include "tools/djp/source/source.h"

static char dir[] = "/tmp/djp-fuzz-ctf-XXXXXX";
static int dirfd = -1;
static char *meta; /* the fixed metadata, for streams */
static size_t meta_len;
/* one packet of one event of class 0: x=-1 y=2 z=-3 w=4 s="hi" */
static uint8_t one[CTF_PACKET_BYTES + CTF_EVENT_FIXED_BYTES + 1 + 2 + 4 + 8 + 3];

static void put(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static void write_file(const char *name, const void *data, size_t n)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || (n && write(fd, data, n) != (ssize_t)n))
		abort();
	close(fd);
}

static void setup(void)
{
	struct ctf_trace t;
	struct djp_fmt f;
	char err[256];
	uint8_t *p = one + CTF_PACKET_BYTES;
	int fd;

	if (!mkdtemp(dir) || (dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		abort();
	if (ctf_trace_init(&t, err, sizeof(err)) || djp_format_parse("x=%hhd y=%hu z=%d w=%lu s=%s", &f, NULL) != 5 ||
	    ctf_trace_class(&t, "a", &f, 5, false) != 0 || ctf_trace_class(&t, "a", &f, 5, true) != 1 ||
	    ctf_trace_class(&t, "marker#3", NULL, 2, false) != 2 || ctf_metadata_write(&t, dirfd))
		abort();
	ctf_trace_free(&t);
	if ((fd = openat(dirfd, "metadata", O_RDONLY)) < 0 || !(meta = malloc(1 << 16)) ||
	    (meta_len = (size_t)read(fd, meta, 1 << 16)) >= 1 << 16)
		abort();
	close(fd);
	put(one, CTF_MAGIC, 4);
	put(one + 40, sizeof(one) * 8, 8);
	put(one + 48, sizeof(one) * 8, 8);
	put(p + 4, 1000, 8);
	p += CTF_EVENT_FIXED_BYTES;
	put(p, (uint64_t)-1, 1);
	put(p + 1, 2, 2);
	put(p + 3, (uint64_t)-3, 4);
	put(p + 7, 4, 8);
	memcpy(p + 15, "hi", 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct djp_source *src;
	struct djp_ev ev;
	char err[512];

	if (dirfd < 0)
		setup();
	if (!size)
		return 0;
	if (data[0] == 0) {
		write_file("metadata", meta, meta_len);
		write_file("stream-1-1", data + 1, size - 1);
	} else {
		char *m = malloc(strlen(CTF_DJP_SIGNATURE) + size + 1);
		if (!m)
			return 0;
		strcpy(m, CTF_DJP_SIGNATURE "\n");
		memcpy(m + strlen(m), data + 1, size - 1);
		write_file("metadata", m, strlen(CTF_DJP_SIGNATURE) + size);
		free(m);
		write_file("stream-1-1", one, sizeof(one));
	}
	if (djp_ctf_source_open(dir, &src, err, sizeof(err)) == 0) {
		while (src->ops->next(src, &ev, UINT64_MAX) == DJP_SRC_EVENT)
			for (unsigned i = 0; i < ev.nargs; i++)
				if (ev.strs[i] && strlen(ev.strs[i]) > size)
					__builtin_trap();
		src->ops->close(src);
	}
	return 0;
}
