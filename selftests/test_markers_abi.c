/* The ABI matrix (selftests/abi.mk): every build of abi_markers.c listed
 * with `djp list`, every marker with its name, format and argument types,
 * every printed address holding the 6-byte NOP in the file (read with
 * libelf, and once through objdump -d); and the misuses of MARK that must
 * not compile. */
#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "harness.h"

#ifndef DJP_ABI_INCLUDE
#define DJP_ABI_INCLUDE "include"
#define DJP_ABI_CC "gcc"
#define DJP_ABI_CXX "g++"
#define DJP_ABI_CLANG "clang"
#endif

static const struct {
	const char *name, *format, *types;
} expected[] = {
	{ "abi_plain", "\"\"", "" },
	{ "abi_format_only", "\"no arguments here\"", "" },
	{ "abi_ints", "\"a=%hhd b=%hu c=%d d=%llu\"", "-1 2 -4 8" },
	{ "abi_pointer", "\"s=%s p=%p\"", "8 8" },
	{ "abi_global", "\"total=%ld x=%ld imm=%d\"", "-8 -8 -4" },
	{ "abi_array", "\"buf=%s lit=%s cbuf=%s ints=%p\"", "8 8 8 8" },
};
#define NEXPECTED 6

/* The builds abi.mk makes: all of them must be there. */
static const char *const compilers[] = { "gcc", "clang" };
static const char *const stds[] = { "gnu11", "c++11" };
static const char *const kinds[] = { "exe", "pie", "static", "shared" };
static const char *const opts[] = { "O0", "O2" };
static const char *const later_stds[] = { "gnu17", "c11", "c++17", "c++20" };

/* The 6 bytes at link-time address addr of the file, through libelf. */
static int bytes_at(const char *path, uint64_t addr, unsigned char out[6])
{
	int fd = open(path, O_RDONLY), ret = -1;
	CHECK(fd >= 0);
	CHECK(elf_version(EV_CURRENT) != EV_NONE);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	CHECK(e);
	while (ret && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		CHECK(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) || addr < sh.sh_addr ||
		    addr + 6 > sh.sh_addr + sh.sh_size)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		CHECK(d && d->d_buf);
		memcpy(out, (char *)d->d_buf + (addr - sh.sh_addr), 6);
		ret = 0;
	}
	elf_end(e);
	close(fd);
	return ret;
}

static char *run_out(const char *cmd, int *status)
{
	static char buf[65536];
	FILE *p = popen(cmd, "r");
	size_t n = 0, r;
	CHECK(p);
	while ((r = fread(buf + n, 1, sizeof(buf) - 1 - n, p)) > 0)
		n += r;
	buf[n] = 0;
	int st = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return buf;
}

/* The size/sign prefixes of an SDT argument string: "-4@%edi 8@x" -> "-4 8". */
static void types_of(const char *args, char *out)
{
	const char *start = out;
	*out = 0;
	for (const char *p = args; *p;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		const char *at = strchr(p, '@');
		CHECK(at);
		out += sprintf(out, "%s%.*s", out != start ? " " : "", (int)(at - p), p);
		while (*p && *p != ' ')
			p++;
	}
}

static void check_build(const char *name)
{
	char path[PATH_MAX], cmd[2 * PATH_MAX];
	int status;

	snprintf(path, sizeof(path), "%s/%s", djp_test_path("abi"), name);
	if (access(path, R_OK))
		djp_test_fail(__FILE__, __LINE__, "%s was not built", path);
	snprintf(cmd, sizeof(cmd), "%s list --no-header %s 2>&1", djp_test_path("../djp"), path);
	char *out = run_out(cmd, &status);
	if (status)
		fprintf(stderr, "# %s", out);
	CHECK_EQ(status, 0);

	int seen[NEXPECTED] = { 0 }, lines = 0;
	for (char *line = out, *next; *line; line = next) {
		next = strchr(line, '\n');
		CHECK(next);
		*next++ = 0;
		lines++;
		char mname[64], obj[PATH_MAX], fmt[128], types[128] = "";
		unsigned long long addr;
		unsigned len;
		int n = 0;
		CHECK_EQ(sscanf(line, "%63s %llx %u %*s %*s %*s %4095s %n", mname, &addr, &len, obj, &n), 4);
		CHECK_STR(obj, path);
		CHECK_EQ(len, 6);
		/* "FORMAT" then the arguments */
		char *f = line + n, *end = strchr(f + 1, '"');
		CHECK(*f == '"' && end);
		snprintf(fmt, sizeof(fmt), "%.*s", (int)(end + 1 - f), f);
		types_of(end + 1, types);

		int k = 0;
		while (k < NEXPECTED && strcmp(expected[k].name, mname))
			k++;
		if (k == NEXPECTED)
			djp_test_fail(__FILE__, __LINE__, "%s: unexpected marker %s", name, mname);
		seen[k]++;
		CHECK_STR(fmt, expected[k].format);
		CHECK_STR(types, expected[k].types);

		unsigned char b[6];
		CHECK_EQ(bytes_at(path, addr, b), 0);
		if (memcmp(b, "\x66\x0f\x1f\x44\x00\x00", 6))
			djp_test_fail(__FILE__, __LINE__, "%s: %s at 0x%llx is not nopw 0x0(%%rax,%%rax,1)", name, mname,
				      addr);
	}
	for (int k = 0; k < NEXPECTED; k++)
		if (seen[k] != 1)
			djp_test_fail(__FILE__, __LINE__, "%s: %s listed %d times", name, expected[k].name, seen[k]);
	CHECK_EQ(lines, NEXPECTED);
}

TEST_TIMEOUT(abi_matrix_every_build_lists_every_marker, 120)
{
	char name[128];
	int builds = 0;
	for (int c = 0; c < 2; c++) {
		for (int s = 0; s < 2; s++)
			for (int k = 0; k < 4; k++)
				for (int o = 0; o < 2; o++) {
					snprintf(name, sizeof(name), "%s-%s-%s-%s", compilers[c], stds[s], kinds[k],
						 opts[o]);
					check_build(name);
					builds++;
				}
		for (int s = 0; s < 4; s++) {
			snprintf(name, sizeof(name), "%s-%s-pie-O2", compilers[c], later_stds[s]);
			check_build(name);
			builds++;
		}
	}
	CHECK_EQ(builds, 40);
}

/* objdump agrees that the site is the 6-byte NOP. */
TEST(abi_objdump_shows_nopw_at_a_site)
{
	char path[PATH_MAX], cmd[3 * PATH_MAX];
	int status;
	unsigned long long addr;

	snprintf(path, sizeof(path), "%s/gcc-gnu11-pie-O2", djp_test_path("abi"));
	snprintf(cmd, sizeof(cmd), "%s list %s | grep '^abi_ints '", djp_test_path("../djp"), path);
	char *out = run_out(cmd, &status);
	CHECK_EQ(status, 0);
	CHECK_EQ(sscanf(out, "%*s %llx", &addr), 1);
	snprintf(cmd, sizeof(cmd), "objdump -d --start-address=0x%llx --stop-address=0x%llx %s", addr, addr + 6, path);
	out = run_out(cmd, &status);
	CHECK_EQ(status, 0);
	char want[64];
	snprintf(want, sizeof(want), "%llx:", addr);
	char *line = strstr(out, want);
	CHECK(line);
	CHECK(strstr(line, "66 0f 1f 44 00 00"));
	CHECK(strstr(line, "nopw   0x0(%rax,%rax,1)"));
}

/* ---- misuse must not compile -------------------------------------------- */

static const struct {
	const char *what, *body;
} misuse[] = {
	{ "a double argument", "double d = 1.5; MARK(m_double, \"%f\", d);" },
	{ "a struct argument", "struct s { int a; } v = { 1 }; MARK(m_struct, \"%d\", v);" },
	{ "more conversions than arguments", "int a = 1; MARK(m_more, \"%d %d\", a);" },
	{ "fewer conversions than arguments", "int a = 1, b = 2; MARK(m_fewer, \"%d\", a, b);" },
};

/* The compilers a snippet is tried with, as C and as C++. */
static const struct {
	const char *cc;
	bool cxx;
} compilers_[] = {
	{ DJP_ABI_CC, false }, { DJP_ABI_CXX, true }, { DJP_ABI_CLANG, false }, { "clang++", true },
};

static int compile(const char *compiler, bool cxx, const char *body)
{
	char src[] = "/tmp/djp-abi-XXXXXX", cmd[PATH_MAX + 512];
	int fd = mkstemp(src);
	CHECK(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "#include <djprobe/marker.h>\nint f(void);\nint f(void)\n{\n\t%s\n\treturn 0;\n}\n", body);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s -x %s %s -O2 -fsyntax-only -I%s %s >/dev/null 2>&1", compiler, cxx ? "c++" : "c",
		 cxx ? "-std=c++11" : "-std=gnu11", DJP_ABI_INCLUDE, src);
	int st = system(cmd);
	unlink(src);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST_TIMEOUT(abi_misuse_does_not_compile, 120)
{
	for (size_t c = 0; c < 4; c++) {
		/* the control: a correct MARK compiles with the same command */
		CHECK_EQ(compile(compilers_[c].cc, compilers_[c].cxx, "int a = 1; MARK(m_ok, \"%d\", a);"), 0);
		for (size_t i = 0; i < sizeof(misuse) / sizeof(misuse[0]); i++) {
			int st = compile(compilers_[c].cc, compilers_[c].cxx, misuse[i].body);
			if (st == 0)
				djp_test_fail(__FILE__, __LINE__, "%s%s: %s compiled", compilers_[c].cc,
					      compilers_[c].cxx ? " (C++)" : "", misuse[i].what);
		}
	}
}

/* Arrays and string literals are taken as a function call takes them, as
 * pointers, by every compiler (the matrix checks the recorded sizes). */
TEST_TIMEOUT(abi_array_and_literal_arguments_compile, 120)
{
	static const char *const body = "char buf[8] = \"x\"; const char cbuf[] = \"y\"; int ints[2] = { 1, 2 };"
					" MARK(m_arr, \"%s %s %s %p\", buf, \"literal\", cbuf, ints);";
	for (size_t c = 0; c < 4; c++)
		if (compile(compilers_[c].cc, compilers_[c].cxx, body))
			djp_test_fail(__FILE__, __LINE__, "%s%s: array and literal arguments do not compile",
				      compilers_[c].cc, compilers_[c].cxx ? " (C++)" : "");
}
