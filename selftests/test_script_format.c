/* lib/format.c: marker formats parsed into fields and rendered back. */
#include "harness.h"
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
