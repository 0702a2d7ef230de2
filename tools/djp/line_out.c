/*
 * Output in whole lines.
 *
 * `djp trace -c CMD` and `djp -c CMD SCRIPT` usually share their standard
 * output with the command they launched: both write to one terminal, pipe
 * or file.  A stdio stream fully buffered, as the event printer must be to
 * keep up with millions of events, writes its buffer when it fills, which
 * is almost never at the end of a line; the command's own write lands
 * between the two halves, and an event line is torn in two ("...func:ft
 * sum 3749500\n_work i=0x55").  A reader counting or parsing the events
 * (a test, grep, a script reading djp's output) then miscounts.
 *
 * So the stream here is a stdio stream (fopencookie) whose cookie keeps
 * what stdio hands it and passes the file descriptor only whole lines:
 * the line begun but not ended waits for its end, or for line_out_flush()
 * or the close.  Each write() to a pipe, socket or terminal is at most
 * PIPE_BUF bytes of whole lines, the size POSIX makes atomic for pipes, so
 * another writer's bytes fall between lines, never inside one (a single
 * line longer than that goes alone).  To a regular file, whose offset the
 * kernel updates atomically for each write, everything whole goes in one
 * write.  The cost is one memcpy of each buffer, beside the formatting.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "line_out.h"

#define LINE_OUT_BUF (1 << 16) /* stdio's buffer, and the cookie's to start with */

struct line_out {
	int fd;
	int own_fd;
	size_t piece;		/* most bytes one write() may take */
	char *buf;		/* kept, not yet written: ends mid-line */
	size_t len, cap;
	int failed;		/* errno of the first write that failed */
	FILE *f;
	struct line_out *next;	/* the open ones, for line_out_flush */
};

static struct line_out *open_streams;

/* All of p[0..n) to the descriptor, despite signals and short writes. */
static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The whole lines of buf[0..upto) in pieces of at most o->piece bytes,
 * each ending at a newline unless one line alone is longer. */
static int emit_lines(struct line_out *o, size_t upto)
{
	size_t at = 0;
	while (at < upto) {
		size_t end = upto;
		if (end - at > o->piece) {
			const char *nl = memrchr(o->buf + at, '\n', o->piece);
			end = nl ? (size_t)(nl - o->buf) + 1 : upto;
			if (!nl) { /* one long line: alone, to its end */
				const char *e = memchr(o->buf + at + o->piece, '\n', upto - at - o->piece);
				end = e ? (size_t)(e - o->buf) + 1 : upto;
			}
		}
		if (write_all(o->fd, o->buf + at, end - at))
			return -1;
		at = end;
	}
	return 0;
}

/* Write what is kept up to its last newline (all of it when `all`), and
 * keep the rest. */
static int drain(struct line_out *o, int all)
{
	size_t upto = o->len;
	if (!all) {
		const char *nl = memrchr(o->buf, '\n', o->len);
		upto = nl ? (size_t)(nl - o->buf) + 1 : 0;
	}
	if (!upto)
		return 0;
	if (emit_lines(o, upto)) {
		o->len = 0; /* what failed is lost, as stdio loses it */
		return -1;
	}
	memmove(o->buf, o->buf + upto, o->len - upto);
	o->len -= upto;
	return 0;
}

/* The write that failed, kept for every later one and line_out_flush. */
static ssize_t failed(struct line_out *o)
{
	if (!o->failed)
		o->failed = errno ? errno : EIO;
	errno = o->failed;
	return -1;
}

static ssize_t lo_write(void *cookie, const char *p, size_t n)
{
	struct line_out *o = cookie;
	if (o->failed) /* stdio's error flag, at the stream's next write */
		return failed(o);
	if (o->len + n > o->cap) {
		size_t cap = o->cap;
		while (cap < o->len + n)
			cap *= 2;
		char *b = realloc(o->buf, cap);
		if (!b) { /* no room to keep a partial line: write it as it is */
			if (drain(o, 1) || write_all(o->fd, p, n))
				return failed(o);
			return (ssize_t)n;
		}
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	/* a line without end longer than the buffer goes as it is */
	if (drain(o, o->len >= LINE_OUT_BUF && !memchr(o->buf, '\n', o->len)))
		return failed(o);
	return (ssize_t)n;
}

static int lo_close(void *cookie)
{
	struct line_out *o = cookie;
	int rc = drain(o, 1);
	int err = errno;
	for (struct line_out **pp = &open_streams; *pp; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	if (o->own_fd && close(o->fd) && !rc) {
		rc = -1;
		err = errno;
	}
	free(o->buf);
	free(o);
	errno = err;
	return rc;
}

FILE *line_out_open(const char *path)
{
	int fd = path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : STDOUT_FILENO;
	struct line_out *o = fd < 0 ? NULL : calloc(1, sizeof(*o));
	struct stat st;
	if (!o || !(o->buf = malloc(LINE_OUT_BUF))) {
		int err = fd < 0 ? errno : ENOMEM;
		if (path && fd >= 0)
			close(fd);
		free(o);
		errno = err;
		return NULL;
	}
	o->fd = fd;
	o->own_fd = path != NULL;
	o->cap = LINE_OUT_BUF;
	o->piece = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? SIZE_MAX : PIPE_BUF;
	o->f = fopencookie(o, "w", (cookie_io_functions_t){ .write = lo_write, .close = lo_close });
	if (!o->f) {
		if (path)
			close(fd);
		free(o->buf);
		free(o);
		errno = ENOMEM;
		return NULL;
	}
	setvbuf(o->f, NULL, _IOFBF, LINE_OUT_BUF);
	o->next = open_streams;
	open_streams = o;
	return o->f;
}

static struct line_out *find(FILE *f)
{
	struct line_out *o = open_streams;
	while (o && o->f != f)
		o = o->next;
	return o;
}

int line_out_fd(FILE *f)
{
	struct line_out *o = find(f);
	return o ? o->fd : fileno(f);
}

int line_out_flush(FILE *f)
{
	struct line_out *o;
	if (fflush(f))
		return EOF;
	/* a write that failed before, with what it said (stdio keeps only a
	 * flag), or the line begun */
	if ((o = find(f)) && (o->failed || drain(o, 1))) {
		failed(o);
		return EOF;
	}
	return 0;
}
