/*
 * Helpers for the `djp trace` and agent tests: start processes with pipes,
 * read their output with timeouts, and compare a live process's marker
 * sites with its file (test_trace_util.c).
 */
#ifndef DJP_SELFTEST_TRACE_UTIL_H
#define DJP_SELFTEST_TRACE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct tproc {
	pid_t pid;
	int in, out, err; /* our ends of its stdin, stdout, stderr (-1: none) */
	char obuf[1 << 20], ebuf[1 << 20]; /* a summary of every function of python3.11 with its DWARF: 400 KB */
	size_t olen, elen;
};

/* Paths built next to the selftest binary (copied: djp_test_path reuses
 * its buffer). */
const char *tt_djp(void);
const char *tt_lib(void);
const char *tt_target(bool o0);
const char *tt_plugin(void);
/* trace_progs/trace_cxx.cc: libstdc++'s SDT probes; sdt_only: no marker
 * of its own */
const char *tt_cxx(bool sdt_only);
/* trace_progs/sdt_target.c: one plain SDT probe with string arguments */
const char *tt_sdt_target(void);
/* trace_progs/func_target.c: no marker, nothing of djprobe (instruction
 * probes) */
const char *tt_func_target(void);
/* trace_progs/typed_target.c: signed, unsigned and pointer parameters and
 * return values, SDT probes without a format; mark: its build with a
 * marker holding a long %s instead */
const char *tt_typed_target(bool mark);
/* Wait for func_target's "sum N" after n calls (the sum it must print);
 * fails the test when it does not come within 20 s. */
void tt_wait_func_target_sum(struct tproc *t, long n);
/* A script counting the calls of `func` in func_target t (`djp -x PID
 * [opt] -e ...`, opt NULL for none), once func's first byte is `armed`:
 * t makes its n calls, the script is stopped at once by SIGINT, and the
 * count its end probe printed is returned (-1: it printed none). */
long tt_script_count_calls(struct tproc *t, const char *func, const char *opt, int armed, long n);

/* Start argv; preload: with libdjprobe.so in LD_PRELOAD; uid >= 0: as that
 * user.  stdin/stdout/stderr are pipes.  Exits the test on failure. */
struct tproc *tt_spawn(char *const argv[], bool preload, int uid);
/* Read stdout (or stderr) until `needle` shows up; false on timeout/EOF. */
bool tt_wait_out(struct tproc *p, const char *needle, int timeout_ms);
bool tt_wait_err(struct tproc *p, const char *needle, int timeout_ms);
/* Read what its stdout and stderr hold now, waiting for nothing. */
void tt_read_now(struct tproc *p);
/* Read both to end of file and reap; returns the wait status, or -1 when
 * it did not exit within timeout_ms (it is then killed). */
int tt_finish(struct tproc *p, int timeout_ms);
void tt_kill(struct tproc *p);
/* End the input of p (a target reading commands): it must exit 0; p freed. */
void tt_end(struct tproc *p);
void tt_send(struct tproc *p, const char *line);
int tt_count(const char *hay, const char *needle);
/* A target that prints what it passes and a script that prints "S " and
 * the same line from what it read: every line of p's stdout that starts
 * with one of kinds has its twin once (else the test fails, showing
 * both); how many such lines there were. */
long tt_twinned(const struct tproc *p, const char *const *kinds, unsigned nkinds);
/* djp OPTS... -c CMD -e SCRIPT, CMD a target that prints "ready PID",
 * works at a line "go" and prints "done" when finished (agg_target,
 * aggcall_target); the tool stopped (SIGSTOP) while the target works
 * when `stall`, so that its rings fill whatever the machine's load;
 * DJP_NO_AGG=1 in its environment when no_agg.  Returns the finished
 * process (stdout: the target's lines and the script's), which must have
 * exited 0. */
struct tproc *tt_run_worker(const char *cmd, const char *const *opts, const char *script, bool stall, bool no_agg);
/* The first line of selftests/trace_progs/SOURCE that holds `text`; fails
 * the test when none does. */
int tt_source_line(const char *source, const char *text);
/* Lines of s (stderr) that are not empty. */
int tt_lines(const char *s);
/* The text of file path (malloc'd, NUL-terminated); fails the test when
 * it cannot be read. */
char *tt_read_file(const char *path);
/* The same, and the file is then removed. */
char *tt_take_file(const char *path);
/* djp -o FILE -c CMD -e TEXT, which must exit 0: what the script printed
 * (malloc'd); with main_pid, the target's "pid N" line's N there. */
char *tt_script_output(const char *cmd, const char *text, int *main_pid);
/* Each of n scripts run as djp -e SCRIPT: status 1 and stderr beginning
 * with its error. */
struct tt_bad_script {
	const char *script, *error;
};
void tt_bad_scripts(const struct tt_bad_script *bad, size_t n);

/* Marker sites (SDT probes included) of `binary` in process pid: how many
 * differ from the file's bytes (-1 on error); *nsites gets how many there
 * are. */
int tt_sites_changed(pid_t pid, const char *binary, int *nsites);
/* Wait up to timeout_ms for every site to match the file again. */
bool tt_wait_restored(pid_t pid, const char *binary, int timeout_ms);
/* Wait up to timeout_ms for some site of `binary` to be armed.  Tests wait
 * for the state they need, never for a time that a loaded machine may
 * overrun. */
bool tt_wait_armed(pid_t pid, const char *binary, int timeout_ms);
/* The same until at least n sites of binary are armed: the tool connects
 * its patterns one at a time, each a batch of its own. */
bool tt_wait_armed_n(pid_t pid, const char *binary, int n, int timeout_ms);
/* Wait up to timeout_ms for pid's agent to listen on its socket. */
bool tt_wait_agent(pid_t pid, int timeout_ms);

/* Addresses and bytes in a running process, for tests that check what is
 * armed: the runtime address of function `func` of `binary` in process pid
 * (its symbols and /proc/PID/maps), of the site `name` (a marker or
 * PROVIDER:NAME, from `djp list PID`), and the byte at addr
 * (/proc/PID/mem).  Each fails the test when it cannot answer. */
uintptr_t tt_func_addr(pid_t pid, const char *binary, const char *func);
uintptr_t tt_site_addr(pid_t pid, const char *name);
int tt_byte_at(pid_t pid, uintptr_t addr);
/* Wait up to timeout_ms for that byte to be `want` (the tool arms and
 * disarms as it connects and leaves); fails the test if it never is. */
void tt_wait_byte(pid_t pid, uintptr_t addr, int want, int timeout_ms);

/* Parse "  NAME   EVENTS   LOST" from a summary; false when absent. */
bool tt_summary_row(const char *summary, const char *name, unsigned long long *events, unsigned long long *lost);
/* Over every process block of the summary (children of fork): how many
 * have a `name` row, their events summed in *total; *zero_blocks gets how
 * many blocks have none. */
int tt_summary_sum(const char *summary, const char *name, unsigned long long *total, int *zero_blocks);

/* PostgreSQL 15's programs, and a cluster of its own: a new directory
 * from the template in dir ("/tmp/...-XXXXXX"), owned by postgres and
 * initialised.  Fails the test without root or the postgresql-15 package
 * (make check installs it). */
#define TT_PGBIN "/usr/lib/postgresql/15/bin"
void tt_pg_initdb(char *dir);

#endif
