/*
 * Markers of a library the target loads after tracing began, read after the
 * target is gone: the tool must still name and format them (text, JSON,
 * the summary) and a script must see them.
 *
 * The race is made certain: the tool is stopped (SIGSTOP) from the moment
 * the target has loaded the plugin and fired its marker until the target
 * has exited, so the tool drains those events with nobody left to ask.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

static bool exited(pid_t pid)
{
	char path[64], buf[256];
	FILE *f;
	char *p;
	bool gone = true;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return true;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		gone = p[2] == 'Z' || p[2] == 'X';
	fclose(f);
	return gone;
}

/* Run djp with argv; the target loads the plugin, fires 3, and exits while
 * the tool is stopped.  Returns the finished tool. */
static struct tproc *late_plugin(char *const argv[])
{
	struct tproc *p = tt_spawn(argv, false, -1);
	char line[4200];
	const char *r;
	pid_t target;
	int st;

	CHECK(tt_wait_out(p, "ready ", 10000));
	r = strstr(p->obuf, "ready ");
	target = (pid_t)atoi(r + 6);
	CHECK(target > 0);
	snprintf(line, sizeof(line), "dlopen %s 3\n", tt_plugin());
	tt_send(p, line);
	CHECK(tt_wait_out(p, "dlopen ok", 10000));
	CHECK(kill(p->pid, SIGSTOP) == 0);
	close(p->in); /* end of input: the target exits */
	p->in = -1;
	for (int i = 0; i < 1000 && !exited(target); i++)
		usleep(10000);
	CHECK(exited(target));
	CHECK(kill(p->pid, SIGCONT) == 0);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	return p;
}

static char *target_cmd(void)
{
	static char cmd[4200];
	snprintf(cmd, sizeof(cmd), "%s --ticks 1 --tick-us 1000", tt_target(false));
	return cmd;
}

TEST_TIMEOUT(trace_names_markers_of_a_library_loaded_later_after_exit, 60)
{
	struct tproc *p = late_plugin((char *const[]){ (char *)tt_djp(), "trace", "-c", target_cmd(), "t?_*", NULL });
	unsigned long long ev, lost;

	CHECK_EQ(tt_count(p->obuf, " tp_plugin n="), 3);
	CHECK(strstr(p->obuf, " tp_plugin n=2\n"));
	CHECK(!strstr(p->obuf, "marker#"));
	CHECK(tt_summary_row(p->ebuf, "tp_plugin", &ev, &lost));
	CHECK_EQ(ev, 3);
	free(p);
}

TEST_TIMEOUT(trace_json_names_markers_of_a_library_loaded_later_after_exit, 60)
{
	struct tproc *p =
		late_plugin((char *const[]){ (char *)tt_djp(), "trace", "--json", "-c", target_cmd(), "t?_*", NULL });

	CHECK_EQ(tt_count(p->obuf, "\"name\":\"tp_plugin\",\"args\":{\"n\":"), 3);
	CHECK(strstr(p->obuf, "\"name\":\"tp_plugin\",\"args\":{\"n\":2}"));
	CHECK(!strstr(p->obuf, "marker#"));
	free(p);
}

TEST_TIMEOUT(script_sees_markers_of_a_library_loaded_later, 60)
{
	struct tproc *p = late_plugin((char *const[]){
		(char *)tt_djp(), "-c", target_cmd(), "-e",
		"global n; probe process.mark(\"t[tp]_[mpt]*\") { printf(\"ev %s %d\\n\", $$name, $arg1); n[$$name]++ }"
		" probe end { printf(\"tp_plugin seen %d\\n\", n[\"tp_plugin\"]) }",
		NULL });

	CHECK(strstr(p->obuf, "ev tp_plugin 0\n"));
	CHECK(strstr(p->obuf, "ev tp_plugin 2\n"));
	CHECK(strstr(p->obuf, "tp_plugin seen 3\n"));
	CHECK(strstr(p->obuf, "ev tt_main "));
	free(p);
}

/* A probe point that names only the plugin's marker, which is not loaded
 * when the script starts: '?' lets it start, and the marker is bound when
 * the library comes. */
TEST_TIMEOUT(script_optional_point_binds_a_library_loaded_later, 60)
{
	struct tproc *p = late_plugin((char *const[]){
		(char *)tt_djp(), "-c", target_cmd(), "-e",
		"probe process.mark(\"tt_main\"), process.mark(\"tp_plugin\")? { printf(\"ev %s %d\\n\", $$name, $arg1) }",
		NULL });

	CHECK(strstr(p->obuf, "ev tt_main 5\n"));
	CHECK(strstr(p->obuf, "ev tp_plugin 2\n"));
	free(p);
}

/*
 * A backtrace at the plugin's marker, in a process that loaded the plugin
 * and exited while the tool was stopped: the tool reads the event with the
 * process gone, and its first frame, in the plugin, is still named, from
 * the agent's marker log (the plugin's file and its marker's run-time
 * address, written while the process lived).  Unlike late_plugin, the
 * tool is stopped before the plugin is loaded, so it never saw the
 * plugin's mapping in the process; the marker fires once the agent has
 * armed it.
 */
TEST_TIMEOUT(script_ubacktrace_in_a_library_loaded_by_a_process_gone_since, 60)
{
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", target_cmd(), "-e",
						    "global n; probe process.mark(\"tp_plugin\")? { if (!n++) {"
						    " printf(\"PLUGIN\\n\"); print_ubacktrace(); printf(\"END\\n\") } }",
						    NULL },
				   false, -1);
	char line[4200], frame[4400];
	const char *r;
	pid_t target;
	int st;

	CHECK(tt_wait_out(p, "ready ", 10000));
	r = strstr(p->obuf, "ready ");
	target = (pid_t)atoi(r + 6);
	CHECK(target > 0);
	CHECK(kill(p->pid, SIGSTOP) == 0);
	snprintf(line, sizeof(line), "dlopen %s 0\n", tt_plugin());
	tt_send(p, line);
	CHECK(tt_wait_out(p, "dlopen ok", 10000)); /* the target writes it, not the tool */
	/* the agent arms the plugin on its own (the tool is stopped) */
	CHECK(tt_wait_armed(target, tt_plugin(), 10000));
	tt_send(p, "fire 3\n");
	CHECK(tt_wait_out(p, "fired 3", 10000));
	close(p->in); /* end of input: the target exits */
	p->in = -1;
	for (int i = 0; i < 1000 && !exited(target); i++)
		usleep(10000);
	CHECK(exited(target));
	CHECK(kill(p->pid, SIGCONT) == 0);
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp: status %#x: %s / %s", st, p->obuf, p->ebuf);
	CHECK((r = strstr(p->obuf, "PLUGIN\n")) != NULL);
	r += strlen("PLUGIN\n");
	snprintf(frame, sizeof(frame), " : plugin_fire+0x");
	if (strncmp(r, " 0x", 3) || !strstr(r, frame) || strstr(r, frame) > strchr(r, '\n') ||
	    !strstr(r, tt_plugin()) || strstr(r, tt_plugin()) > strchr(r, '\n'))
		djp_test_fail(__FILE__, __LINE__, "the plugin's frame is not named: %.*s", (int)strcspn(r, "E"), r);
	free(p);
}

/* The line after the line `tag` in out, or NULL. */
static const char *line_after(const char *out, const char *tag, int skip)
{
	const char *l = strstr(out, tag);
	for (int i = 0; l && i <= skip; i++)
		l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL;
	return l;
}

/* Line l names function fn in object obj (" 0x... : fn+0x.../0x... [obj]"). */
static bool frame_is(const char *l, const char *fn, const char *obj)
{
	char want[4400];
	size_t len = l ? strcspn(l, "\n") : 0;
	snprintf(want, sizeof(want), " : %s+0x", fn);
	return l && memmem(l, len, want, strlen(want)) && memmem(l, len, obj, strlen(obj));
}

/*
 * A backtrace through two libraries that were unloaded before the tool
 * read the event: usym_target loads the caller library, the tool attaches
 * (-x) and reads the process's mappings, then, with the tool stopped, the
 * target loads the plugin, fires its marker through the caller library
 * and unloads both.  The tool, let go, reads the mappings again (a marker
 * it had not seen) and finds neither: the caller's frame is named from
 * the mappings read before, which a later read adds to and does not
 * replace, and the plugin's from the marker log.
 */
TEST_TIMEOUT(script_ubacktrace_in_libraries_unloaded_since, 60)
{
	char caller[4096], plugin[4096], target[4096], spid[16];
	struct tproc *t, *p;
	const char *l;
	int st;

	CHECK(realpath(djp_test_path("trace_progs/libusym_caller.so"), caller) != NULL);
	CHECK(realpath(tt_plugin(), plugin) != NULL);
	CHECK(realpath(djp_test_path("trace_progs/usym_target"), target) != NULL);
	t = tt_spawn((char *const[]){ target, caller, plugin, NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready ", 10000));
	tt_send(t, "caller\n");
	CHECK(tt_wait_out(t, "caller loaded", 10000));
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-x", spid, "-e",
				      "probe process.mark(\"tp_plugin\")? {"
				      " printf(\"PLUGIN\\n\"); print_ubacktrace(); printf(\"END\\n\") }"
				      " probe process.mark(\"caller_ping\") { }",
				      NULL },
		     false, -1);
	/* The points are connected in the script's order, after the tool
	 * read the mappings: caller_ping armed, the plugin's point is kept
	 * for the plugin. */
	CHECK(tt_wait_armed(t->pid, caller, 20000));
	CHECK(kill(p->pid, SIGSTOP) == 0);
	tt_send(t, "plugin\n");
	CHECK(tt_wait_out(t, "plugin loaded", 10000));
	CHECK(tt_wait_armed(t->pid, plugin, 10000)); /* by the agent alone */
	tt_send(t, "call 1\n");
	CHECK(tt_wait_out(t, "called 1", 10000));
	tt_send(t, "unload\n");
	CHECK(tt_wait_out(t, "unloaded", 10000));
	CHECK(kill(p->pid, SIGCONT) == 0);
	CHECK(tt_wait_out(p, "END\n", 20000));
	tt_end(t);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st));
	l = line_after(p->obuf, "PLUGIN\n", 0);
	if (!frame_is(l, "plugin_fire", plugin) || !frame_is(line_after(p->obuf, "PLUGIN\n", 1), "caller_call", caller))
		djp_test_fail(__FILE__, __LINE__, "the frames in the unloaded libraries are not named: %s",
			      line_after(p->obuf, "PLUGIN\n", -1));
	free(p);
}
