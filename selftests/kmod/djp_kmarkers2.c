// SPDX-License-Identifier: GPL-2.0
/*
 * djp_kmarkers2.ko: a module with markers, loaded and unloaded in a loop by
 * the reload test (djp_kselftest.ko's reload.c) while a probe on its
 * markers stays connected.  Loading runs every marker `passes` times and
 * unloading does it again, from a function in ordinary text: init and exit
 * text are not where markers live (init text is freed after loading).
 * With names=N, km2_name runs N times too, with string arguments: the
 * module's name, a word, NULL and a string longer than the 63 bytes the
 * kernel's recorder copies (djp_tool.sh reads them through djp trace -k).
 */
#include <linux/module.h>
#include <djprobe/marker.h>

static unsigned int passes;
module_param(passes, uint, 0444);
MODULE_PARM_DESC(passes, "times each marker runs on load and again on unload");
static unsigned int names;
module_param(names, uint, 0444);
MODULE_PARM_DESC(names, "times the string marker runs on load and again on unload");

static const char *const km2_words[] = {
	"alpha",
	NULL,
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdefTAIL",
};

static noinline void km2_name_run(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		MARK(km2_name, "mod=%s word=%s pass=%u", THIS_MODULE->name, km2_words[i % 3], i);
}

static noinline void km2_run(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		MARK(km2_site_0, "site=%u pass=%u", 0u, i);
		MARK(km2_site_1, "site=%u pass=%u", 1u, i);
		MARK(km2_site_2, "site=%u pass=%u", 2u, i);
		MARK(km2_site_3, "site=%u pass=%u", 3u, i);
		MARK(km2_site_4, "site=%u pass=%u", 4u, i);
		MARK(km2_site_5, "site=%u pass=%u", 5u, i);
		MARK(km2_site_6, "site=%u pass=%u", 6u, i);
		MARK(km2_site_7, "site=%u pass=%u", 7u, i);
	}
}

static int __init km2_init(void)
{
	km2_run(passes);
	km2_name_run(names);
	return 0;
}

static void __exit km2_exit(void)
{
	km2_run(passes);
	km2_name_run(names);
}

module_init(km2_init);
module_exit(km2_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("djprobe selftest: markers in a module loaded and unloaded while probed");
