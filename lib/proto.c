/*
 * The agent protocol's wire format: framing, field encoding, fd passing.
 *
 * The tool and the agent talk over a Unix stream socket.  A stream, not a
 * datagram or seqpacket socket, because a marker table can be longer than
 * one datagram may be; so every message carries its own length in an 8-byte
 * header (length, type, reserved flags) and the receiver reads exactly that
 * much.  The version is not in every frame: the tool's HELLO names it once
 * and the agent refuses a version it does not speak, with an ERROR that says
 * which one it does.
 *
 * Fields are written little-endian at fixed widths, strings with a 16-bit
 * length and no terminator.  Nothing received is trusted: the header's
 * length is bounded before anything is read, every field read is checked
 * against what is left (a reader that runs off the end turns "bad" and
 * stays bad, so a handler can read everything and check once), strings may
 * not hold a NUL or exceed their bound, and a payload must be consumed
 * exactly.  Whoever sees a malformed frame ends the session.
 *
 * The ring region travels as a file descriptor in SCM_RIGHTS, attached to
 * the first byte of its RING_FD frame.  The receiver reads the 8-byte header
 * with recvmsg, which is where that control message arrives; any descriptor
 * that comes on a frame that should not carry one is closed at once.  A
 * descriptor the kernel could not give us (the receiver at RLIMIT_NOFILE:
 * the control message comes truncated, MSG_CTRUNC) is EMFILE, said as
 * such, once the frame is read whole.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"

static const char *const msg_names[] = {
	[DJP_MSG_HELLO] = "HELLO",	 [DJP_MSG_LIST] = "LIST",
	[DJP_MSG_RING] = "RING",	 [DJP_MSG_CONNECT] = "CONNECT",
	[DJP_MSG_DISCONNECT] = "DISCONNECT", [DJP_MSG_STATS] = "STATS",
	[DJP_MSG_START] = "START",	 [DJP_MSG_BYE] = "BYE",
	[DJP_MSG_OK] = "OK",		 [DJP_MSG_ERROR] = "ERROR",
	[DJP_MSG_MARKERS] = "MARKERS",	 [DJP_MSG_CONNECTED] = "CONNECTED",
	[DJP_MSG_STATS_REPLY] = "STATS_REPLY", [DJP_MSG_RING_FD] = "RING_FD",
	[DJP_MSG_HELLO_REPLY] = "HELLO_REPLY", [DJP_MSG_MARKER_LOG] = "MARKER_LOG",
	[DJP_MSG_MARKER_LOG_FD] = "MARKER_LOG_FD", [DJP_MSG_FOLLOW] = "FOLLOW",
	[DJP_MSG_TABLES] = "TABLES",	 [DJP_MSG_TABLES_FD] = "TABLES_FD",
	[DJP_MSG_VARS] = "VARS",
	[DJP_MSG_LOADS] = "LOADS",
	[DJP_MSG_FREEZE] = "FREEZE",	 [DJP_MSG_THAW] = "THAW",
};

bool djp_msg_type_valid(unsigned type)
{
	return type < sizeof(msg_names) / sizeof(msg_names[0]) && msg_names[type];
}

const char *djp_msg_name(unsigned type)
{
	return djp_msg_type_valid(type) ? msg_names[type] : "?";
}

/* ---- payload writer ------------------------------------------------------ */

void djp_pbuf_init(struct djp_pbuf *b)
{
	b->len = 0;
	b->overflow = false;
}

size_t djp_pbuf_room(const struct djp_pbuf *b)
{
	return b->overflow ? 0 : DJP_PROTO_MAX_PAYLOAD - b->len;
}

static void put_bytes(struct djp_pbuf *b, const void *p, size_t n)
{
	if (b->overflow || n > DJP_PROTO_MAX_PAYLOAD - b->len) {
		b->overflow = true;
		return;
	}
	memcpy(b->data + DJP_PROTO_HDR_SIZE + b->len, p, n);
	b->len += n;
}

static void put_le(struct djp_pbuf *b, uint64_t v, unsigned n)
{
	uint8_t t[8];
	for (unsigned i = 0; i < n; i++)
		t[i] = (uint8_t)(v >> (8 * i));
	put_bytes(b, t, n);
}

void djp_put_u8(struct djp_pbuf *b, uint8_t v)
{
	put_le(b, v, 1);
}

void djp_put_u16(struct djp_pbuf *b, uint16_t v)
{
	put_le(b, v, 2);
}

void djp_put_u32(struct djp_pbuf *b, uint32_t v)
{
	put_le(b, v, 4);
}

void djp_put_u64(struct djp_pbuf *b, uint64_t v)
{
	put_le(b, v, 8);
}

void djp_put_str(struct djp_pbuf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n > DJP_PROTO_STR_MAX)
		n = DJP_PROTO_STR_MAX;
	put_le(b, n, 2);
	put_bytes(b, s, n);
}

/* ---- payload reader ------------------------------------------------------ */

void djp_preader_init(struct djp_preader *r, const void *payload, size_t len)
{
	r->p = payload;
	r->left = len;
	r->bad = false;
}

static uint64_t get_le(struct djp_preader *r, unsigned n)
{
	uint64_t v = 0;
	if (r->bad || r->left < n) {
		r->bad = true;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	r->left -= n;
	return v;
}

uint8_t djp_get_u8(struct djp_preader *r)
{
	return (uint8_t)get_le(r, 1);
}

uint16_t djp_get_u16(struct djp_preader *r)
{
	return (uint16_t)get_le(r, 2);
}

uint32_t djp_get_u32(struct djp_preader *r)
{
	return (uint32_t)get_le(r, 4);
}

uint64_t djp_get_u64(struct djp_preader *r)
{
	return get_le(r, 8);
}

char *djp_get_str(struct djp_preader *r, char *out, size_t outsz)
{
	size_t n = get_le(r, 2);
	if (outsz)
		out[0] = 0;
	if (r->bad || n > DJP_PROTO_STR_MAX || n > r->left || n >= outsz || memchr(r->p, 0, n)) {
		r->bad = true;
		return out;
	}
	memcpy(out, r->p, n);
	out[n] = 0;
	r->p += n;
	r->left -= n;
	return out;
}

bool djp_preader_done(const struct djp_preader *r)
{
	return !r->bad && r->left == 0;
}

/* ---- frames -------------------------------------------------------------- */

long djp_proto_check_hdr(const uint8_t hdr[DJP_PROTO_HDR_SIZE], unsigned *type)
{
	uint32_t len = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
	unsigned t = hdr[4] | hdr[5] << 8, flags = hdr[6] | hdr[7] << 8;
	if (len > DJP_PROTO_MAX_PAYLOAD || flags || !djp_msg_type_valid(t))
		return -EPROTO;
	*type = t;
	return len;
}

int djp_proto_send(int fd, unsigned type, struct djp_pbuf *b, int pass_fd)
{
	uint8_t hdr[DJP_PROTO_HDR_SIZE];
	const uint8_t *p;
	size_t len = b ? b->len : 0, total, done = 0;

	if (b && b->overflow)
		return -EMSGSIZE;
	hdr[0] = (uint8_t)len;
	hdr[1] = (uint8_t)(len >> 8);
	hdr[2] = (uint8_t)(len >> 16);
	hdr[3] = (uint8_t)(len >> 24);
	hdr[4] = (uint8_t)type;
	hdr[5] = (uint8_t)(type >> 8);
	hdr[6] = hdr[7] = 0;
	if (b) {
		memcpy(b->data, hdr, sizeof(hdr));
		p = b->data;
	} else {
		p = hdr;
	}
	total = DJP_PROTO_HDR_SIZE + len;
	while (done < total) {
		struct iovec iov = { (void *)(p + done), total - done };
		union {
			struct cmsghdr c;
			char buf[CMSG_SPACE(sizeof(int))];
		} u;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;
		if (pass_fd >= 0 && done == 0) {
			memset(&u, 0, sizeof(u));
			mh.msg_control = u.buf;
			mh.msg_controllen = sizeof(u.buf);
			u.c.cmsg_level = SOL_SOCKET;
			u.c.cmsg_type = SCM_RIGHTS;
			u.c.cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(&u.c), &pass_fd, sizeof(int));
		}
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

int djp_proto_send_error(int fd, int err, const char *msg)
{
	struct djp_pbuf b;
	djp_pbuf_init(&b);
	djp_put_u32(&b, (uint32_t)err);
	djp_put_str(&b, msg);
	return djp_proto_send(fd, DJP_MSG_ERROR, &b, -1);
}

static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	int n;
	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == 0 ? -ETIMEDOUT : 0;
}

/* Read exactly n bytes; the first read may bring a descriptor (or a
 * truncated control message: *lost_fd). */
static int read_full(int fd, uint8_t *p, size_t n, int timeout_ms, int *fd_got, bool *lost_fd)
{
	size_t done = 0;
	while (done < n) {
		struct iovec iov = { p + done, n - done };
		union {
			struct cmsghdr c;
			char buf[CMSG_SPACE(sizeof(int) * 4)];
		} u;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf) };
		ssize_t got;
		int err = wait_readable(fd, timeout_ms);
		if (err)
			return err;
		got = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (got < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (mh.msg_flags & MSG_CTRUNC)
			*lost_fd = true;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
				int f;
				memcpy(&f, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
				if (*fd_got < 0)
					*fd_got = f;
				else
					close(f);
			}
		}
		if (got == 0)
			return -ECONNRESET;
		done += (size_t)got;
	}
	return 0;
}

long djp_proto_recv(int fd, unsigned *type, void *buf, int timeout_ms, int *fd_out)
{
	uint8_t hdr[DJP_PROTO_HDR_SIZE];
	int got_fd = -1, err;
	bool lost_fd = false;
	long len;

	if (fd_out)
		*fd_out = -1;
	err = read_full(fd, hdr, sizeof(hdr), timeout_ms, &got_fd, &lost_fd);
	if (!err) {
		len = djp_proto_check_hdr(hdr, type);
		if (len < 0)
			err = (int)len;
		else if (len > 0)
			err = read_full(fd, buf, (size_t)len, timeout_ms, &got_fd, &lost_fd);
	}
	if (!err && lost_fd && got_fd < 0)
		err = -EMFILE;
	if (err) {
		if (got_fd >= 0)
			close(got_fd);
		return err;
	}
	if (got_fd >= 0) {
		if (fd_out && (*type == DJP_MSG_RING_FD || *type == DJP_MSG_MARKER_LOG_FD || *type == DJP_MSG_TABLES_FD))
			*fd_out = got_fd;
		else
			close(got_fd);
	}
	return len;
}
