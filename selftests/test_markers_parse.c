/* The argument-location parser and the record and note parsers, on golden
 * inputs built here byte by byte: what they accept, what they refuse, and
 * that a formatted location parses back to itself. */
#include <errno.h>

#include "harness.h"
#include "lib/markers.h"

struct loc_case {
	const char *in;
	int kind, size, is_signed, reg, index, scale, shift;
	int64_t disp;
};

#define N DJP_REG_NONE
static const struct loc_case good[] = {
	{ "-4@%edi", DJP_LOC_REG, 4, 1, DJP_REG_RDI, N, 0, 0, 0 },
	{ "8@%rax", DJP_LOC_REG, 8, 0, DJP_REG_RAX, N, 0, 0, 0 },
	{ "1@%ah", DJP_LOC_REG, 1, 0, DJP_REG_RAX, N, 0, 8, 0 },
	{ "-1@%sil", DJP_LOC_REG, 1, 1, DJP_REG_RSI, N, 0, 0, 0 },
	{ "2@%r9w", DJP_LOC_REG, 2, 0, DJP_REG_R9, N, 0, 0, 0 },
	{ "-4@%r15d", DJP_LOC_REG, 4, 1, DJP_REG_R15, N, 0, 0, 0 },
	{ "1@%r10b", DJP_LOC_REG, 1, 0, DJP_REG_R10, N, 0, 0, 0 },
	{ "%ecx", DJP_LOC_REG, 4, 0, DJP_REG_RCX, N, 0, 0, 0 },
	{ "8@-16(%rbp)", DJP_LOC_MEM, 8, 0, DJP_REG_RBP, N, 1, 0, -16 },
	{ "-4@(%rdi)", DJP_LOC_MEM, 4, 1, DJP_REG_RDI, N, 1, 0, 0 },
	{ "-4@0x10(%rsp)", DJP_LOC_MEM, 4, 1, DJP_REG_RSP, N, 1, 0, 16 },
	{ "-4@(%rdi,%rsi,4)", DJP_LOC_MEM, 4, 1, DJP_REG_RDI, DJP_REG_RSI, 4, 0, 0 },
	{ "8@8(,%rax,8)", DJP_LOC_MEM, 8, 0, N, DJP_REG_RAX, 8, 0, 8 },
	{ "2@-3(%r12,%r13)", DJP_LOC_MEM, 2, 0, DJP_REG_R12, DJP_REG_R13, 1, 0, -3 },
	{ "-4@$5", DJP_LOC_IMM, 4, 1, N, N, 0, 0, 5 },
	{ "-4@$-5", DJP_LOC_IMM, 4, 1, N, N, 0, 0, -5 },
	{ "8@$0x123456789", DJP_LOC_IMM, 8, 0, N, N, 0, 0, 0x123456789 },
	{ "8@$18446744073709551615", DJP_LOC_IMM, 8, 0, N, N, 0, 0, -1 },
	{ "-4@g(%rip)", DJP_LOC_ABS, 4, 1, N, N, 0, 0, 0x4010 },
	{ "8@gl+8(%rip)", DJP_LOC_ABS, 8, 0, N, N, 0, 0, 0x4028 },
	{ "8@gl-8(%rip)", DJP_LOC_ABS, 8, 0, N, N, 0, 0, 0x4018 },
	{ "-4@unknown_sym(%rip)", DJP_LOC_NONE, 4, 1, N, N, 0, 0, 0 },
	/* code that is not position independent (a kernel module's) indexes
	 * an array at a symbol's absolute address */
	{ "8@gl(,%rdx,8)", DJP_LOC_MEM, 8, 0, N, DJP_REG_RDX, 8, 0, 0x4020 },
	{ "4@g(%rbx)", DJP_LOC_MEM, 4, 0, DJP_REG_RBX, N, 1, 0, 0x4010 },
	{ "8@unknown_sym(,%rdx,8)", DJP_LOC_NONE, 8, 0, N, N, 0, 0, 0 },
	{ "8@0x601040", DJP_LOC_ABS, 8, 0, N, N, 0, 0, 0x601040 },
};

static const char *const bad[] = {
	"", "4@", "3@%eax", "16@%eax", "x@%eax", "4@%foo", "4@%rip", "4@$", "4@$x", "4@-16(%rbp", "4@(%rbp,%rsp,2)",
	"4@(%rbp,%rax,3)", "4@()", "4@16(%eax)", "4@%eax junk", "4@(%rip,%rax,1)", "4@5(%rip)",
	"4@$99999999999999999999",
};

static int lookup(void *ctx, const char *name, size_t len, uint64_t *addr)
{
	(void)ctx;
	if (len == 1 && name[0] == 'g')
		*addr = 0x4010;
	else if (len == 2 && !memcmp(name, "gl", 2))
		*addr = 0x4020;
	else
		return -ENOENT;
	return 0;
}

static void check_loc(const struct djp_argloc *l, const struct loc_case *c)
{
	CHECK_EQ(l->kind, c->kind);
	CHECK_EQ(l->size, c->size);
	CHECK_EQ(l->is_signed, c->is_signed);
	CHECK_EQ(l->disp, c->disp);
	if (c->kind == DJP_LOC_REG || c->kind == DJP_LOC_MEM)
		CHECK_EQ(l->reg, c->reg);
	if (c->kind == DJP_LOC_REG)
		CHECK_EQ(l->reg_shift, c->shift);
	if (c->kind == DJP_LOC_MEM) {
		CHECK_EQ(l->index, c->index);
		CHECK_EQ(l->scale, c->scale);
	}
}

TEST(argloc_parses_every_location_kind)
{
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct djp_argloc l;
		const char *why = NULL;
		fprintf(stderr, "# %s\n", good[i].in);
		CHECK_EQ(djp_argloc_parse(good[i].in, strlen(good[i].in), &l, lookup, NULL, &why), 0);
		check_loc(&l, &good[i]);
	}
}

TEST(argloc_refuses_malformed_locations)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct djp_argloc l;
		const char *why = NULL;
		fprintf(stderr, "# '%s'\n", bad[i]);
		CHECK_EQ(djp_argloc_parse(bad[i], strlen(bad[i]), &l, lookup, NULL, &why), -EINVAL);
		CHECK(why && *why);
	}
}

TEST(argloc_format_round_trips)
{
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct djp_argloc l, again;
		char buf[128];
		const char *why;
		CHECK_EQ(djp_argloc_parse(good[i].in, strlen(good[i].in), &l, lookup, NULL, &why), 0);
		int n = djp_argloc_format(&l, buf, sizeof(buf));
		CHECK(n > 0 && (size_t)n < sizeof(buf));
		fprintf(stderr, "# %s -> %s\n", good[i].in, buf);
		CHECK_EQ(djp_argloc_parse(buf, (size_t)n, &again, lookup, NULL, &why), 0);
		check_loc(&again, &good[i]);
	}
}

TEST(argloc_parse_all_splits_and_counts)
{
	struct djp_argloc l[12];
	const char *why;
	CHECK_EQ(djp_argloc_parse_all("-4@%edi 8@-16(%rbp) -4@$5 -4@g(%rip)", l, 12, lookup, NULL, &why), 4);
	CHECK_EQ(l[3].kind, DJP_LOC_ABS);
	CHECK_EQ(djp_argloc_parse_all("", l, 12, NULL, NULL, &why), 0);
	CHECK_EQ(djp_argloc_parse_all("1@%al 1@%al 1@%al", l, 2, NULL, NULL, &why), -EINVAL);
	CHECK_EQ(djp_reg_from_name("%r11d", 5, NULL, NULL), DJP_REG_R11);
	CHECK_EQ(djp_reg_from_name("%r16", 4, NULL, NULL), -1);
	CHECK_STR(djp_loc_kind_name(DJP_LOC_MEM), "memory");
}

/* ---- records ------------------------------------------------------------ */

struct sec {
	unsigned char b[1024];
	size_t n;
};

/* Append one version-1 record whose site is `site_delta` bytes after its
 * offset field; returns the record's offset. */
static size_t add_record(struct sec *s, unsigned version, unsigned nargs, int64_t site_delta, const char *name,
			 const char *args, const char *fmt)
{
	size_t off = s->n, ln = strlen(name) + 1, la = strlen(args) + 1, lf = strlen(fmt) + 1;
	size_t size = (16 + ln + la + lf + 7) & ~(size_t)7;
	uint16_t v16 = (uint16_t)version, sz16 = (uint16_t)size;

	memset(s->b + off, 0, size);
	memcpy(s->b + off, &v16, 2);
	memcpy(s->b + off + 2, &sz16, 2);
	s->b[off + 4] = 6;
	s->b[off + 5] = (unsigned char)nargs;
	memcpy(s->b + off + 8, &site_delta, 8);
	memcpy(s->b + off + 16, name, ln);
	memcpy(s->b + off + 16 + ln, args, la);
	memcpy(s->b + off + 16 + ln + la, fmt, lf);
	s->n += size;
	return off;
}

static int parse(const struct sec *s, struct djp_marker_list **l, char *err)
{
	return djp_markers_parse_section(s->b, s->n, 0x2000, "file.so", l, err, 256);
}

TEST(records_parse_with_padding_between)
{
	struct sec s = { .n = 0 };
	struct djp_marker_list *l;
	char err[256];

	add_record(&s, 1, 2, -0x100, "req_start", "-4@%edi 8@%rsi", "len=%d p=%p");
	s.n += 16; /* linker padding between input sections */
	size_t off2 = add_record(&s, 1, 0, 0x40, "req_done", "", "");
	s.n += 8;
	CHECK_EQ(parse(&s, &l, err), 0);
	CHECK_EQ(l->count, 2);
	CHECK_STR(l->v[0].name, "req_start");
	CHECK_STR(l->v[0].format, "len=%d p=%p");
	CHECK_STR(l->v[0].args, "-4@%edi 8@%rsi");
	CHECK_EQ(l->v[0].nargs, 2);
	CHECK_EQ(l->v[0].site, 0x2000 + 8 - 0x100);
	CHECK_EQ(l->v[0].site_len, 6);
	CHECK_EQ(l->v[0].arg[1].reg, DJP_REG_RSI);
	CHECK_EQ(l->v[1].site, 0x2000 + off2 + 8 + 0x40);
	CHECK_STR(l->v[1].format, "");
	CHECK(!l->v[1].from_sdt);
	djp_marker_list_free(l);

	struct sec empty = { .n = 0 };
	CHECK_EQ(parse(&empty, &l, err), 0);
	CHECK_EQ(l->count, 0);
	djp_marker_list_free(l);
}

static void expect_error(const struct sec *s, int ret, const char *what)
{
	struct djp_marker_list *l = (void *)1;
	char err[256] = "";
	CHECK_EQ(parse(s, &l, err), ret);
	CHECK(l == NULL);
	fprintf(stderr, "# %s\n", err);
	CHECK(!strncmp(err, "file.so: ", 9));
	CHECK(strstr(err, what));
	CHECK(!strchr(err, '\n'));
}

TEST(records_refuse_corruption)
{
	struct sec s = { .n = 0 };
	add_record(&s, 2, 0, 0, "x", "", "");
	expect_error(&s, -ENOTSUP, "version 2");

	s.n = 0;
	add_record(&s, 1, 0, 0, "x", "", "");
	uint16_t big = 0x1000;
	memcpy(s.b + 2, &big, 2);
	expect_error(&s, -EINVAL, "past the end of the section");

	s.n = 0;
	add_record(&s, 1, 0, 0, "x", "", "");
	memset(s.b + 16, 'A', s.n - 16);
	expect_error(&s, -EINVAL, "strings run past");

	s.n = 0;
	add_record(&s, 1, 3, 0, "x", "-4@%edi", "");
	expect_error(&s, -EINVAL, "record says 3");

	s.n = 0;
	add_record(&s, 1, 1, 0, "x", "-4@%bogus", "");
	expect_error(&s, -EINVAL, "bad argument string");

	s.n = 0;
	add_record(&s, 1, 0, 0, "x", "", "");
	s.n = 12; /* header cut by the end of the section */
	expect_error(&s, -EINVAL, "cut off");

	s.n = 0;
	add_record(&s, 1, 0, 0, "x", "", "");
	s.b[4] = 5;
	expect_error(&s, -EINVAL, "site length 5");

	s.n = 0;
	add_record(&s, 1, 13, 0, "x", "", "");
	expect_error(&s, -EINVAL, "13 arguments");
}

/* ---- SDT notes ---------------------------------------------------------- */

static void add_note(struct sec *s, const char *owner, unsigned type, uint64_t pc, const char *prov,
		     const char *name, const char *args)
{
	uint32_t namesz = (uint32_t)strlen(owner) + 1;
	size_t lp = strlen(prov) + 1, ln = strlen(name) + 1, la = strlen(args) + 1;
	uint32_t descsz = (uint32_t)(24 + lp + ln + la);
	unsigned char *p = s->b + s->n;
	uint64_t base = 0, sem = 0;

	memset(p, 0, 12 + ((namesz + 3) & ~3u) + ((descsz + 3) & ~3u));
	memcpy(p, &namesz, 4);
	memcpy(p + 4, &descsz, 4);
	memcpy(p + 8, &type, 4);
	memcpy(p + 12, owner, namesz);
	unsigned char *d = p + 12 + ((namesz + 3) & ~3u);
	memcpy(d, &pc, 8);
	memcpy(d + 8, &base, 8);
	memcpy(d + 16, &sem, 8);
	memcpy(d + 24, prov, lp);
	memcpy(d + 24 + lp, name, ln);
	memcpy(d + 24 + lp + ln, args, la);
	s->n += 12 + ((namesz + 3) & ~3u) + ((descsz + 3) & ~3u);
}

TEST(sdt_notes_parse_and_skip_foreign_notes)
{
	struct sec s = { .n = 0 };
	struct djp_marker_list *l;
	char err[256];

	add_note(&s, "stapsdt", 3, 0x1234, "libc", "setjmp", "8@%rdi -4@%esi 8@%xmm0");
	add_note(&s, "GNU", 3, 0, "x", "y", "");
	add_note(&s, "stapsdt", 3, 0x5678, "libc", "longjmp", "");
	CHECK_EQ(djp_markers_parse_sdt_notes(s.b, s.n, "libc.so.6", &l, err, sizeof(err)), 0);
	CHECK_EQ(l->count, 2);
	CHECK_STR(l->v[0].provider, "libc");
	CHECK_STR(l->v[0].name, "setjmp");
	CHECK_EQ(l->v[0].site, 0x1234);
	CHECK_EQ(l->v[0].site_len, 1);
	CHECK(l->v[0].from_sdt);
	CHECK_EQ(l->v[0].nargs, 3);
	CHECK_EQ(l->v[0].arg[1].is_signed, 1);
	CHECK_EQ(l->v[0].arg[2].kind, DJP_LOC_NONE); /* a vector register: unknown, not an error */
	CHECK_STR(l->v[1].name, "longjmp");
	djp_marker_list_free(l);

	s.n -= 4; /* the last note now runs past the section */
	l = (void *)1;
	CHECK_EQ(djp_markers_parse_sdt_notes(s.b, s.n, "libc.so.6", &l, err, sizeof(err)), -EINVAL);
	CHECK(l == NULL);
	CHECK(strstr(err, "libc.so.6: SDT note at offset"));
}
