/*
 * The generic/arch split, checked on the source tree: code outside
 * arch/x86/ reaches the arch through arch/x86/arch.h alone, and names no
 * x86 register (the view's by their x86 names, a ucontext's REG_RIP, the
 * ELF machine), only the roles arch.h gives (DJP_REG_PC, _SP, _FP, _RET,
 * ARCH_GREG_PC, ARCH_ELF_MACHINE), as generic kprobes code asks its arch
 * for instruction_pointer() and regs_return_value().  Every finding is
 * printed as FILE:LINE: TEXT.
 */
#include <dirent.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

/* The folders of generic code, from the source root. */
static const char *const generic[] = { "lib", "kernel", "tools", "include" };

/* The source root, which findings are printed relative to. */
static char root[PATH_MAX];

static void find_root(void)
{
	CHECK(realpath(djp_test_path("../.."), root) != NULL);
}

typedef unsigned (*line_fn)(const char *path, unsigned line, const char *text, void *ctx);

/* Call fn on every line of every .c and .h file under dir (recursively);
 * returns the sum of what it returned. */
static unsigned walk(const char *dir, line_fn fn, void *ctx)
{
	unsigned found = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	CHECK(d != NULL);
	while ((e = readdir(d))) {
		char path[PATH_MAX + 256], text[4096];
		size_t len = strlen(e->d_name);
		unsigned line = 0;
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_type == DT_DIR) {
			found += walk(path, fn, ctx);
			continue;
		}
		if (len < 3 || (strcmp(e->d_name + len - 2, ".c") && strcmp(e->d_name + len - 2, ".h")))
			continue;
		CHECK((f = fopen(path, "r")) != NULL);
		while (fgets(text, sizeof(text), f))
			found += fn(path, ++line, text, ctx);
		found += fn(path, 0, NULL, ctx); /* the end of the file */
		fclose(f);
	}
	closedir(d);
	return found;
}

/* walk() over a folder of the source tree. */
static unsigned walk_folder(const char *folder, line_fn fn, void *ctx)
{
	char dir[PATH_MAX + 16];
	CHECK((size_t)snprintf(dir, sizeof(dir), "%s/%s", root, folder) < sizeof(dir));
	return walk(dir, fn, ctx);
}

static unsigned walk_generic(line_fn fn, void *ctx)
{
	unsigned found = 0;
	find_root();
	for (size_t i = 0; i < sizeof(generic) / sizeof(generic[0]); i++)
		found += walk_folder(generic[i], fn, ctx);
	return found;
}

static unsigned print_match(const char *path, unsigned line, const char *text, void *ctx)
{
	if (!text || regexec(ctx, text, 0, NULL, 0))
		return 0;
	printf("# %s:%u: %s", path + strlen(root) + 1, line, text);
	return 1;
}

TEST(arch_generic_code_includes_only_arch_h)
{
	regex_t re;
	CHECK_EQ(regcomp(&re, "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"arch/x86/([^a]|a[^r]|ar[^c]|arc[^h]|arch[^.])",
			 REG_EXTENDED | REG_NOSUB),
		 0);
	CHECK_EQ(walk_generic(print_match, &re), 0);
	regfree(&re);
}

TEST(arch_generic_code_names_no_x86_register)
{
	regex_t re;
	CHECK_EQ(regcomp(&re,
			 "DJP_REG_R(AX|BX|CX|DX|SI|DI|BP|SP|IP|8|9|1[0-5])([^A-Z0-9_]|$)|"
			 "[^A-Z_]REG_(RIP|RSP|RBP)([^A-Z0-9_]|$)|EM_X86_64",
			 REG_EXTENDED | REG_NOSUB),
		 0);
	CHECK_EQ(walk_generic(print_match, &re), 0);
	regfree(&re);
}

/* The file that ended at `text` NULL, when it had more than *max lines. */
static unsigned print_long(const char *path, unsigned line, const char *text, void *ctx)
{
	static unsigned lines;
	if (text) {
		lines = line;
		return 0;
	}
	if (lines <= *(unsigned *)ctx)
		return 0;
	printf("# %s: %u lines\n", path + strlen(root) + 1, lines);
	return 1;
}

TEST(arch_lib_and_arch_files_stay_under_1500_lines)
{
	unsigned max = 1500;
	find_root();
	CHECK_EQ(walk_folder("lib", print_long, &max) + walk_folder("arch", print_long, &max), 0);
}
