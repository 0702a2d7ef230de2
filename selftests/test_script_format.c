/* lib/format.c: marker formats parsed into fields and rendered back; the
 * recorder's reading of the same formats. */
#include "harness.h"
#include "kernel/agent/recorder.h"
#include "lib/format.h"

TEST(format_parses_named_fields)
{
	struct djp_fmt f;
	CHECK_EQ(djp_format_parse("len=%d skb=%p name=%s", &f, NULL), 3);
	CHECK_STR(f.field[0].name, "len");
	CHECK_EQ(f.field[0].conv, 'd');
	CHECK_STR(f.field[1].name, "skb");
	CHECK_EQ(f.field[1].conv, 'p');
	CHECK_STR(f.field[2].name, "name");
	CHECK_EQ(djp_format_field_index(&f, "name", 4), 2);
	CHECK_EQ(djp_format_field_index(&f, "nope", 4), -1);
}

TEST(format_parses_flags_width_length)
{
	struct djp_fmt f;
	CHECK_EQ(djp_format_parse("x: a=%-08.3lld %% %hhu b %zx c=%#lX", &f, NULL), 4);
	CHECK_STR(f.field[0].name, "a");
	CHECK_EQ(f.field[0].flags, DJP_FMT_LEFT | DJP_FMT_ZERO);
	CHECK_EQ(f.field[0].width, 8);
	CHECK_EQ(f.field[0].prec, 3);
	CHECK_EQ(f.field[0].length, DJP_FMT_LEN_LL);
	CHECK_STR(f.field[1].name, "");
	CHECK_EQ(f.field[1].length, DJP_FMT_LEN_HH);
	CHECK_STR(f.field[2].name, "");
	CHECK_EQ(f.field[2].length, DJP_FMT_LEN_Z);
	CHECK_STR(f.field[3].name, "c");
	CHECK_EQ(f.field[3].flags, DJP_FMT_ALT);
}

TEST(format_rejects_bad_formats)
{
	struct djp_fmt f;
	const char *why = NULL;
	CHECK(djp_format_parse("%*d", &f, &why) < 0 && why);
	CHECK(djp_format_parse("%f", &f, &why) < 0);
	CHECK(djp_format_parse("abc %", &f, &why) < 0);
	CHECK(djp_format_parse("%d%d%d%d%d%d%d%d%d%d%d%d%d", &f, &why) < 0);
	CHECK_EQ(djp_format_parse("", &f, &why), 0);
}

TEST(format_renders_values)
{
	struct djp_fmt f;
	char buf[128];
	int64_t args[4] = { 5, 0x7f00, 0, -1 };
	const char *strs[4] = { NULL, NULL, "eth0", NULL };
	djp_format_parse("len=%d skb=%p name=%s %u", &f, NULL);
	CHECK_EQ(djp_format_render(buf, sizeof(buf), &f, 4, args, strs), strlen(buf));
	CHECK_STR(buf, "len=5 skb=0x7f00 name=eth0 arg4=18446744073709551615");
	/* no format: every argument is argN in hex */
	djp_format_render(buf, sizeof(buf), NULL, 2, args, NULL);
	CHECK_STR(buf, "arg1=0x5 arg2=0x7f00");
	/* truncation is snprintf-like */
	CHECK_EQ(djp_format_render(buf, 6, &f, 1, args, strs), 5);
	CHECK_STR(buf, "len=5");
	CHECK_EQ(djp_format_render(buf, 4, &f, 1, args, strs), 5);
	CHECK_STR(buf, "len");
}

/* The recorder's string mask (which arguments the ring copies as strings)
 * and the tool's fields (how it prints them) come from the one conversion
 * parser: they must agree on every format, or the tool reads a word as a
 * string.  A width of 32767 and more is clamped, not wrapped. */
TEST(format_recorder_mask_agrees_with_fields)
{
	static const char *const fmts[] = {
		"a=%s b=%d", "%-08.3lls x=%s", "%% %s %%s %hhs", "%#x %s %lu %s", "n=%99999s m=%s",
		"%.3s%5s%-s", "%qd %s %Ld %s", "%zd %jd %td %s", "%c%s%p%s", "",
	};
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		struct djp_fmt f;
		uint32_t want = 0;
		int n = djp_format_parse(fmts[i], &f, NULL);
		CHECK(n >= 0);
		for (int k = 0; k < n; k++)
			if (f.field[k].conv == 's')
				want |= 1u << k;
		if (djp_format_str_mask(fmts[i], (unsigned)n) != want)
			djp_test_fail(__FILE__, __LINE__, "format '%s': recorder mask %#x, fields say %#x", fmts[i],
				      djp_format_str_mask(fmts[i], (unsigned)n), want);
	}
	{
		struct djp_fmt f;
		CHECK_EQ(djp_format_parse("n=%99999s", &f, NULL), 1);
		CHECK_EQ(f.field[0].width, DJP_FMT_NUM_MAX);
	}
}
