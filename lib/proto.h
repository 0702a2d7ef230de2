/*
 * The agent protocol: how the djp tool and the agent inside a traced process
 * talk over a Unix stream socket (lib/proto.c has the essay).
 *
 * Every message is one frame: an 8-byte header, then `len` payload bytes.
 *
 *   u32 len      payload bytes, at most DJP_PROTO_MAX_PAYLOAD
 *   u16 type     enum djp_msg_type
 *   u16 flags    0 (reserved; a receiver refuses anything else)
 *
 * Payloads are sequences of little-endian fields: u8, u16, u32, u64, and
 * strings (u16 length, then the bytes: no NUL, at most DJP_PROTO_STR_MAX).
 * Every request gets exactly one final reply (OK, ERROR or the typed reply
 * named below), possibly preceded by MARKERS frames.
 *
 *   HELLO      tool:  u32 magic, u32 version
 *              agent: HELLO u32 magic, u32 version, u32 pid, str program
 *   LIST       tool:  u32 first_id (markers with id >= first_id)
 *              agent: MARKERS* (u32 n, n x {u32 id, u64 addr, u8 nargs,
 *                     str name, str format, str object}), then OK u32 total
 *   RING       tool:  u32 mode, u32 nslots, u64 ring_size, u32 nsubbufs,
 *                     u32 str_bound (0: defaults), then the tool's TSC
 *                     rate: u32 clock kind, u32 shift, u64 mult, u64
 *                     raw_hz (lib/clock.h; kind 0: none)
 *              agent: RING_FD u64 region size, the memfd in SCM_RIGHTS
 *   CONNECT    tool:  str pattern, u32 flags (DJP_CONNECT_*), u32 string
 *                     arguments (bit i: argument i of the pattern's markers
 *                     is a pointer to a string, to copy into the event),
 *                     u32 their bound in bytes, NUL included (0: the
 *                     ring's); with DJP_CONNECT_AGG, u32 the TABLES plan
 *                     whose table the hits update instead (DJP_CONNECT_REGS
 *                     and _REGS_STACK: every event of the session carries
 *                     the hit's registers, DJP_EVF_REGS)
 *              agent: CONNECTED u32 probe, u32 sites matched, u32 n,
 *                     n x {u32 marker id, u64 run-time address}: the
 *                     sites left for the tool's uprobe (with
 *                     DJP_CONNECT_KERNEL_TRAP; else n is 0); or ERROR
 *                     (-ENOENT when the pattern matches no marker and
 *                     DJP_CONNECT_PENDING is not given)
 *   DISCONNECT tool:  u32 probe (DJP_PROBE_ALL: every probe of the session)
 *              agent: OK u32 probes disconnected
 *   STATS      agent: STATS_REPLY u64 misses, u64 lost_noslot,
 *                     u32 n, n x {u32 tid, u64 events, u64 lost_full,
 *                     u64 lost_nested}, u32 m, m x {u32 id, u64 lost},
 *                     u32 arming errors since HELLO in objects that came
 *                     or went (dlopen, dlclose) and sites given up to
 *                     another tool's breakpoint, i32 the last (-errno)
 *   START      tool:  the first configuration is complete: a command that
 *                     waits in the agent's constructor may run its main.
 *              agent: OK u32 0
 *   BYE        tool:  disconnect everything; agent: OK u32 0, then closes
 *   MARKER_LOG agent: MARKER_LOG_FD u64 size, the marker log's memfd in
 *                     SCM_RIGHTS (lib/marker_log.h): markers of objects
 *                     loaded from then on, written before they are armed
 *   TABLES     tool:  u32 entries per table (a power of two), u32 n, n x
 *                     {u32 key_args, u32 flags, u32 value_arg, u32
 *                     hist_kind, u64 value_const, u64 hist_start, u64
 *                     hist_interval, u32 nbuckets, u32 str_arg, u32
 *                     str_bound} (struct djp_agg_plan,
 *                     lib/agg.h); after RING, once
 *              agent: TABLES_FD u64 size, the tables memfd in SCM_RIGHTS
 *                     (lib/agg.h): per-marker lost counters from then on,
 *                     and a table per plan per ring slot
 *   VARS       tool:  u32 n (at most DJP_VARS_MAX), n x {str object (its
 *                     path, as the process maps it), u64 link-time
 *                     address, u8 size, u16 string bound}: with
 *                     DJP_CONNECT_REGS, every event of the session
 *                     carries the aligned word of each, read in the
 *                     target at the hit (a script's @var), and for one
 *                     with a string bound (a pointer; at most
 *                     DJP_VARS_STR_MAX of them) the string it points to,
 *                     copied as a %s argument after the marker's own
 *                     (an empty object and size 0: not a variable but the
 *                     register of that DWARF number, 16 the pc, for the
 *                     string it points to: user_string(pointer_arg(1)));
 *                     before the CONNECTs
 *              agent: OK u32 n, then n x u64 each one's run-time
 *                     address (0: its object is not loaded)
 *   LOADS      tool:  str provider, str name, u64 site, u32 n, n load
 *                     programs (lib/load_prog.h, lib/load_wire.h): each
 *                     hit of the sites so named (and at that link-time
 *                     address, unless site is 0) runs them and its event carries their
 *                     results (DJP_EVF_LOADS); after RING, before the
 *                     CONNECT of a pattern that matches those sites
 *              agent: OK u32 0; or ERROR
 *   FOLLOW     tool:  str name, an abstract socket the tool listens on:
 *                     the child of every fork from then on dials it
 *                     before fork returns, and waits for its START
 *              agent: OK u32 0
 *
 * The agent asks, while it answers CONNECT, DISCONNECT or BYE, and, once
 * the session has connected a probe, of its own accord at any moment
 * (batches no request asked for: the tool answers wherever it reads):
 *
 *   FREEZE     agent: u32 tid, the asking thread: stop every other thread of
 *              the process until THAW (a thread blocks SIGTRAP, which
 *              an int3 would kill: kernel/freeze.c)
 *              tool:  OK u32 0 once they are all stopped; or ERROR
 *   THAW       agent: u32 tid; tool: let them go, then OK u32 0
 *
 * A malformed frame (bad length, type or flags, a field past the end, bytes
 * left over) ends the session: the agent disarms every probe it armed for it
 * and closes the socket.
 */
#ifndef DJP_LIB_PROTO_H
#define DJP_LIB_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DJP_PROTO_MAGIC 0x4a504a44u /* "DJPJ" */
#define DJP_PROTO_VERSION 13u
#define DJP_PROTO_HDR_SIZE 8u
#define DJP_PROTO_MAX_PAYLOAD (60u * 1024)
#define DJP_PROTO_STR_MAX 4096u
#define DJP_PROBE_ALL 0xffffffffu
/* CONNECT: keep a pattern that matches nothing now, for objects loaded later */
#define DJP_CONNECT_PENDING 1u
/* CONNECT: every event of the session carries its hit's CPU (DJP_EVF_CPU) */
#define DJP_CONNECT_CPU 2u
/* CONNECT: each event of the pattern's sites carries the user stack of its
 * hit (DJP_EVF_USTACK, walked in the process: kernel/unwind.c) */
#define DJP_CONNECT_USTACK 4u
/* CONNECT: arm the pattern's sites as int3 breakpoints, never jumps (safe
 * beside another tool's uprobes on the same instructions: ENGINE.md) */
#define DJP_CONNECT_INT3 8u
/* CONNECT: the pattern's hits update the table of a plan of the session's
 * TABLES (a u32 plan index follows the flags' fields), no event each */
#define DJP_CONNECT_AGG 16u
/* CONNECT: every event of the session carries the general registers of
 * its hit (DJP_EVF_REGS, lib/ring.h), and with DJP_CONNECT_REGS_STACK the
 * DJP_REGS_STACK_WORDS stack words above the return address besides
 * (arguments 7 on at a function's entry): a script's register() and
 * int_arg(n).  The pattern's sites keep %rsp and %rbp in their view. */
#define DJP_CONNECT_REGS 32u
#define DJP_CONNECT_REGS_STACK 64u
/* CONNECT: a site of the pattern that no jump can reach is not made an
 * int3 probe but left as it is, for the tool to arm with the kernel's
 * uprobe (tools/djp/uprobe/): CONNECTED lists those sites.  Not with
 * DJP_CONNECT_AGG; sites of objects loaded later get int3 probes. */
#define DJP_CONNECT_KERNEL_TRAP 128u
#define DJP_REGS_STACK_WORDS 8u
/* A DJP_EVF_REGS block's words: the registers by DWARF number 0-15 (rax
 * rdx rcx rbx rsi rdi rbp rsp r8-r15), the pc (the probed instruction; at
 * a return, the address returned to), a word of bits (bit i: word i was in
 * the hit's register view; bit DJP_REGS_STACK + j: stack word j could be
 * read), then the stack words from %rsp + 8 up. */
#define DJP_REGS_PC 16u
#define DJP_REGS_INFO 17u
#define DJP_REGS_STACK 18u
/* After the stack words (DJP_REGS_STACK_WORDS of them with
 * DJP_CONNECT_REGS_STACK, else none), one word per VARS variable: the
 * aligned 8 bytes that hold it; bit DJP_REGS_VARS_BIT + j of the info
 * word says variable j was read. */
#define DJP_REGS_VARS_BIT (DJP_REGS_STACK + DJP_REGS_STACK_WORDS)
#define DJP_VARS_MAX 16u
#define DJP_VARS_STR_MAX 4u
/* One variable of VARS, as the tool names it: its object's real path,
 * its link-time address, its size in bytes, and the bytes of the string
 * it points to to copy at the hit, NUL included (0: none). */
struct djp_var_want {
	const char *object;
	uint64_t addr;
	unsigned size;
	unsigned str_bound;
};

/* The agent's bounds, which the tool keeps to before it asks: the bytes of
 * a CONNECT pattern, the probes of a session, and the ring region of a
 * RING (slots, bytes a slot, bytes in all). */
#define DJP_AGENT_PATTERN_MAX 256
#define DJP_AGENT_MAX_PROBES 64
#define DJP_AGENT_MAX_SLOTS 4096u
#define DJP_AGENT_MAX_RING (256ull << 20)
#define DJP_AGENT_MAX_REGION (64ull << 30)
/* The pcs a DJP_CONNECT_USTACK event carries at most (DJP_EVF_USTACK):
 * SystemTap's MAXBACKTRACE. */
#define DJP_RECORDER_STACK_DEPTH 20

/* The environment of a launched command (`djp trace -c`), which the tool
 * sets and the agent reads: DJP_AGENT=0 disables the agent;
 * DJP_AGENT_TOOL names the abstract socket of the tool waiting for the
 * command; DJP_AGENT_TOOL_PID is the pid of the process that is the command
 * itself (run without a shell), which dials in whatever probes it has,
 * none included; DJP_AGENT_TIMEOUT bounds, in seconds, how long the
 * command's constructor waits for the first configuration (default
 * DJP_AGENT_DEFAULT_TIMEOUT), and the tool waits that long and more for
 * it to dial in. */
#define DJP_AGENT_ENV "DJP_AGENT"
#define DJP_AGENT_TOOL_ENV "DJP_AGENT_TOOL"
#define DJP_AGENT_TOOL_PID_ENV "DJP_AGENT_TOOL_PID"
#define DJP_AGENT_TIMEOUT_ENV "DJP_AGENT_TIMEOUT"
#define DJP_AGENT_DEFAULT_TIMEOUT 5

enum djp_msg_type {
	/* requests (tool to agent) */
	DJP_MSG_HELLO = 1,
	DJP_MSG_LIST = 2,
	DJP_MSG_RING = 3,
	DJP_MSG_CONNECT = 4,
	DJP_MSG_DISCONNECT = 5,
	DJP_MSG_STATS = 6,
	DJP_MSG_START = 7,
	DJP_MSG_BYE = 8,
	DJP_MSG_MARKER_LOG = 9,
	DJP_MSG_FOLLOW = 10,
	DJP_MSG_TABLES = 11,
	DJP_MSG_VARS = 12,
	DJP_MSG_LOADS = 13,
	/* replies (agent to tool) */
	DJP_MSG_OK = 64,
	DJP_MSG_ERROR = 65,	/* i32 -errno, str message */
	DJP_MSG_MARKERS = 66,
	DJP_MSG_CONNECTED = 67,
	DJP_MSG_STATS_REPLY = 68,
	DJP_MSG_RING_FD = 69,
	/* the agent's own hello, answering HELLO */
	DJP_MSG_HELLO_REPLY = 70,
	DJP_MSG_MARKER_LOG_FD = 71,
	DJP_MSG_TABLES_FD = 72,
	/* the agent's own requests, in the middle of its answer to one */
	DJP_MSG_FREEZE = 73,
	DJP_MSG_THAW = 74,
};

/* Name of a message type for diagnostics ("HELLO"), or "?". */
const char *djp_msg_name(unsigned type);
bool djp_msg_type_valid(unsigned type);

/* ---- building a payload ------------------------------------------------ */

struct djp_pbuf {
	uint8_t data[DJP_PROTO_HDR_SIZE + DJP_PROTO_MAX_PAYLOAD];
	size_t len; /* payload bytes so far (after the header space) */
	bool overflow;
};

void djp_pbuf_init(struct djp_pbuf *b);
void djp_put_u8(struct djp_pbuf *b, uint8_t v);
void djp_put_u16(struct djp_pbuf *b, uint16_t v);
void djp_put_u32(struct djp_pbuf *b, uint32_t v);
void djp_put_u64(struct djp_pbuf *b, uint64_t v);
/* At most DJP_PROTO_STR_MAX bytes of s (NULL is ""); longer is cut. */
void djp_put_str(struct djp_pbuf *b, const char *s);
/* Room left for more fields. */
size_t djp_pbuf_room(const struct djp_pbuf *b);

/* ---- reading a payload -------------------------------------------------- */

struct djp_preader {
	const uint8_t *p;
	size_t left;
	bool bad; /* a read went past the end or a string was malformed */
};

void djp_preader_init(struct djp_preader *r, const void *payload, size_t len);
uint8_t djp_get_u8(struct djp_preader *r);
uint16_t djp_get_u16(struct djp_preader *r);
uint32_t djp_get_u32(struct djp_preader *r);
uint64_t djp_get_u64(struct djp_preader *r);
/* Copy a string into out (size outsz, NUL-terminated).  A string with a NUL
 * inside, longer than DJP_PROTO_STR_MAX or than outsz - 1 marks the reader
 * bad.  Returns out. */
char *djp_get_str(struct djp_preader *r, char *out, size_t outsz);
/* True when everything was read and nothing was bad. */
bool djp_preader_done(const struct djp_preader *r);

/* ---- frames ------------------------------------------------------------- */

/* Validate a received header; returns the payload length or -EPROTO. */
long djp_proto_check_hdr(const uint8_t hdr[DJP_PROTO_HDR_SIZE], unsigned *type);

/*
 * Send one frame of type `type` with the payload of b (NULL: empty), and
 * pass_fd (>= 0) in SCM_RIGHTS.  Blocking on a blocking socket (use
 * SO_SNDTIMEO to bound it); MSG_NOSIGNAL.  Returns 0 or -errno.
 */
int djp_proto_send(int fd, unsigned type, struct djp_pbuf *b, int pass_fd);

/* Send an ERROR frame: -errno and a message. */
int djp_proto_send_error(int fd, int err, const char *msg);

/*
 * Receive one frame, waiting at most timeout_ms for each part (-1: no
 * limit).  The payload goes into buf (at least DJP_PROTO_MAX_PAYLOAD bytes);
 * a file descriptor that came with it into *fd_out (or -1; closed when
 * fd_out is NULL).  Returns the payload length, -ETIMEDOUT, -ECONNRESET on
 * end of file, -EPROTO on a malformed header, -EMFILE when a descriptor
 * came that this process had no room for (the frame is read whole), or
 * another -errno.
 */
long djp_proto_recv(int fd, unsigned *type, void *buf, int timeout_ms, int *fd_out);

#endif
