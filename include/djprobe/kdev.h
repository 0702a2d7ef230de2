/*
 * <djprobe/kdev.h>: /dev/djprobe, the device of djprobe.ko that serves the
 * djp tool (kmod/djprobe_dev.c; docs/KERNEL.md, "Tracing kernel markers").
 *
 * Shared by the module and the tool: ioctl numbers, their structs, and the
 * layout of the rings the tool maps.  Root only (CAP_SYS_ADMIN at open).
 *
 * Each open file has its own rings, one per possible CPU, in one region the
 * tool maps read-only with mmap(fd, offset 0, info.region_size).  The
 * region has the layout of the user-space rings (lib/ring.h): a 4096-byte
 * header (struct djp_kregion_hdr), then per CPU a slot header (struct
 * djp_kslot_hdr, padded to slot_hdr_size) and ring_size bytes of events,
 * each event
 *
 *   u64 timestamp   CLOCK_MONOTONIC ns (ktime_get_mono_fast_ns)
 *   u32 marker_id   the low 32 bits of the site's address (module text
 *                   lies in one 2 GiB window: they name the site)
 *   u16 size, u8 nargs, u8 flags (DJP_KEVF_TASK | DJP_KEVF_CPU, and
 *                   DJP_KEVF_STRINGS when there are strings)
 *   u64 args[nargs]
 *   strings         for a %s argument (DJP_KEVF_STRINGS): its word is a
 *                   string descriptor, and the pointer (u64) then the text
 *                   copied from kernel memory (at most DJP_KRING_STR_BOUND
 *                   bytes with the NUL, NUL-terminated, 8-aligned) follow
 *                   the arguments, as lib/ring.h lays them out
 *   u64 task        tgid << 32 | pid of current, 0 in interrupt context
 *   u64 cpu
 *
 * never crossing a sub-buffer, with a pad header (DJP_KEVF_PAD) where one
 * does not fit.  The kernel never reads the mapping back: its positions are
 * its own, and the tool tells it how far it has read with
 * DJP_KIOC_CONSUMED.  A full ring drops the event and counts it (the slot's
 * lost_full); a hit inside a hit on the same CPU (an interrupt) is dropped
 * and counted in lost_nested.
 */
#ifndef DJPROBE_KDEV_H
#define DJPROBE_KDEV_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define DJP_KDEV_NAME "djprobe"
#define DJP_KDEV_PATH "/dev/djprobe"

/* The region header's magic and version: lib/ring.h's DJP_RING_MAGIC and
 * DJP_RING_VERSION (the tool checks they agree). */
#define DJP_KRING_MAGIC 0x31474e4952504a44ull
#define DJP_KRING_VERSION 2u
#define DJP_KRING_HDR_SIZE 4096u
#define DJP_KRING_MAX_ARGS 12
#define DJP_KRING_STR_BOUND 64
#define DJP_KEVF_PAD 0x01
#define DJP_KEVF_STRINGS 0x02
#define DJP_KEVF_CPU 0x04
#define DJP_KEVF_TASK 0x10
#define DJP_KMARKER_PAD 0xffffffffu
/* A string descriptor: offset of the pointer word in the event (bits
 * 0-15), length without the NUL (16-31), and these. */
#define DJP_KSTR_TRUNCATED (1ull << 32)
#define DJP_KSTR_FAULT (1ull << 33) /* unreadable: the text is "<bad>" */
#define DJP_KSTR_NULL (1ull << 34)  /* the text is "(null)" */
#define DJP_KSTR_ADDR (1ull << 35)  /* always: the pointer precedes the text */
#define DJP_KSLOT_ACTIVE 1u

/* lib/clock.h's struct djp_clock_params */
struct djp_kclock {
	__u32 kind; /* 1: CLOCK_MONOTONIC ns */
	__u32 shift;
	__u64 mult;
	__u64 raw_base;
	__u64 ns_base;
	__u64 raw_hz;
	__u64 reserved;
};

/* lib/ring.h's struct djp_region_hdr */
struct djp_kregion_hdr {
	__u64 magic;
	__u32 version;
	__u32 hdr_size;
	__u32 slot_hdr_size;
	__u32 nslots;
	__u64 ring_size;
	__u64 subbuf_size;
	__u32 nsubbufs;
	__u32 mode; /* 0: discard */
	__u64 slot_stride;
	__u64 slots_offset;
	__u64 total_size;
	__u32 str_bound;
	__u32 producer_pid;
	struct djp_kclock clock;
	__u64 lost_noslot __attribute__((aligned(128)));
	__u32 slots_used;
} __attribute__((aligned(128)));

struct djp_ksubbuf_rec {
	__u64 seq;
	__u64 count;
};

/* lib/ring.h's struct djp_slot_hdr */
struct djp_kslot_hdr {
	__u64 owner __attribute__((aligned(128))); /* cpu << 32 | DJP_KSLOT_ACTIVE */
	__u64 generation;
	__u64 head __attribute__((aligned(128)));
	__u64 nevents;
	__u64 lost_full;
	__u64 lost_nested;
	__u64 tail_cache;
	__u64 tail __attribute__((aligned(128))); /* not used: DJP_KIOC_CONSUMED */
	struct djp_ksubbuf_rec sb[] __attribute__((aligned(128)));
};

/* DJP_KIOC_INFO: the rings' geometry. */
struct djp_kdev_info {
	__u32 nslots;	   /* one per possible CPU */
	__u32 nsubbufs;
	__u64 ring_size;   /* bytes of events per CPU */
	__u64 region_size; /* what to mmap */
};

/* One marker of a loaded module (DJP_KIOC_LIST).  Strings are cut to their
 * field, NUL-terminated. */
struct djp_kdev_marker {
	__u64 site;	/* the site's address */
	__u32 nargs;
	__u32 probes;	/* probes connected to it now, every file's */
	char module[56];
	char how[8];	/* "off", "jump", "int3", "kprobe" */
	char name[64];
	char format[128];
	char args[160];
};

/* DJP_KIOC_LIST: up to cap markers into the array at buf; count is set to
 * how many there are (more than cap: call again with a larger array). */
struct djp_kdev_list {
	__u64 buf; /* struct djp_kdev_marker * */
	__u32 cap;
	__u32 count;
};

#define DJP_KDEV_PATTERN_MAX 256
/* A CONNECT of "func:NAME[+OFF]" or "func:NAME%return" is a function
 * point through kprobes (kmod/kfunc.c), listed as module "kernel", name the
 * pattern, site a marker id below this (no site's can be). */
#define DJP_KFUNC_PREFIX "func:"
#define DJP_KFUNC_ID_LIMIT 0x80000000u

/* DJP_KIOC_CONNECT: the recorder on every marker the pattern matches
 * ("NAMEGLOB" or "MODGLOB:NAMEGLOB", djprobe.h), now and in modules loaded
 * later; id is the probe id (for DJP_KIOC_DISCONNECT), the ioctl's -errno
 * djp_connect's.  flags: DJP_FORCE_KPROBE, DJP_FORCE_INT3 (djprobe.h). */
struct djp_kdev_connect {
	char pattern[DJP_KDEV_PATTERN_MAX];
	__u32 flags;
	__s32 id;
};

/* DJP_KIOC_CONSUMED: the tool has read the first tails[i] bytes of CPU
 * i's ring (positions as in lib/ring.h); n entries at tails. */
struct djp_kdev_consumed {
	__u64 tails; /* __u64 * */
	__u32 n;
	__u32 pad;
};

#define DJP_KIOC_TYPE 0xd7
#define DJP_KIOC_INFO _IOR(DJP_KIOC_TYPE, 0, struct djp_kdev_info)
#define DJP_KIOC_LIST _IOWR(DJP_KIOC_TYPE, 1, struct djp_kdev_list)
#define DJP_KIOC_CONNECT _IOWR(DJP_KIOC_TYPE, 2, struct djp_kdev_connect)
#define DJP_KIOC_DISCONNECT _IOW(DJP_KIOC_TYPE, 3, __s32)
#define DJP_KIOC_CONSUMED _IOW(DJP_KIOC_TYPE, 4, struct djp_kdev_consumed)

#endif /* DJPROBE_KDEV_H */
