/* `djp list`: the text and JSON listings, PIDs, and every kind of bad input.
 * A bad input must give one "djp: PATH: problem" line on stderr, exit
 * status 1 and nothing at all on stdout.  The corrupt files are made here,
 * from a copy of the example program, patched where libelf says .markers is. */
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"

struct run {
	int status; /* exit status, or -1 */
	char out[65536], err[8192];
};

static void slurp(int fd, char *buf, size_t sz)
{
	size_t n = 0;
	ssize_t r;
	while (n + 1 < sz && (r = read(fd, buf + n, sz - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = 0;
}

/* Run the shell command; stdout and stderr are read after it exits, from
 * temporary files, so neither can block the other. */
static struct run *run(const char *fmt, const char *a, const char *b)
{
	static struct run r;
	char cmd[4 * PATH_MAX], o[] = "/tmp/djp-out-XXXXXX", e[] = "/tmp/djp-err-XXXXXX";
	int fo = mkstemp(o), fe = mkstemp(e);
	CHECK(fo >= 0 && fe >= 0);
	snprintf(cmd, sizeof(cmd), fmt, a, b);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(fo, 1);
		dup2(fe, 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	lseek(fo, 0, SEEK_SET);
	lseek(fe, 0, SEEK_SET);
	slurp(fo, r.out, sizeof(r.out));
	slurp(fe, r.err, sizeof(r.err));
	close(fo);
	close(fe);
	unlink(o);
	unlink(e);
	return &r;
}

static const char *djp(void)
{
	static char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", djp_test_path("../djp"));
	return path;
}

static const char *example(void)
{
	static char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", djp_test_path("progs/markers_example"));
	return path;
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static char dir[] = "/tmp/djp-list-XXXXXX";
/* Not the template's last letter: mkdtemp's random suffix may end in 'X'. */
static bool dir_made;

static const char *tmp(const char *name)
{
	static char path[PATH_MAX];
	if (!dir_made) {
		CHECK(mkdtemp(dir) != NULL);
		dir_made = true;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void cleanup(void)
{
	if (dir_made)
		run("rm -rf %s%s", dir, "");
}

static void copy_example(const char *to)
{
	CHECK_EQ(run("cp %s %s", example(), to)->status, 0);
}

/* Offset and size of .markers in the file, found with libelf. */
static void markers_section(const char *path, off_t *off, size_t *size)
{
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK(elf_version(EV_CURRENT) != EV_NONE);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	CHECK(e && elf_getshdrstrndx(e, &shstrndx) == 0);
	*off = 0;
	*size = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		CHECK(gelf_getshdr(scn, &sh));
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".markers")) {
			*off = (off_t)sh.sh_offset;
			*size = sh.sh_size;
		}
	}
	elf_end(e);
	close(fd);
	CHECK(*off > 0);
}

static void patch(const char *path, off_t off, const void *bytes, size_t n)
{
	int fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, bytes, n, off), (ssize_t)n);
	close(fd);
}

/* One line on stderr naming `what` and containing `problem`, status 1, no
 * stdout. */
static void check_fails(const char *arg, const char *what, const char *problem)
{
	struct run *r = run("%s list %s", djp(), arg);
	char want[PATH_MAX + 16];
	fprintf(stderr, "# djp list %s -> %d: %s", arg, r->status, r->err);
	CHECK_EQ(r->status, 1);
	CHECK_STR(r->out, "");
	CHECK_EQ(count_lines(r->err), 1);
	snprintf(want, sizeof(want), "djp: %s: ", what);
	CHECK(!strncmp(r->err, want, strlen(want)));
	CHECK(strstr(r->err, problem));
	/* the same with --json, and with a good file first: still nothing */
	r = run("%s list --json %s", djp(), arg);
	CHECK_EQ(r->status, 1);
	CHECK_STR(r->out, "");
	char both[2 * PATH_MAX + 2];
	snprintf(both, sizeof(both), "%s %s", example(), arg);
	r = run("%s list %s", djp(), both);
	CHECK_EQ(r->status, 1);
	CHECK_STR(r->out, "");
	CHECK_EQ(count_lines(r->err), 1);
}

TEST(list_prints_one_line_per_marker)
{
	struct run *r = run("%s list %s", djp(), example());
	CHECK_EQ(r->status, 0);
	CHECK_STR(r->err, "");
	CHECK_EQ(count_lines(r->out), 9);
	/* NAME ADDRESS LEN FUNCTION FILE:LINE OBJECT "FORMAT" ARGS */
	char *line = strstr(r->out, "ex_sizes ");
	CHECK(line == r->out || (line && line[-1] == '\n'));
	char name[64], addr[32], fn[64], pos[PATH_MAX], obj[PATH_MAX];
	unsigned len;
	CHECK_EQ(sscanf(line, "%63s %31s %u %*s %63s %4095s %4095s", name, addr, &len, fn, pos, obj), 6);
	CHECK_STR(name, "ex_sizes");
	CHECK(!strncmp(addr, "0x", 2));
	CHECK_EQ(len, 6);
	CHECK_STR(fn, "ex_sizes");
	CHECK(strstr(pos, "markers_example.c:"));
	CHECK_STR(obj, example());
	CHECK(strstr(line, "\"a=%hhd b=%hhu c=%hd d=%hu e=%d f=%u g=%ld h=%lu\"  -1@"));
	CHECK(strstr(r->out, "ex_empty ") && strstr(r->out, "\"\"\n"));
}

TEST(list_json_has_every_field)
{
	struct run *r = run("%s list --json %s", djp(), example());
	CHECK_EQ(r->status, 0);
	CHECK_EQ(count_lines(r->out), 9);
	char *line = strstr(r->out, "{\"name\":\"ex_immediates\"");
	CHECK(line);
	*strchr(line, '\n') = 0;
	fprintf(stderr, "# %s\n", line);
	CHECK(strstr(line, "\"format\":\"five=%d minus=%d big=%lu\""));
	CHECK(strstr(line, "\"args\":[{\"size\":4,\"signed\":true,\"kind\":\"immediate\",\"value\":5},"));
	CHECK(strstr(line, "\"value\":-5}"));
	CHECK(strstr(line, "\"address\":\"0x"));
	CHECK(strstr(line, "\"length\":6,\"function\":\"ex_immediates\",\"file\":\""));
	CHECK(strstr(line, "\"line\":"));
	CHECK(strstr(line, "\"object\":\""));
	CHECK(!strstr(line, "\"provider\""));
	CHECK(line[strlen(line) - 1] == '}');
}

TEST(list_sdt_only_object_names_the_provider)
{
	const char *path = tmp("sdt-only");
	CHECK_EQ(run("objcopy --remove-section=.markers %s %s", example(), path)->status, 0);
	struct run *r = run("%s list %s", djp(), path);
	CHECK_EQ(r->status, 0);
	CHECK_EQ(count_lines(r->out), 9);
	CHECK(strstr(r->out, "djp:ex_sizes "));
	r = run("%s list --json %s", djp(), path);
	CHECK(strstr(r->out, "\"provider\":\"djp\""));
	CHECK(strstr(r->out, "\"length\":1,"));
	cleanup();
}

TEST(list_binary_without_markers_says_so)
{
	const char *path = tmp("plain");
	CHECK_EQ(run("objcopy --remove-section=.markers --remove-section=.note.stapsdt %s %s", example(), path)->status,
		 0);
	struct run *r = run("%s list %s", djp(), path);
	char want[PATH_MAX + 32];
	snprintf(want, sizeof(want), "%s: no markers\n", path);
	CHECK_EQ(r->status, 0);
	CHECK_STR(r->out, want);
	cleanup();
}

TEST(list_stripped_binary_has_no_positions)
{
	const char *path = tmp("stripped");
	CHECK_EQ(run("strip -o %s %s", path, example())->status, 0);
	struct run *r = run("%s list %s", djp(), path);
	CHECK_EQ(r->status, 0);
	CHECK_EQ(count_lines(r->out), 9);
	CHECK(!strstr(r->out, ".c:"));
	CHECK(strstr(r->out, "ex_sizes "));
	/* no symbol: each site's function is named by its start, from the
	 * call-frame information, at or below the site */
	for (const char *line = r->out; *line; line = strchr(line, '\n') + 1) {
		unsigned long long site, start;
		CHECK_EQ(sscanf(line, "%*s %llx %*u %*s %llx", &site, &start), 2);
		CHECK(start && start <= site);
	}
	cleanup();
}

/* A stripped file with its symbols and DWARF in a separate debug file, as
 * a distribution ships it: found by .gnu_debuglink, checked by build-id. */
TEST(list_finds_the_separate_debug_file)
{
	char dbg[PATH_MAX], stripped[PATH_MAX], other[PATH_MAX], cmd[8 * PATH_MAX];
	struct run *r;
	int with_pos = 0;
	snprintf(dbg, sizeof(dbg), "%s", tmp("example.debug"));
	snprintf(stripped, sizeof(stripped), "%s", tmp("stripped-linked"));
	snprintf(other, sizeof(other), "%s", tmp("other"));
	snprintf(cmd, sizeof(cmd), "objcopy --only-keep-debug %s %s && strip -o %s %s && objcopy --add-gnu-debuglink=%s %s",
		 example(), dbg, stripped, example(), dbg, stripped);
	CHECK_EQ(run("%s%s", cmd, "")->status, 0);
	r = run("%s list %s", djp(), stripped);
	CHECK_EQ(r->status, 0);
	CHECK_EQ(count_lines(r->out), 9);
	for (const char *p = r->out; (p = strstr(p, "markers_example.c:")); p++)
		with_pos++;
	CHECK_EQ(with_pos, 9);
	CHECK(strstr(r->out, " ex_immediates ") != NULL);
	/* a debug file of another build is not taken */
	snprintf(cmd, sizeof(cmd), "printf 'int main(void) { return 0; }' | cc -g -x c -o %s - && cp %s %s", other, other,
		 dbg);
	CHECK_EQ(run("%s%s", cmd, "")->status, 0);
	r = run("%s list %s", djp(), stripped);
	CHECK_EQ(r->status, 0);
	CHECK(!strstr(r->out, ".c:"));
	cleanup();
}

/* SDT semaphores, against readelf's reading of the same notes. */
TEST(list_shows_sdt_semaphores)
{
	const char *py = "/usr/bin/python3.11";
	char want[64];
	struct run *r;
	unsigned long long sem = 0;
	const char *at;
	if (access(py, R_OK))
		djp_test_fail(__FILE__, __LINE__, "no %s: make check installs python3 (Debian 12's is 3.11)", py);
	r = run("readelf -n %s | grep -A1 'Name: gc__start$' | sed -n 's/.*Semaphore: //p'%s", py, "");
	CHECK(sscanf(r->out, "%llx", &sem) == 1 && sem);
	r = run("%s list %s", djp(), py);
	CHECK_EQ(r->status, 0);
	CHECK((at = strstr(r->out, "python:gc__start ")) != NULL);
	snprintf(want, sizeof(want), "  0x%llx  ", sem);
	CHECK(strstr(at, want) && strstr(at, want) < strchr(at, '\n'));
	r = run("%s list --json %s", djp(), py);
	snprintf(want, sizeof(want), "\"semaphore\":\"0x%llx\"", sem);
	CHECK(strstr(r->out, want) != NULL);
	/* a probe without one */
	r = run("%s list %s", djp(), example());
	CHECK(!strstr(r->out, "  0x0  "));
}

TEST(list_refuses_bad_files)
{
	check_fails("/nonexistent/djp-missing", "/nonexistent/djp-missing", "No such file");
	check_fails("/tmp", "/tmp", "is a directory");

	const char *text = tmp("text");
	CHECK_EQ(run("echo 'not an ELF file at all' > %s%s", text, "")->status, 0);
	check_fails(text, text, "not an ELF file");

	const char *trunc = tmp("truncated");
	struct stat st;
	CHECK_EQ(stat(example(), &st), 0);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "%lld", (long long)st.st_size / 2);
	char full[2 * PATH_MAX];
	snprintf(full, sizeof(full), "%s > %s", example(), trunc);
	CHECK_EQ(run("head -c %s %s", cmd, full)->status, 0);
	check_fails(trunc, trunc, "truncated ELF file");

	const char *elf32 = tmp("elf32");
	copy_example(elf32);
	unsigned char cls = ELFCLASS32;
	patch(elf32, EI_CLASS, &cls, 1);
	check_fails(elf32, elf32, "not a 64-bit ELF file");

	off_t off;
	size_t size = 0;
	const char *ver = tmp("version");
	copy_example(ver);
	markers_section(ver, &off, &size);
	uint16_t two = 2;
	patch(ver, off, &two, 2);
	check_fails(ver, ver, "has version 2; this reader knows only version 1");

	const char *past = tmp("size-past");
	copy_example(past);
	uint16_t big = 0xfff8;
	patch(past, off + 2, &big, 2);
	check_fails(past, past, "runs past the end of the section");

	const char *strs = tmp("strings-past");
	copy_example(strs);
	unsigned char rec[4];
	int fd = open(strs, O_RDONLY);
	CHECK_EQ(pread(fd, rec, 4, off), 4);
	close(fd);
	uint16_t rsize;
	memcpy(&rsize, rec + 2, 2);
	char fill[4096];
	memset(fill, 'A', sizeof(fill));
	CHECK(rsize > 16 && rsize <= size);
	patch(strs, off + 16, fill, rsize - 16u);
	check_fails(strs, strs, "strings run past the end of the record");

	cleanup();
}

TEST(list_refuses_missing_pid)
{
	check_fails("999999999", "999999999", "no such process");
}

TEST(list_usage_errors_exit_2)
{
	struct run *r = run("%s%s", djp(), "");
	CHECK_EQ(r->status, 2);
	CHECK_EQ(count_lines(r->err), 1);
	/* Not a command: a script file, as `stap bogus` reads one. */
	r = run("%s bogus%s", djp(), "");
	CHECK_EQ(r->status, 1);
	CHECK_EQ(count_lines(r->err), 1);
	CHECK(strstr(r->err, "bogus"));
	r = run("%s list --bogus%s", djp(), "");
	CHECK_EQ(r->status, 2);
	r = run("%s list%s", djp(), "");
	CHECK_EQ(r->status, 2);
	r = run("%s list --help%s", djp(), "");
	CHECK_EQ(r->status, 0);
	CHECK(strstr(r->out, "NAME ADDRESS LEN SEMAPHORE FUNCTION FILE:LINE OBJECT \"FORMAT\" ARGS"));
}

/* Run an example program in its "wait" mode until it says ready; closing
 * *hold (its standard input) makes it exit. */
static pid_t start_waiting(const char *prog, int *hold)
{
	int in[2], out[2];
	char ready[16] = "";
	CHECK(pipe(in) == 0 && pipe(out) == 0);
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(prog, prog, "wait", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	CHECK(read(out[0], ready, sizeof(ready) - 1) > 0);
	CHECK(!strncmp(ready, "ready", 5));
	close(out[0]);
	*hold = in[1];
	return child;
}

/* A running process: every marker of the example at its run-time address,
 * which must hold the NOP in the process's memory. */
TEST(list_pid_gives_runtime_addresses)
{
	int hold;
	char pid[16];
	pid_t child = start_waiting(example(), &hold);
	snprintf(pid, sizeof(pid), "%d", (int)child);

	struct run *r = run("%s list %s", djp(), pid);
	fprintf(stderr, "%s", r->err);
	CHECK_EQ(r->status, 0);
	CHECK(count_lines(r->out) >= 9);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)child);
	int mem = open(path, O_RDONLY);
	CHECK(mem >= 0);
	int found = 0;
	for (char *line = r->out; *line; line = strchr(line, '\n') + 1) {
		char name[128], obj[PATH_MAX];
		unsigned long long addr;
		unsigned len;
		CHECK_EQ(sscanf(line, "%127s %llx %u %*s %*s %*s %4095s", name, &addr, &len, obj), 4);
		if (strcmp(obj, example()))
			continue;
		unsigned char b[6];
		CHECK_EQ(pread(mem, b, 6, (off_t)addr), 6);
		CHECK(!memcmp(b, "\x66\x0f\x1f\x44\x00\x00", 6));
		CHECK(addr > 0x10000); /* a PIE, so the bias was added */
		found++;
	}
	CHECK_EQ(found, 9);
	close(mem);

	r = run("%s list --json %s", djp(), pid);
	CHECK_EQ(r->status, 0);
	CHECK(strstr(r->out, "\"object\":\""));
	close(hold); /* the example exits */
	waitpid(child, NULL, 0);
}

/* A pid is a number: leading zeros name the same process. */
TEST(list_pid_with_leading_zeros)
{
	char plain[32], zeros[40];
	static char first[sizeof(((struct run *)0)->out)];

	snprintf(plain, sizeof(plain), "%d", (int)getpid());
	snprintf(zeros, sizeof(zeros), "000%d", (int)getpid());
	struct run *r = run("%s list %s", djp(), plain);
	CHECK_EQ(r->status, 0);
	CHECK(count_lines(r->out) > 0);
	memcpy(first, r->out, sizeof(first));
	r = run("%s list %s", djp(), zeros);
	fprintf(stderr, "# djp list %s -> %d: %s", zeros, r->status, r->err);
	CHECK_EQ(r->status, 0);
	CHECK_STR(r->out, first);
	check_fails("99999999999999999999", "99999999999999999999", "not a process id");
}

/* A FIFO is refused at once, not waited on for a writer. */
TEST(list_refuses_fifo_without_blocking)
{
	const char *fifo = tmp("fifo");
	CHECK(mkfifo(fifo, 0600) == 0);
	struct run *r = run("timeout 20 %s list %s", djp(), fifo);
	fprintf(stderr, "# djp list FIFO -> %d: %s", r->status, r->err);
	CHECK_EQ(r->status, 1);
	CHECK(strstr(r->err, "not a regular file"));
	r = run("timeout 20 %s -l 'process(\"%s\").mark(\"*\")'", djp(), fifo);
	fprintf(stderr, "# djp -l process(FIFO) -> %d: %s", r->status, r->err);
	CHECK(r->status != 124 && r->status != 0);
	CHECK_EQ(count_lines(r->err), 1);
	cleanup();
}

/* Names and formats come from files anyone can write: control bytes in them
 * are C-escaped, one line per marker still, nothing raw for a terminal. */
TEST(list_escapes_control_characters)
{
	const char *path = tmp("evil");
	off_t off;
	size_t size;
	char sec[65536], *name, *fmt;

	copy_example(path);
	markers_section(path, &off, &size);
	CHECK(size < sizeof(sec));
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, sec, size, off) == (ssize_t)size);
	close(fd);
	name = memmem(sec, size, "ex_types", 9);
	fmt = memmem(sec, size, "flag=%d", 7);
	CHECK(name && fmt);
	patch(path, off + (name - sec) + 2, "\n", 1);  /* "ex\ntypes" */
	patch(path, off + (fmt - sec) + 4, "\x1b", 1); /* "flag\x1b%d" */
	struct run *r = run("%s list %s", djp(), path);
	CHECK_EQ(r->status, 0);
	CHECK_EQ(count_lines(r->out), 9);
	CHECK(strchr(r->out, '\x1b') == NULL);
	CHECK(strstr(r->out, "ex\\ntypes "));
	CHECK(strstr(r->out, "\"flag\\x1b%d "));
	cleanup();
}

/* A library and a program replaced on disk while mapped, as a package
 * upgrade does (copy, then rename over): `djp list PID` reads what the
 * process maps, not what the path names now, and says "(deleted)" as the
 * kernel does.  Before, such mappings were skipped. */
static void replace(const char *from, const char *to)
{
	CHECK_EQ(run("cp %s %s.new", from, to)->status, 0);
	CHECK_EQ(run("mv %s.new %s", to, to)->status, 0);
}

static void check_listed_deleted(pid_t child, const char *file, const char *marker)
{
	char pid[16], want[PATH_MAX + 32];
	snprintf(pid, sizeof(pid), "%d", (int)child);
	struct run *r = run("%s list %s", djp(), pid);
	fprintf(stderr, "%s", r->err);
	CHECK_EQ(r->status, 0);
	snprintf(want, sizeof(want), "%s (deleted)", file);
	CHECK(strstr(r->out, want));
	CHECK(strstr(r->out, marker));
	CHECK(!strstr(r->out, "dltest_renamed"));
}

TEST(list_pid_reads_files_replaced_on_disk)
{
	int in[2], out[2];
	char ready[16] = "";
	const char *prog = strdup(tmp("example"));
	const char *lib = strdup(tmp("libplugin.so"));

	/* a program */
	copy_example(prog);
	int hold;
	pid_t child = start_waiting(prog, &hold);
	replace(djp_test_path("libdjp_dltest_renamed.so"), prog);
	check_listed_deleted(child, prog, "ex_sizes");
	close(hold);
	waitpid(child, NULL, 0);

	/* a library */
	replace(djp_test_path("libdjp_dltest.so"), lib);
	CHECK(pipe(in) == 0 && pipe(out) == 0);
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		char c;
		close(in[1]);
		close(out[0]);
		if (!dlopen(lib, RTLD_NOW) || write(out[1], "ready", 5) != 5)
			_exit(126);
		(void)!read(in[0], &c, 1);
		_exit(0);
	}
	close(in[0]);
	close(out[1]);
	CHECK(read(out[0], ready, sizeof(ready) - 1) > 0);
	replace(djp_test_path("libdjp_dltest_renamed.so"), lib);
	check_listed_deleted(child, lib, "dltest_hit");
	close(in[1]);
	waitpid(child, NULL, 0);
	cleanup();
}
