/* The agent protocol's encoding (lib/proto.c): round trips, and input that
 * lies about its lengths. */
#include <errno.h>
#include <sys/socket.h>

#include "harness.h"
#include "lib/proto.h"

TEST(proto_fields_round_trip)
{
	static struct djp_pbuf b;
	struct djp_preader r;
	char s[64];

	djp_pbuf_init(&b);
	djp_put_u8(&b, 0xab);
	djp_put_u16(&b, 0xbeef);
	djp_put_u32(&b, 0xdeadbeef);
	djp_put_u64(&b, 0x0123456789abcdefull);
	djp_put_str(&b, "req_*");
	djp_put_str(&b, NULL);
	djp_preader_init(&r, b.data + DJP_PROTO_HDR_SIZE, b.len);
	CHECK_EQ(djp_get_u8(&r), 0xab);
	CHECK_EQ(djp_get_u16(&r), 0xbeef);
	CHECK_EQ(djp_get_u32(&r), 0xdeadbeef);
	CHECK(djp_get_u64(&r) == 0x0123456789abcdefull);
	CHECK_STR(djp_get_str(&r, s, sizeof(s)), "req_*");
	CHECK_STR(djp_get_str(&r, s, sizeof(s)), "");
	CHECK(djp_preader_done(&r));
	djp_get_u8(&r); /* one past the end */
	CHECK(r.bad);
	CHECK(!djp_preader_done(&r));
}

TEST(proto_rejects_bad_strings)
{
	static const uint8_t too_long[] = { 10, 0, 'a', 'b' };	    /* says 10, has 2 */
	static const uint8_t with_nul[] = { 3, 0, 'a', 0, 'b' };    /* a NUL inside */
	static const uint8_t no_room[] = { 5, 0, 'a', 'b', 'c', 'd', 'e' };
	struct djp_preader r;
	char s[64], tiny[4];

	djp_preader_init(&r, too_long, sizeof(too_long));
	djp_get_str(&r, s, sizeof(s));
	CHECK(r.bad);
	CHECK_STR(s, "");
	djp_preader_init(&r, with_nul, sizeof(with_nul));
	djp_get_str(&r, s, sizeof(s));
	CHECK(r.bad);
	djp_preader_init(&r, no_room, sizeof(no_room));
	djp_get_str(&r, tiny, sizeof(tiny));
	CHECK(r.bad);
	/* Leftover bytes are an error too. */
	djp_preader_init(&r, no_room, sizeof(no_room));
	djp_get_u8(&r);
	CHECK(!djp_preader_done(&r));
}

TEST(proto_header_checks)
{
	uint8_t h[DJP_PROTO_HDR_SIZE] = { 4, 0, 0, 0, DJP_MSG_OK, 0, 0, 0 };
	unsigned type = 0;

	CHECK_EQ(djp_proto_check_hdr(h, &type), 4);
	CHECK_EQ(type, DJP_MSG_OK);
	h[6] = 1; /* flags must be 0 */
	CHECK_EQ(djp_proto_check_hdr(h, &type), -EPROTO);
	h[6] = 0;
	h[4] = 200; /* no such type */
	CHECK_EQ(djp_proto_check_hdr(h, &type), -EPROTO);
	h[4] = DJP_MSG_OK;
	h[2] = 1; /* 64 KiB + 4: over the limit */
	CHECK_EQ(djp_proto_check_hdr(h, &type), -EPROTO);
}

TEST(proto_frames_and_fd_over_a_socket)
{
	static struct djp_pbuf b;
	static uint8_t buf[DJP_PROTO_MAX_PAYLOAD];
	unsigned type;
	int sv[2], fd = -1;
	long n;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	djp_pbuf_init(&b);
	djp_put_u64(&b, 42);
	CHECK_EQ(djp_proto_send(sv[0], DJP_MSG_RING_FD, &b, 1), 0);
	CHECK_EQ(djp_proto_send_error(sv[0], -ENOENT, "nothing"), 0);
	CHECK_EQ(djp_proto_send(sv[0], DJP_MSG_START, NULL, -1), 0);
	n = djp_proto_recv(sv[1], &type, buf, 1000, &fd);
	CHECK_EQ(n, 8);
	CHECK_EQ(type, DJP_MSG_RING_FD);
	CHECK(fd >= 0);
	close(fd);
	n = djp_proto_recv(sv[1], &type, buf, 1000, &fd);
	CHECK_EQ(type, DJP_MSG_ERROR);
	CHECK_EQ(fd, -1);
	CHECK(n > 4);
	CHECK_EQ(djp_proto_recv(sv[1], &type, buf, 1000, NULL), 0);
	CHECK_EQ(type, DJP_MSG_START);
	CHECK_EQ(djp_proto_recv(sv[1], &type, buf, 50, NULL), -ETIMEDOUT);
	close(sv[0]);
	CHECK_EQ(djp_proto_recv(sv[1], &type, buf, 1000, NULL), -ECONNRESET);
	close(sv[1]);
}

/* An oversized payload is refused by the writer, not sent truncated. */
TEST(proto_writer_overflow)
{
	static struct djp_pbuf b;
	static char big[DJP_PROTO_STR_MAX + 100];
	int sv[2];

	memset(big, 'x', sizeof(big) - 1);
	djp_pbuf_init(&b);
	for (int i = 0; i < 20; i++)
		djp_put_str(&b, big);
	CHECK(b.overflow);
	CHECK_EQ(djp_pbuf_room(&b), 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK_EQ(djp_proto_send(sv[0], DJP_MSG_OK, &b, -1), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);
}
