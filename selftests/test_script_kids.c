/*
 * A script's events while children of fork come and go: each event of
 * the parent and of every child exactly once (trace_progs/
 * fork_mark_target.c).  The parent records all along, so that its
 * session has events waiting each time the tool lets a child's session
 * go: that moment once handed the parent's last batch out a second time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

#define CHILDREN 20
#define MAX_BUSY (1 << 20)

TEST_TIMEOUT(script_events_once_while_children_come_and_go, 120)
{
	static unsigned char busy_seen[MAX_BUSY];
	bool child_seen[CHILDREN] = { false };
	char cmd[4096], out[128], *buf, *save = NULL;
	long busy = -1, busy_lines = 0, child_lines = 0;
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %d", djp_test_path("trace_progs/fork_mark_target"), CHILDREN);
	snprintf(out, sizeof(out), "/tmp/djp-kids-%d.out", (int)getpid());
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-o", out, "-c", cmd, "-e",
				      "probe process.mark(\"fm_busy\") { printf(\"busy %d\\n\", $i) }\n"
				      "probe process.mark(\"fm_child\") { printf(\"child %d\\n\", $i) }\n",
				      NULL },
		     false, -1);
	st = tt_finish(p, 100000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || sscanf(p->obuf, "busy %ld", &busy) != 1 || busy < 0 ||
	    busy >= MAX_BUSY)
		djp_test_fail(__FILE__, __LINE__, "djp: status %#x: %s / %s", st, p->obuf, p->ebuf);
	/* nothing lost: then every event must be there, once */
	if (strstr(p->ebuf, "lost"))
		djp_test_fail(__FILE__, __LINE__, "events lost: %s", p->ebuf);
	free(p);
	buf = tt_take_file(out);
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		long i;
		if (sscanf(l, "busy %ld", &i) == 1) {
			if (i < 0 || i >= busy || busy_seen[i]++)
				djp_test_fail(__FILE__, __LINE__, "fm_busy i=%ld of %ld seen twice or out of range", i,
					      busy);
			busy_lines++;
		} else if (sscanf(l, "child %ld", &i) == 1) {
			if (i < 0 || i >= CHILDREN || child_seen[i])
				djp_test_fail(__FILE__, __LINE__, "fm_child i=%ld seen twice or out of range", i);
			child_seen[i] = true;
			child_lines++;
		} else {
			djp_test_fail(__FILE__, __LINE__, "an unexpected line: %s", l);
		}
	}
	CHECK_EQ(busy_lines, busy);
	CHECK_EQ(child_lines, CHILDREN);
	free(buf);
}
