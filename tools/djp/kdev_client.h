/*
 * The tool's side of /dev/djprobe (kdev_client.c): the markers of loaded
 * modules, probes on them, and the rings their events come through.
 * Shared by `djp list -k`, `djp trace -k` and the kernel source of probe
 * scripts (source/kernel.c).
 */
#ifndef DJP_TOOLS_KDEV_CLIENT_H
#define DJP_TOOLS_KDEV_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <djprobe/kdev.h>

#include "lib/format.h"
#include "lib/ring.h"

/* One marker of a loaded module, as the device lists it. */
struct kfunc_sig;

struct kmarker {
	struct djp_kdev_marker m;
	char full[128];	     /* "MODULE:NAME", how events print it */
	struct djp_fmt fmt;  /* m.format parsed; nfields 0 when it does not */
	void *user;	     /* the reader's own (its descriptor), kept by a new listing */
	/* a function point's parameters from the kernel's DWARF (NULL: none
	 * found; its fields are arg1..arg6): what its values are cut and
	 * extended to (kfunc_dwarf.h), the return's when ret */
	const struct kfunc_sig *sig;
	bool ret;
};

/* One event of a drain, with what the kernel recorded besides. */
struct kevent {
	const struct djp_event *ev;  /* valid during the callback */
	const struct kmarker *marker; /* NULL when nobody can name it */
	uint64_t ns;		      /* CLOCK_MONOTONIC */
	int32_t pid, tid;	      /* 0: in interrupt context */
	int cpu;
};

struct kdev {
	int fd;
	struct djp_kdev_info info;
	struct djp_consumer *cons;
	struct kmarker *v; /* sorted by (uint32_t)site, the events' marker id */
	size_t n;
	bool relisted;	   /* this drain listed again for an unknown id */
};

/* Open the device, map its rings and list the markers.  0, or -errno with
 * one line in err: djprobe.ko not loaded, not root, ... */
int kdev_open(struct kdev *k, char *err, size_t errsz);
void kdev_close(struct kdev *k);
/* List again (modules come and go). */
int kdev_list(struct kdev *k, char *err, size_t errsz);
/* Argument i of an event of m as its parameter's type says (a function
 * point's narrow parameter cut and extended), or raw as recorded. */
int64_t kdev_arg_value(const struct kmarker *m, unsigned i, uint64_t raw);
/* The recorder on a pattern ("NAMEGLOB" or "MODGLOB:NAMEGLOB"); flags
 * DJP_FORCE_*.  The probe id, or -errno with one line in err. */
int kdev_connect(struct kdev *k, const char *pattern, unsigned flags, char *err, size_t errsz);
int kdev_disconnect(struct kdev *k, int id);
/* Every event not delivered yet, CPU by CPU; tells the device how far it
 * read.  Returns the number of events, or -errno.  fn returns nonzero to
 * stop after that event. */
long kdev_drain(struct kdev *k, int (*fn)(void *arg, const struct kevent *e), void *arg);
/* Wait until an event is there or timeout_ms pass (poll). */
void kdev_wait(struct kdev *k, int timeout_ms);
/* Events the kernel dropped: rings full, hits inside hits. */
uint64_t kdev_lost(const struct kdev *k);
const struct kmarker *kdev_marker_of(struct kdev *k, uint32_t id);
/* Does marker m match pattern ("NAMEGLOB" or "MODGLOB:NAMEGLOB", fnmatch)? */
bool kdev_matches(const struct kmarker *m, const char *pattern);

#endif
