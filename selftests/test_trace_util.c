/* Helpers for the `djp trace` and agent tests (test_trace_util.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "kernel/agent/agent.h"
#include "test_trace_util.h"
#include "lib/agent_addr.h"

/* Not through djp_test_path's buffer, which a caller's argv may hold. */
static const char *copy_path(const char *rel)
{
	char *p = djp_test_path_dup(rel);
	CHECK(p);
	return p;
}

const char *tt_djp(void)
{
	static const char *p;
	return p ? p : (p = copy_path("../djp"));
}

const char *tt_lib(void)
{
	static const char *p;
	return p ? p : (p = copy_path("../libdjprobe.so"));
}

const char *tt_target(bool o0)
{
	static const char *p[2];
	return p[o0] ? p[o0] : (p[o0] = copy_path(o0 ? "trace_progs/trace_target-O0" : "trace_progs/trace_target"));
}

const char *tt_cxx(bool sdt_only)
{
	static const char *p[2];
	return p[sdt_only] ? p[sdt_only]
			   : (p[sdt_only] = copy_path(sdt_only ? "trace_progs/trace_cxx_sdt" : "trace_progs/trace_cxx"));
}

const char *tt_sdt_target(void)
{
	static const char *p;
	return p ? p : (p = copy_path("trace_progs/sdt_target"));
}

const char *tt_plugin(void)
{
	static const char *p;
	return p ? p : (p = copy_path("trace_progs/libtrace_plugin.so"));
}

struct tproc *tt_spawn(char *const argv[], bool preload, int uid)
{
	struct tproc *p = calloc(1, sizeof(*p));
	/* found before the fork: the first look fills the buffer of
	 * djp_test_path, where argv[0] may be */
	const char *lib = preload ? tt_lib() : NULL;
	int in[2], out[2], err[2];

	CHECK(p);
	CHECK(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0);
	p->pid = fork();
	CHECK(p->pid >= 0);
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (lib)
			setenv("LD_PRELOAD", lib, 1);
		else
			unsetenv("LD_PRELOAD");
		if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)uid) || setuid((uid_t)uid)))
			_exit(126);
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	p->in = in[1];
	p->out = out[0];
	p->err = err[0];
	fcntl(p->out, F_SETFL, O_NONBLOCK);
	fcntl(p->err, F_SETFL, O_NONBLOCK);
	return p;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Read what is there from both pipes, waiting up to ms; false at EOF of both. */
static bool pump(struct tproc *p, int ms)
{
	struct pollfd pf[2] = { { p->out, POLLIN, 0 }, { p->err, POLLIN, 0 } };
	int n = 0;
	if (p->out < 0 && p->err < 0)
		return false;
	poll(pf, 2, ms);
	for (int i = 0; i < 2; i++) {
		int *fd = i ? &p->err : &p->out;
		char *buf = i ? p->ebuf : p->obuf;
		size_t *len = i ? &p->elen : &p->olen, cap = i ? sizeof(p->ebuf) : sizeof(p->obuf);
		ssize_t got;
		if (*fd < 0)
			continue;
		while ((got = read(*fd, buf + *len, cap - 1 - *len)) > 0) {
			*len += (size_t)got;
			n++;
		}
		buf[*len] = 0;
		if (got == 0 || *len >= cap - 1) {
			close(*fd);
			*fd = -1;
		}
	}
	return true;
}

static bool wait_in(struct tproc *p, const char *buf, const char *needle, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;
	while (!strstr(buf, needle)) {
		if (now_ms() >= end || !pump(p, 20))
			return strstr(buf, needle) != NULL;
	}
	return true;
}

void tt_read_now(struct tproc *p)
{
	pump(p, 0);
}

bool tt_wait_out(struct tproc *p, const char *needle, int timeout_ms)
{
	return wait_in(p, p->obuf, needle, timeout_ms);
}

bool tt_wait_err(struct tproc *p, const char *needle, int timeout_ms)
{
	return wait_in(p, p->ebuf, needle, timeout_ms);
}

int tt_finish(struct tproc *p, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;
	int status;
	if (p->in >= 0) {
		close(p->in);
		p->in = -1;
	}
	for (;;) {
		pid_t r;
		pump(p, 10);
		r = waitpid(p->pid, &status, WNOHANG);
		if (r == p->pid) {
			while (pump(p, 10) && now_ms() < end)
				;
			return status;
		}
		if (now_ms() >= end) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, &status, 0);
			return -1;
		}
	}
}

void tt_end(struct tproc *p)
{
	int st;
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 10000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "target status %#x: %s / %s", st, p->obuf, p->ebuf);
	free(p);
}

void tt_kill(struct tproc *p)
{
	kill(p->pid, SIGKILL);
	tt_finish(p, 2000);
}

void tt_send(struct tproc *p, const char *line)
{
	size_t n = strlen(line);
	CHECK(write(p->in, line, n) == (ssize_t)n);
}

int tt_count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *s = hay; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

long tt_twinned(const struct tproc *p, const char *const *kinds, unsigned nkinds)
{
	char line[512], twin[520];
	const char *s = p->obuf;
	long seen = 0;

	while (*s) {
		const char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		snprintf(line, sizeof(line), "%.*s", (int)len, s);
		s += len + (e != NULL);
		for (unsigned k = 0; k < nkinds; k++) {
			if (strncmp(line, kinds[k], strlen(kinds[k])))
				continue;
			snprintf(twin, sizeof(twin), "S %s\n", line);
			if (tt_count(p->obuf, twin) != 1)
				djp_test_fail(__FILE__, __LINE__, "the program printed \"%s\", the script not once:\n%s\n%s",
					      line, p->obuf, p->ebuf);
			seen++;
		}
	}
	return seen;
}

struct tproc *tt_run_worker(const char *cmd, const char *const *opts, const char *script, bool stall, bool no_agg)
{
	char *argv[32];
	int n = 0, st;
	struct tproc *p;

	argv[n++] = (char *)tt_djp();
	for (; opts && *opts && n < 26; opts++)
		argv[n++] = (char *)*opts;
	argv[n++] = "-c";
	argv[n++] = (char *)cmd;
	argv[n++] = "-e";
	argv[n++] = (char *)script;
	argv[n] = NULL;
	if (no_agg)
		setenv("DJP_NO_AGG", "1", 1);
	p = tt_spawn(argv, false, -1);
	unsetenv("DJP_NO_AGG");
	CHECK(tt_wait_out(p, "ready ", 20000)); /* armed before its main */
	if (stall)
		kill(p->pid, SIGSTOP);
	tt_send(p, "go\n");
	CHECK(tt_wait_out(p, "\ndone\n", 120000));
	if (stall)
		kill(p->pid, SIGCONT);
	close(p->in); /* end of input: the target exits */
	p->in = -1;
	st = tt_finish(p, 120000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s / %s", st, p->obuf, p->ebuf);
	return p;
}

int tt_source_line(const char *source, const char *text)
{
	char path[256], buf[512];
	FILE *f;
	int at = 0, no = 0;

	snprintf(path, sizeof(path), "../../selftests/trace_progs/%s", source);
	CHECK((f = fopen(djp_test_path(path), "r")) != NULL);
	while (!no && fgets(buf, sizeof(buf), f)) {
		at++;
		if (strstr(buf, text))
			no = at;
	}
	fclose(f);
	CHECK(no > 0);
	return no;
}

char *tt_read_file(const char *path)
{
	FILE *f;
	char *buf;
	long n;

	CHECK((f = fopen(path, "r")) != NULL);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	CHECK((buf = calloc(1, (size_t)n + 1)) != NULL);
	CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	return buf;
}

char *tt_take_file(const char *path)
{
	char *buf = tt_read_file(path);
	unlink(path);
	return buf;
}

char *tt_script_output(const char *cmd, const char *text, int *main_pid)
{
	char out[128];
	struct tproc *p;
	int st;

	snprintf(out, sizeof(out), "/tmp/djp-script-%d.out", (int)getpid());
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-o", out, "-c", (char *)cmd, "-e", (char *)text, NULL }, false,
		     -1);
	st = tt_finish(p, 60000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp -e '%s': status %#x, stderr: %s", text, st, p->ebuf);
	if (main_pid && sscanf(p->obuf, "pid %d", main_pid) != 1)
		djp_test_fail(__FILE__, __LINE__, "the target printed no pid: %s", p->obuf);
	free(p);
	return tt_take_file(out);
}

void tt_bad_scripts(const struct tt_bad_script *bad, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "-e", (char *)bad[i].script, NULL }, false, -1);
		int st = tt_finish(p, 20000);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 1 || strncmp(p->ebuf, bad[i].error, strlen(bad[i].error)))
			djp_test_fail(__FILE__, __LINE__, "djp -e '%s': status %#x, stderr:\n%s\nnot:\n%s", bad[i].script, st,
				      p->ebuf, bad[i].error);
		free(p);
	}
}

int tt_lines(const char *s)
{
	int n = 0;
	for (const char *l = s; *l;) {
		const char *e = strchr(l, '\n');
		if ((e ? e : l + strlen(l)) > l)
			n++;
		if (!e)
			break;
		l = e + 1;
	}
	return n;
}

struct mapping {
	uint64_t start, end, off;
};

/* The mappings of `binary` (by inode path) in pid. */
static int maps_of(pid_t pid, const char *binary, struct mapping *v, int max)
{
	char path[64], line[PATH_MAX + 256], real[PATH_MAX];
	FILE *f;
	int n = 0;

	if (!realpath(binary, real))
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char *name = strchr(line, '/');
		if (!name || sscanf(line, "%llx-%llx %*s %llx", &s, &e, &off) != 3)
			continue;
		name[strcspn(name, "\n")] = 0;
		if (strcmp(name, real))
			continue;
		v[n++] = (struct mapping){ s, e, off };
	}
	fclose(f);
	return n;
}

/*
 * Where the sites are, from binutils rather than from the library under
 * test: a reader that misplaced sites would otherwise have "restored"
 * compare the wrong bytes, and pass.  Every marker has a .note.stapsdt
 * note (provider "djp": its 6-byte NOP), as every SDT probe has (a 1-byte
 * nop; a jump armed there covers 5).  `readelf -n` gives each note's
 * address, `readelf -l` the segments that turn it into a file offset, and
 * /proc/PID/maps the address that offset is mapped at.
 */
struct site {
	uint64_t off; /* in the file */
	unsigned len; /* bytes to compare */
	char name[260]; /* PROVIDER:NAME */
};

struct segment {
	uint64_t off, vaddr, filesz;
};

/* Run cmd; its output (a fresh string, NUL-terminated), or NULL. */
static char *command_output(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	size_t len = 0, cap = 1 << 16;
	char *out = malloc(cap);
	size_t got;
	CHECK(f && out);
	while ((got = fread(out + len, 1, cap - 1 - len, f)) > 0) {
		len += got;
		if (len == cap - 1) {
			cap *= 2;
			CHECK((out = realloc(out, cap)) != NULL);
		}
	}
	out[len] = 0;
	if (pclose(f)) {
		free(out);
		return NULL;
	}
	return out;
}

/* The LOAD segments of binary (readelf -lW). */
static int segments_of(const char *binary, struct segment *v, int max)
{
	char cmd[PATH_MAX + 64], *out, *l;
	int n = 0;
	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", binary);
	if (!(out = command_output(cmd)))
		return -1;
	for (l = out; (l = strstr(l, "  LOAD ")) && n < max; l++) {
		unsigned long long off, vaddr, filesz;
		if (sscanf(l, "  LOAD %llx %llx %*x %llx", &off, &vaddr, &filesz) == 3)
			v[n++] = (struct segment){ off, vaddr, filesz };
	}
	free(out);
	return n;
}

static int64_t file_offset(const struct segment *seg, int nseg, uint64_t vaddr)
{
	for (int i = 0; i < nseg; i++)
		if (vaddr >= seg[i].vaddr && vaddr < seg[i].vaddr + seg[i].filesz)
			return (int64_t)(vaddr - seg[i].vaddr + seg[i].off);
	return -1;
}

static int by_off(const void *a, const void *b)
{
	const struct site *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The SDT notes of binary (readelf -nW) as sites, sorted; how many, -1 on
 * error.  *v is malloc'd. */
static int sites_of(const char *binary, struct site **v)
{
	struct segment seg[16];
	char cmd[PATH_MAX + 64], *out, *l;
	int nseg = segments_of(binary, seg, 16), n = 0, cap = 64;

	*v = NULL;
	snprintf(cmd, sizeof(cmd), "readelf -nW '%s'", binary);
	if (nseg <= 0 || !(out = command_output(cmd)))
		return -1;
	CHECK((*v = malloc(sizeof(**v) * (size_t)cap)) != NULL);
	for (l = out; (l = strstr(l, "Provider: ")); l++) {
		char prov[128], name[128];
		unsigned long long loc;
		const char *nm = strstr(l, "Name: "), *at = strstr(l, "Location: ");
		int64_t off;
		if (!nm || !at || sscanf(l, "Provider: %127s", prov) != 1 || sscanf(nm, "Name: %127s", name) != 1 ||
		    sscanf(at, "Location: %llx", &loc) != 1 || (off = file_offset(seg, nseg, loc)) < 0) {
			free(out);
			return -1;
		}
		if (n == cap)
			CHECK((*v = realloc(*v, sizeof(**v) * (size_t)(cap *= 2))) != NULL);
		(*v)[n] = (struct site){ .off = (uint64_t)off, .len = strcmp(prov, "djp") ? 5 : 6 };
		snprintf((*v)[n].name, sizeof((*v)[n].name), "%s:%s", prov, name);
		n++;
	}
	free(out);
	qsort(*v, (size_t)n, sizeof(**v), by_off);
	/* two probes closer than that: each compares its own bytes only */
	for (int i = 0; i + 1 < n; i++)
		if ((*v)[i].off + (*v)[i].len > (*v)[i + 1].off)
			(*v)[i].len = (unsigned)((*v)[i + 1].off - (*v)[i].off);
	return n;
}

/* As tt_sites_changed; `say`: each changed site as a TAP comment. */
static int sites_changed(pid_t pid, const char *binary, int *nsites, bool say)
{
	struct mapping maps[512];
	struct site *sites;
	char mem[64];
	int nmaps, n, changed = 0, memfd, filefd;

	*nsites = 0;
	if ((n = sites_of(binary, &sites)) < 0)
		return -1;
	nmaps = maps_of(pid, binary, maps, 512);
	if (nmaps <= 0) {
		free(sites);
		return -1;
	}
	snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)pid);
	memfd = open(mem, O_RDONLY | O_CLOEXEC);
	filefd = open(binary, O_RDONLY | O_CLOEXEC);
	for (int i = 0; memfd >= 0 && filefd >= 0 && i < n; i++) {
		uint8_t live[16], file[16];
		unsigned len = sites[i].len;
		uint64_t a = 0;
		int k;
		for (k = 0; k < nmaps; k++) {
			uint64_t size = maps[k].end - maps[k].start;
			if (sites[i].off >= maps[k].off && sites[i].off + len <= maps[k].off + size) {
				a = maps[k].start + (sites[i].off - maps[k].off);
				break;
			}
		}
		if (k == nmaps || pread(memfd, live, len, (off_t)a) != (ssize_t)len ||
		    pread(filefd, file, len, (off_t)sites[i].off) != (ssize_t)len) {
			changed = -1;
			break;
		}
		(*nsites)++;
		changed += memcmp(live, file, len) != 0;
		if (say && memcmp(live, file, len)) {
			char hex[2][3 * sizeof(live) + 1];
			for (unsigned b = 0; b < len; b++) {
				snprintf(hex[0] + 3 * b, 4, " %02x", live[b]);
				snprintf(hex[1] + 3 * b, 4, " %02x", file[b]);
			}
			printf("# %s: %s at %#lx holds%s, the file%s\n", binary, sites[i].name, (unsigned long)a,
			       hex[0], hex[1]);
		}
	}
	if (memfd < 0 || filefd < 0)
		changed = -1;
	if (memfd >= 0)
		close(memfd);
	if (filefd >= 0)
		close(filefd);
	free(sites);
	return changed;
}

int tt_sites_changed(pid_t pid, const char *binary, int *nsites)
{
	return sites_changed(pid, binary, nsites, false);
}

/* Poll until the sites are all restored (armed 0) or at least `armed`
 * of them are armed. */
static bool wait_sites(pid_t pid, const char *binary, int timeout_ms, int armed)
{
	long long end = now_ms() + timeout_ms;
	int n, changed;
	for (;;) {
		changed = tt_sites_changed(pid, binary, &n);
		if (armed ? changed >= armed : changed == 0 && n > 0)
			return true;
		if (now_ms() >= end) {
			if (!armed) /* which, for the failure that follows */
				sites_changed(pid, binary, &n, true);
			return false;
		}
		usleep(5000);
	}
}

bool tt_wait_restored(pid_t pid, const char *binary, int timeout_ms)
{
	return wait_sites(pid, binary, timeout_ms, 0);
}

bool tt_wait_armed(pid_t pid, const char *binary, int timeout_ms)
{
	return wait_sites(pid, binary, timeout_ms, 1);
}

bool tt_wait_armed_n(pid_t pid, const char *binary, int n, int timeout_ms)
{
	return wait_sites(pid, binary, timeout_ms, n);
}

/* Listening, as the tool finds it (lib/agent_addr.c). */
static bool agent_listening(pid_t pid)
{
	struct sockaddr_un a;
	socklen_t len;
	return djp_agent_addr_find(pid, &a, &len) == 0;
}

bool tt_wait_agent(pid_t pid, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;
	while (!agent_listening(pid)) {
		if (now_ms() >= end)
			return false;
		usleep(5000);
	}
	return true;
}

bool tt_summary_row(const char *summary, const char *name, unsigned long long *events, unsigned long long *lost)
{
	char pat[128];
	const char *s;
	snprintf(pat, sizeof(pat), "  %s ", name);
	if (!(s = strstr(summary, pat)))
		return false;
	return sscanf(s + strlen(pat), "%llu %llu", events, lost) == 2;
}

/* Every "djp trace: process PID" block of the summary with a `name` row:
 * how many, and the sum of their event counts. */
int tt_summary_sum(const char *summary, const char *name, unsigned long long *total, int *zero_blocks)
{
	const char *p = summary;
	int n = 0;
	*total = 0;
	*zero_blocks = 0;
	while ((p = strstr(p, "djp trace: process "))) {
		const char *next = strstr(p + 1, "djp trace: process ");
		char block[4096];
		size_t len = next ? (size_t)(next - p) : strlen(p);
		unsigned long long ev, lost;
		snprintf(block, sizeof(block), "%.*s", (int)(len < sizeof(block) - 1 ? len : sizeof(block) - 1), p);
		if (tt_summary_row(block, name, &ev, &lost)) {
			*total += ev;
			n++;
		} else {
			(*zero_blocks)++;
		}
		p += len;
	}
	return n;
}

const char *tt_func_target(void)
{
	static const char *p;
	return p ? p : (p = copy_path("trace_progs/func_target"));
}

const char *tt_typed_target(bool mark)
{
	static const char *p[2];
	return p[mark] ? p[mark] : (p[mark] = copy_path(mark ? "trace_progs/typed_target_mark" : "trace_progs/typed_target"));
}

void tt_wait_func_target_sum(struct tproc *t, long n)
{
	char want[64];
	long sum = 0;
	for (long k = 0; k < n; k++) /* ft_work(k), and ft_other(k) for odd k */
		sum += k * 7 + 3 + (k % 2 ? k : 0);
	snprintf(want, sizeof(want), "sum %ld\n", sum);
	CHECK(tt_wait_out(t, want, 20000));
}

long tt_script_count_calls(struct tproc *t, const char *func, const char *opt, int armed, long n)
{
	char pid[32], script[256];
	struct tproc *d;
	long got = -1;
	int st;

	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	snprintf(script, sizeof(script),
		 "global n; probe process.function(\"%s\") { n++ } probe end { printf(\"n=%%d\\n\", n) }", func);
	d = tt_spawn(opt ? (char *const[]){ (char *)tt_djp(), "-x", pid, (char *)opt, "-e", script, NULL }
			 : (char *const[]){ (char *)tt_djp(), "-x", pid, "-e", script, NULL },
		     false, -1);
	tt_wait_byte(t->pid, tt_func_addr(t->pid, tt_func_target(), func), armed, 10000);
	tt_send(t, "go\n");
	tt_wait_func_target_sum(t, n);
	kill(d->pid, SIGINT);
	st = tt_finish(d, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (sscanf(d->obuf, "n=%ld\n", &got) != 1)
		printf("# the script printed \"%s\"\n", d->obuf);
	free(d);
	return got;
}

/* The address file offset `off` of binary is mapped at in pid, or 0. */
static uintptr_t runtime_addr(pid_t pid, const char *binary, uint64_t off)
{
	struct mapping maps[32];
	int n = maps_of(pid, binary, maps, 32);
	for (int k = 0; k < n; k++)
		if (off >= maps[k].off && off < maps[k].off + (maps[k].end - maps[k].start))
			return (uintptr_t)(maps[k].start + (off - maps[k].off));
	return 0;
}

/* From nm's symbol tables (the static one, else the dynamic one), not
 * from the library's reader: a reader that misplaced functions would
 * have the tests look at the wrong byte. */
uintptr_t tt_func_addr(pid_t pid, const char *binary, const char *func)
{
	static const char *const opts[] = { "", "-D" };
	struct segment seg[16];
	char real[PATH_MAX], cmd[PATH_MAX + 64], *out;
	int64_t off = -1;
	int nseg;

	CHECK(realpath(binary, real) != NULL);
	CHECK((nseg = segments_of(real, seg, 16)) > 0);
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]) && off < 0; i++) {
		snprintf(cmd, sizeof(cmd), "nm %s --defined-only '%s' 2>/dev/null", opts[i], real);
		if (!(out = command_output(cmd)))
			continue;
		for (char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			unsigned long long a;
			char type, name[512];
			if (sscanf(l, "%llx %c %511s", &a, &type, name) == 3 && strchr("tTwWi", type) &&
			    !strcmp(name, func)) {
				off = file_offset(seg, nseg, a);
				break;
			}
		}
		free(out);
	}
	if (off < 0)
		djp_test_fail(__FILE__, __LINE__, "nm finds no function %s in %s", func, real);
	return runtime_addr(pid, real, (uint64_t)off) ?: (djp_test_fail(__FILE__, __LINE__, "%s is not mapped in %d",
									   real, (int)pid), 0);
}

/* name: a marker or PROVIDER:NAME; looked for in every file pid maps
 * (readelf's notes, as sites_changed). */
uintptr_t tt_site_addr(pid_t pid, const char *name)
{
	char path[64], line[PATH_MAX + 256], done[64][PATH_MAX];
	int ndone = 0;
	uintptr_t a = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	CHECK((f = fopen(path, "r")) != NULL);
	while (!a && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');
		struct site *v;
		int n, seen = 0;
		if (!file)
			continue;
		file[strcspn(file, "\n")] = 0;
		for (int i = 0; i < ndone; i++)
			seen |= !strcmp(done[i], file);
		if (seen || ndone == 64)
			continue;
		snprintf(done[ndone++], PATH_MAX, "%s", file);
		if ((n = sites_of(file, &v)) <= 0)
			continue;
		for (int i = 0; i < n && !a; i++) {
			const char *colon = strchr(v[i].name, ':');
			if (!strcmp(v[i].name, name) || (!strchr(name, ':') && !strcmp(colon + 1, name)))
				a = runtime_addr(pid, file, v[i].off);
		}
		free(v);
	}
	fclose(f);
	if (!a)
		djp_test_fail(__FILE__, __LINE__, "readelf finds no site %s in what process %d maps", name, (int)pid);
	return a;
}

int tt_byte_at(pid_t pid, uintptr_t addr)
{
	char path[64];
	uint8_t b;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, &b, 1, (off_t)addr), 1);
	close(fd);
	return b;
}

void tt_wait_byte(pid_t pid, uintptr_t addr, int want, int timeout_ms)
{
	for (int i = 0; i < timeout_ms / 10 && tt_byte_at(pid, addr) != want; i++)
		usleep(10000);
	CHECK_EQ(tt_byte_at(pid, addr), want);
}

void tt_pg_initdb(char *dir)
{
	char cmd[4200];
	struct passwd *pw = getpwnam("postgres");
	int st;

	if (geteuid() != 0)
		djp_test_fail(__FILE__, __LINE__, "needs root, to start the server as the postgres user");
	if (access(TT_PGBIN "/postgres", X_OK) || !pw)
		djp_test_fail(__FILE__, __LINE__, "PostgreSQL 15 is not installed (make check installs it)");
	CHECK(mkdtemp(dir) != NULL);
	CHECK(chown(dir, pw->pw_uid, pw->pw_gid) == 0);
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- " TT_PGBIN "/initdb -D %s >/dev/null 2>&1", dir);
	st = system(cmd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
