# The oracle: djp's values against bpftrace's, on real programs.
#
# Each row of ROWS is a program with a deterministic workload and the probes
# to compare.  The workload runs once under bpftrace (usdt:, uprobe:,
# uretprobe:, one line per hit) and once under `djp trace --json` for each
# arming (the default, and --int3); never both tools on one run, so no site
# ever carries a uprobe and a djp probe at once.  Every hit becomes
# (probe, argument values), and the multisets of the two runs must be
# equal:
#  - a number is compared as the bits its location's size holds (an SDT
#    argument's SIZE@, a parameter's C type): djp prints a %x, bpftrace a
#    %ld of the same bits, either may print a 4-byte value sign-extended;
#  - a string as bpftrace's str() reads it: at most STRLEN bytes;
#  - a pointer into memory the run laid out (the heap, an exception object)
#    differs between two runs of the same program (ASLR, and the agent's
#    own allocations move the heap), so it is compared by identity: each
#    pointer a function returns is a new name, in the order of the returns,
#    and an argument takes the latest name at its address (one never
#    returned, a new name); 0 stays 0.  The same call sequence names them
#    alike, whether realloc moved or the heap reused an address; a wrong or
#    shifted value does not;
#  - a value that depends on timing (PostgreSQL's background processes,
#    lock waits) is compared by shape only, as each row's comment says;
#  - a hit on a thread other than its process's first is kept apart
#    ("NAME (thread)"): the workloads call from their main thread only, so
#    such a hit is one the tool should not report (its agent's own calls).
# bpftrace's probes go on the file, for every process that maps it (given
# -p, bpftrace 0.17 reports its own calls of a library's functions, not
# the process's, and still puts its breakpoints in every process), and
# print the hits of the workload's processes only.  A library's functions
# and SDT probes are therefore probed in a private copy of the library,
# which only the workload loads (LD_LIBRARY_PATH), PostgreSQL's in a copy
# of postgres that only bpftrace's server runs, and a row fails if its
# uprobes show in the system's file, as the oracle maps it: a uprobe
# over the first byte of a function or SDT nop djprobe has armed with a
# jump in another process (a test tracing every function of libc) steps
# the file's first instruction and resumes in the middle of the jump, and
# that process dies;
# bpftrace is stopped once it has printed the workload's exit, after its
# last hit.  Neither tool may lose a hit: a run that did fails.
# A difference fails with the probe, the argument's location and both
# values; the last line says how many probes and values were compared.
#
# usage: oracle.py --build DIR [--only-mode MODE] ROW...
#   ROW: python, postgres, libstdcxx, libc, functions, markers, argkinds
import argparse
import atexit
import collections
import ctypes
import json
import mmap
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BPFTRACE = "/usr/bin/bpftrace"
PYTHON = "/usr/bin/python3.11"
PGBIN = "/usr/lib/postgresql/15/bin"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
LIBZ = "/lib/x86_64-linux-gnu/libz.so.1"
# The copies of LIBC and LIBZ a row with "private_libs" loads and
# bpftrace probes (private_libs()): the files bpftrace's uprobes go on.
UPROBE_LIB = {"libc": LIBC, "libz": LIBZ}
# bpftrace drops what its perf buffers cannot hold: large ones, per CPU
os.environ["BPFTRACE_PERF_RB_PAGES"] = "4096"
# a ring per thread that holds a whole run: djp never drops, it counts
DJP_RING = str(64 << 20)
STRLEN = 63  # bpftrace's str(): 64 bytes with the NUL
HERE = os.path.dirname(os.path.abspath(__file__))
MODES = [("default", []), ("--int3", ["--int3"])]


TEMPS = []  # files main() removes at the end, whatever happened


class Fail(Exception):
    pass


def note(msg):
    print("# " + msg, flush=True)


# ---- the table -------------------------------------------------------------
#
# A probe is (name, kinds, compare): name as djp names it ("provider:name",
# "func:NAME@OBJECT", "func:NAME%return@OBJECT"); kinds one letter per
# argument compared (None: every argument of the probe's locations as a
# number): s string, v value, p pointer (by identity), r not compared (run
# dependent; the argument is still read by both); compare "multiset" (every
# hit, as many times as it happened) or "set" (the distinct hits: timing
# decides how often, not what).  A value may carry its size in bytes: v4.


def probe(name, kinds, compare="multiset", proc="all", event=None, uprobe=None):
    """event, uprobe: a line probe's event name in djp and the function of
    the program bpftrace probes for it (the line is that function's first)."""
    return {"name": name, "kinds": kinds, "compare": compare, "proc": proc, "event": event, "uprobe": uprobe}


PY_PROBES = [
    probe("python:function__entry", "ssv"),
    probe("python:function__return", "ssv"),
    probe("python:line", "ssv"),
    probe("python:gc__start", "v"),
    probe("python:gc__done", "v"),
    probe("python:import__find__load__start", "s"),
    probe("python:import__find__load__done", "sv"),
]

# pgbench -c 1 with a fixed seed on a fresh copy of one initialised cluster:
# the backend runs the same statements on the same data each time, so its
# queries and transactions compare hit for hit.  The background processes
# (checkpointer, background writer, WAL writer) run on timers, and whether
# a backend finds the WAL already flushed or a lock free depends on them:
# for the lock and buffer probes the backend's distinct hits are compared
# (tranche names and modes; relation, fork and block of each buffer read;
# the tag and mode of a lock waited for).
PG_PROBES = [
    # LocalTransactionIds are counted per backend slot, in shared memory: the
    # benchmark's backend continues the count of the set-up connection's
    # backend when it gets that slot, which depends on whether that one has
    # finished leaving: the transactions compare by count
    probe("postgresql:transaction__start", "r"),
    probe("postgresql:transaction__commit", "r"),
    probe("postgresql:transaction__abort", "r"),
    probe("postgresql:query__start", "s"),
    probe("postgresql:query__done", "s"),
    probe("postgresql:query__parse__start", "s"),
    probe("postgresql:query__parse__done", "s"),
    probe("postgresql:query__rewrite__start", "s"),
    probe("postgresql:query__rewrite__done", "s"),
    probe("postgresql:query__plan__start", ""),
    probe("postgresql:query__plan__done", ""),
    probe("postgresql:query__execute__start", ""),
    probe("postgresql:query__execute__done", ""),
    probe("postgresql:statement__status", "s"),
    probe("postgresql:lwlock__acquire", "sv", "set", "backend"),
    probe("postgresql:lwlock__release", "s", "set", "backend"),
    probe("postgresql:lwlock__condacquire", "sv", "set", "backend"),
    # heavyweight lock waits: none with one client, whose locks nobody
    # holds; if any, the lock tag and mode
    probe("postgresql:lock__wait__start", "vvvvvv", "set", "backend"),
    probe("postgresql:lock__wait__done", "vvvvvv", "set", "backend"),
    # the first six arguments: bpftrace 0.17 reads no arg6 of a USDT probe
    # (isExtend of the start, found of the done)
    probe("postgresql:buffer__read__start", "vvvvvv", "set", "backend"),
    probe("postgresql:buffer__read__done", "vvvvvv", "set", "backend"),
]

# The exception object and its type_info: pointers.
CXX_PROBES = [
    probe("libstdcxx:throw", "pp"),
    probe("libstdcxx:rethrow", "pp"),
    probe("libstdcxx:catch", "pp"),
]

LIBC_PROBES = [
    probe("libc:setjmp", "pvp"),
    probe("libc:longjmp", "pvp"),
    probe("libc:memory_*", None),
]

# Parameters (SysV: %rdi, %rsi, %rdx, %rcx, %r8, %r9) at entry and the
# return value, of calls the workload makes with fixed arguments.  djp
# names a function's parameters from its DWARF: libc's come with
# libc6-dbg; Debian has no debug package for libz in its main archive, so
# libz's calls compare by count at entry and by value at their return.
FUNC_PROBES = [
    probe("func:malloc@libc.so*", "v"),
    probe("func:malloc%return@libc.so*", "p"),
    probe("func:calloc@libc.so*", "vv"),
    probe("func:calloc%return@libc.so*", "p"),
    probe("func:realloc@libc.so*", "pv"),
    probe("func:realloc%return@libc.so*", "p"),
    probe("func:free@libc.so*", "p"),
    probe("func:fopen@libc.so*", "pp"),  # djp trace prints a char * parameter as its address
    probe("func:fopen%return@libc.so*", "p"),
    probe("func:fclose@libc.so*", "p"),
    probe("func:fclose%return@libc.so*", "v4"),
    # glibc's setjmp and longjmp (its libc:setjmp and libc:longjmp SDT
    # probes are not in Debian's build); _setjmp is assembly, without the
    # DWARF of a parameter
    probe("func:_setjmp@libc.so*", ""),
    probe("func:longjmp@libc.so*", "pv4"),
    probe("func:compress2@libz.so*", ""),
    probe("func:compress2%return@libz.so*", "v4"),
    probe("func:uncompress@libz.so*", ""),
    probe("func:uncompress%return@libz.so*", "v4"),
    probe("func:crc32@libz.so*", ""),
    probe("func:crc32%return@libz.so*", "v"),
    # line:FILE:@TEXT: the line of FILE (selftests/oracle/) that has TEXT
    probe("line:func_workload.c:@oracle: the line probe", "v", event="func:oracle_round", uprobe="oracle_round"),
    # a line of four rows, entered once a call: one hit a call (its
    # parameter is not compared: at -O0 its DWARF location is a stack slot
    # the prologue has not written yet at the line's first instruction)
    probe("line:func_workload.c:@oracle: rows", "", event="func:oracle_rows", uprobe="oracle_rows"),
]


def build_path(args, rel):
    return os.path.join(args.build, rel)


# A row: argv (from the parsed arguments: the build directory), env; object,
# the file the probes are in (None: the program); probes; and how it runs:
# stdin, what the workload reads; attach, djp trace -x into a workload that
# prints "ready" and waits for a line; provider, the SDT provider of
# markers djp names without one; expect, the workload prints its probes'
# values itself ("PROBE V1 V2 ..."); optional, not run (said) where the
# program is not built; needs_notes, not run (said) where the object has no
# SDT notes; postgres, the PostgreSQL cluster and pgbench.  Another
# program of ours is one more row.
ROWS = {
    "python": {
        "argv": lambda a: [PYTHON, "-S", os.path.join(HERE, "py_workload.py")],
        "env": {"PYTHONHASHSEED": "0"},
        "object": PYTHON,
        "probes": PY_PROBES,
    },
    "postgres": {"postgres": True, "object": PGBIN + "/postgres", "probes": PG_PROBES},
    "libstdcxx": {
        "argv": lambda a: [build_path(a, "selftests/oracle/cxx_workload"), "30"],
        "object": "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
        "private_libs": True,
        "probes": CXX_PROBES,
    },
    # Debian builds glibc without its SDT probes: the row says so and
    # compares nothing where libc.so.6 has no .note.stapsdt.
    "libc": {
        "argv": lambda a: [build_path(a, "selftests/oracle/func_workload"), "20"],
        "stdin": "go\n",
        "object": LIBC,
        "probes": LIBC_PROBES,
        "needs_notes": True,
    },
    # -x: djp trace attaches to the waiting process, bpftrace's probes go
    # on the files before it is told to go on.
    "functions": {
        "argv": lambda a: [build_path(a, "selftests/oracle/func_workload"), "20"],
        "attach": True,
        "private_libs": True,
        "probes": FUNC_PROBES,
    },
    # The markers of an -O2 program of ours (MARK(): a .markers record
    # and an SDT note of provider djp): arguments in registers, on the
    # stack, immediates, of 1, 2, 4 and 8 bytes, signed and not, and
    # strings and pointers (good=: a string; unmapped=, none=, cut=:
    # pointers to an unmapped page, a PROT_NONE page, a string running
    # into it, by identity).
    "markers": {
        "argv": lambda a: [build_path(a, "selftests/trace_progs/trace_target"), "--ticks", "0"],
        "stdin": "kinds 5\nburst 50\nstrings 4\n",
        "object": None,
        "provider": "djp",
        "probes": [probe("tt_main", "v"), probe("tt_kinds", "vvvvv"), probe("tt_burst", "vv"),
                   probe("tt_strs", "svvppp")],
    },
    # An -O2 program of ours with an argument of every location kind
    # (trace_progs/argkinds_target.c).  It prints what each firing's
    # arguments must read ("argkinds:NAME V1 V2 ..."): djp is compared
    # with that for every probe, and with bpftrace for those bpftrace can
    # read (0.17 parses no N@sym, no %ah, ...).
    "argkinds": {
        "argv": lambda a: [build_path(a, "selftests/trace_progs/argkinds_target"), "5"],
        "object": None,  # the program itself
        "probes": [probe("argkinds:*", None)],
        "optional": True,
        "expect": True,
    },
}


# ---- processes ---------------------------------------------------------------


class Proc:
    """A child whose stdout and stderr are read as they come, by a thread
    each: a tool's output must never wait for the driver (bpftrace whose
    pipe is full stops reading its buffers and drops hits while the
    driver runs pgbench)."""

    def __init__(self, argv, env=None, stdin=False, user=None):
        e = dict(os.environ)
        e.update(env or {})
        self.p = subprocess.Popen(argv, env=e, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                  user=user)
        self.bufs = {"out": bytearray(), "err": bytearray()}
        self.readers = [threading.Thread(target=self._read, args=(f, self.bufs[w]), daemon=True)
                        for f, w in ((self.p.stdout, "out"), (self.p.stderr, "err"))]
        for t in self.readers:
            t.start()

    @staticmethod
    def _read(f, buf):
        while True:
            d = os.read(f.fileno(), 1 << 16)
            if not d:
                return
            buf += d

    @property
    def out(self):
        return bytes(self.bufs["out"])

    @property
    def err(self):
        return bytes(self.bufs["err"])

    def done(self):
        return self.p.poll() is not None and not any(t.is_alive() for t in self.readers)

    def wait_for(self, needle, where, timeout):
        """Until the child has written needle (True), or ended or timed out."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if needle in self.bufs[where]:
                return True
            if self.done():
                break
            time.sleep(0.02)
        return needle in self.bufs[where]

    def finish(self, timeout, sig=None):
        """Wait for the end, sending sig first (and again every 2 s: a
        SIGINT that reaches bpftrace as it starts to poll is sometimes not
        acted on, and it then waits for ever)."""
        end = time.monotonic() + timeout
        again = 0
        while time.monotonic() < end:
            if sig is not None and self.p.poll() is None and time.monotonic() >= again:
                os.kill(self.p.pid, sig)
                again = time.monotonic() + 2
            if self.done():
                return self.p.returncode
            time.sleep(0.02)
        os.killpg(self.p.pid, signal.SIGKILL)
        self.p.wait()
        raise Fail("%s did not end within %d s: %s" % (self.p.args[0], timeout, self.err[-500:].decode(errors="replace")))


# ---- locations -------------------------------------------------------------


def sdt_locations(djp, obj, pattern):
    """{probe name: [location string of each argument, per site joined]} of
    the SDT probes of obj that pattern matches, as `djp list` reads them."""
    out = subprocess.run([djp, "list", obj], capture_output=True, text=True)
    if out.returncode:
        raise Fail("djp list %s: %s" % (obj, out.stderr.strip()))
    locs = {}
    rx = re.compile("^" + re.escape(pattern).replace("\\*", ".*") + "$")
    for line in out.stdout.splitlines():
        name = line.split()[0]
        if not rx.match(name) or '"' not in line:
            continue
        args = line.rsplit('"', 1)[1].split()
        sites = locs.setdefault(name, [])
        sites.append(args)
    return {n: [" | ".join(sorted(set(s[i] for s in sites if i < len(s))))
                for i in range(max(len(s) for s in sites))] for n, sites in locs.items()}


ABI_REGS = ["%rdi", "%rsi", "%rdx", "%rcx", "%r8", "%r9"]


def loc_size(loc):
    """Bytes and signedness of the first site's SIZE@ (8, unsigned without one)."""
    m = re.match(r"(-?)(\d+)@", loc)
    return (int(m.group(2)), m.group(1) == "-") if m else (8, False)


# ---- the probes each tool is given ----------------------------------------


class Spec:
    """One probe of a row, resolved: its djp pattern and bpftrace probe."""

    def __init__(self, pr, name, locs, obj):
        self.name = name  # the event name djp prints
        self.compare = pr["compare"]
        self.proc = pr["proc"]
        self.locs = locs
        kinds = pr["kinds"]
        if kinds is None:
            kinds = "v" * len(locs)
        self.kinds = re.findall(r"[svpr]\d*", kinds)
        self.obj = obj
        self.func = None
        self.ret = False
        self.provider = None  # a marker's SDT provider, for bpftrace

    def size(self, i):
        k = self.kinds[i]
        if len(k) > 1:
            return int(k[1:]), False
        return loc_size(self.locs[i]) if i < len(self.locs) else (8, False)


def resolve(args, row):
    """The row's probes as Specs: SDT probes from the object's notes,
    functions as written."""
    specs = []
    for pr in row["probes"]:
        name = pr["name"]
        if name.startswith("line:"):
            _, src, text = name.split(":", 2)
            with open(os.path.join(HERE, src)) as f:
                n = [i + 1 for i, l in enumerate(f) if text[1:] in l][0]
            s = Spec(pr, pr["event"], ABI_REGS[:len(pr["kinds"])], row["argv"](args)[0])
            s.func, s.pattern = pr["uprobe"], "line:%s:%d" % (src, n)
            specs.append(s)
            continue
        if name.startswith("func:"):
            m = re.match(r"func:([^@%]+)(%return)?@(.*)$", name)
            fn, ret, obj = m.group(1), m.group(2), m.group(3)
            objpath = UPROBE_LIB["libc" if obj.startswith("libc") else "libz"]
            event = "func:%s%s" % (fn, ret or "")
            locs = ["%rax"] if ret else ABI_REGS[:len(re.findall(r"[svpr]\d*", pr["kinds"]))]
            s = Spec(pr, event, locs, objpath)
            s.func, s.ret, s.pattern = fn, bool(ret), name
            specs.append(s)
            continue
        obj = row["object"] or row["argv"](args)[0]
        for pname, locs in sorted(sdt_locations(args.djp, obj, name).items()):
            s = Spec(pr, pname, locs, obj)
            s.pattern = pname
            s.provider = row.get("provider")
            specs.append(s)
    return specs


def djp_patterns(specs):
    """PATTERN=FORMAT for each probe: %s strings, %x everything else."""
    pats = []
    for s in specs:
        if s.func or s.pattern.startswith("line:"):
            pats.append(s.pattern)
            continue
        fmt = " ".join("a%d=%s" % (i + 1, "%s" if k[0] == "s" else "%x") for i, k in enumerate(s.kinds))
        pats.append("%s=%s" % (s.pattern, fmt) if fmt else s.pattern)
    return pats


def bpftrace_program(specs, child=False, only=None, tree=False):
    """One action per probe printing a tab-separated line: time, pid, tid,
    parent, name, each argument (str() for a string).  BEGIN says when the
    probes are in, and the -c command's pid (child); only: the pid whose
    hits are printed (tree: and its children's and grandchildren's)."""
    pred = "/pid == %(p)d/ "
    if tree:
        pred = ("/pid == %(p)d || curtask->real_parent->tgid == %(p)d || "
                "curtask->real_parent->real_parent->tgid == %(p)d/ ")
    prog = ['BEGIN { printf("oracle-begin %%d\\n", %s); }' % ("cpid" if child else "0")]
    if only:  # the last line of the process's: it has left
        prog.append('tracepoint:sched:sched_process_exit /pid == %d/ { printf("oracle-end\\n"); }' % only)
    for idx, s in enumerate(specs):
        if s.func:
            what = "uretprobe" if s.ret else "uprobe"
            point = '%s:"%s":%s' % (what, s.obj, s.func)
            vals = ["retval"] if s.ret else ["arg%d" % i for i in range(len(s.kinds))]
        else:
            prov, name = s.name.split(":", 1) if ":" in s.name else (s.provider, s.name)
            point = 'usdt:"%s":%s:%s' % (s.obj, prov, name)
            vals = ["arg%d" % i for i in range(len(s.kinds))]
        fmt = ["%llu", "%d", "%d", "%d", "#%d" % idx]  # a name with % would not pass bpftrace's printf
        exprs = ["nsecs", "pid", "tid", "curtask->real_parent->tgid"]
        for k, v in zip(s.kinds, vals):
            if k[0] == "s":
                fmt.append("%s")
                exprs.append("str(%s)" % v)
            else:
                fmt.append("%ld")
                exprs.append(v)
        prog.append('%s %s{ printf("E\\t%s\\n", %s); }' % (point, pred % {"p": only} if only else "",
                                                             "\\t".join(fmt), ", ".join(exprs)))
    return "\n".join(prog)


# ---- the runs ----------------------------------------------------------------


class Run:
    """One run's hits: [(time, pid, tid, name, [raw values])]."""

    def __init__(self, tool):
        self.tool = tool
        self.hits = []
        self.pids = set()


def parse_bpftrace(out, specs):
    run = Run("bpftrace")
    # a string may hold a newline: a line that does not start a hit
    # goes on the hit before it (its own lines start "E\tTIME\tPID\t")
    records = []
    for line in out.decode(errors="surrogateescape").rstrip("\n").split("\n"):
        if re.match(r"E\t\d+\t\d+\t", line):
            records.append(line)
        elif records and not re.match(r"(oracle-end|Lost \d+ events)$", line):
            records[-1] += "\n" + line
    for line in records:
        f = line.split("\t")
        s = specs[int(f[5][1:])]
        vals = f[6:]
        if len(vals) != len(s.kinds):  # a string with a tab or newline
            raise Fail("bpftrace printed a line this oracle cannot split: %r" % line[:200])
        run.hits.append((int(f[1]), int(f[2]), int(f[3]), int(f[4]), s.name, vals))
    return run


def djp_trace(args, mode, where, pats, env=None, stdin=None):
    """`djp trace --json` writing its events to a file of their own (the
    command's output goes to the same stdout); stdin: the -c command's
    input (it reads the tool's)."""
    fd, path = tempfile.mkstemp(prefix="djp-oracle-", suffix=".json")
    os.close(fd)
    TEMPS.append(path)
    p = Proc([args.djp, "trace", "--json", "--buffer-size", DJP_RING, "-o", path] + mode + where + pats, env,
             stdin=stdin is not None)
    if stdin is not None:
        p.p.stdin.write(stdin.encode())
        p.p.stdin.close()
    p.events = path
    return p


def parse_djp(p, specs):
    run = Run("djp")
    with open(p.events, "rb") as f:
        out = f.read()
    for line in out.decode(errors="surrogateescape").split("\n"):
        if not line.startswith("{"):
            continue
        ev = json.loads(line)
        run.hits.append((ev["ts_ns"], ev["pid"], ev["tid"], 0, ev["name"], list(ev["args"].values())))
    return run


def number(v):
    if isinstance(v, int):
        return v
    return int(str(v), 0)


def canonical(run, specs, keep_pids):
    """The run's hits as (probe, values) in time order, numbers masked to
    their size, strings cut at STRLEN, pointers named by first appearance
    in their thread.  A hit of a thread other than the process's first is
    told apart ("thread"): the workloads call from their main thread only,
    a hit elsewhere is one the tool should not report."""
    byname = {s.name: s for s in specs}
    ptrs = {}
    out = []
    bad = []
    for t, pid, tid, ppid, name, vals in sorted(run.hits, key=lambda h: h[0]):
        if keep_pids is not None and pid not in keep_pids:
            continue
        s = byname.get(name)
        if s is None:  # a line probe's event at another row of the line
            s = next((x for x in specs if x.pattern.startswith("line:") and name.startswith(x.name + "+0x")), None)
            name = s.name if s else name
        if s is None:
            bad.append("%s printed a hit of %s, which was not asked for" % (run.tool, name))
            continue
        if s.ret and run.tool == "djp":  # the %return event: return=, after the parameters
            vals = [vals[-1]] if vals else []
        if len(vals) < len(s.kinds):
            bad.append("%s: %s: %d values where %d were asked for: %r" % (run.tool, name, len(vals), len(s.kinds), vals))
            continue
        cv = []
        for i, k in enumerate(s.kinds):
            v = vals[i]
            if k[0] == "s":
                if run.tool == "djp" and v == "(null)":
                    v = ""  # a NULL pointer: djp says so, str() reads nothing
                b = v.encode(errors="surrogateescape") if isinstance(v, str) else str(v).encode()
                cv.append(b[:STRLEN].decode(errors="replace"))
                continue
            try:
                n = number(v)
            except ValueError:
                bad.append("%s: %s: argument %d (%s) is not a number: %r" % (run.tool, name, i + 1, s.locs[i], v))
                n = None
            if n is None or k[0] == "r":
                cv.append("*")
                continue
            size, signed = s.size(i)
            n &= (1 << (8 * size)) - 1
            if signed and n >> (8 * size - 1):
                n -= 1 << (8 * size)
            if k[0] == "p":
                # a return hands out a new object, realloc's own address
                # included (whether it moves depends on the heap around it,
                # which the agent's allocations change); an argument names
                # the latest object at its address
                names = ptrs.setdefault(tid, {"n": 0, 0: "NULL"})
                if n not in names or (n and "%return" in name):
                    names["n"] += 1
                    names[n] = "ptr#%d" % names["n"]
                cv.append(names[n])
            else:
                cv.append(n)
        if tid != pid:
            name = name + " (thread)"
        out.append((pid, name, tuple(cv)))
    return out, bad


def show(v):
    return ('"%s"' % v) if isinstance(v, str) and not v.startswith("ptr#") and v not in ("*", "NULL") else (
        "%#x (%d)" % (v, v) if isinstance(v, int) else v)


def unread_by_bpftrace(s, only_d, only_b, all_d):
    """bpftrace's str() reads with bpf_probe_read_user_str(), which cannot
    fault a page in: a string on a page the process has not touched (or
    that was swapped out) comes back "" where djp, which reads it from the
    process, has it.  A bpftrace hit equal to a djp hit but for such ""
    strings is taken as that hit (in a set, as any djp hit that way)."""
    strs = [i for i, k in enumerate(s.kinds) if k[0] == "s"]

    def same_but_unread(b, d):
        return any(b[i] == "" and d[i] != "" for i in strs) and all(
            b[i] == d[i] or (i in strs and b[i] == "") for i in range(len(b)))

    keep_b, unread = [], 0
    for b in only_b:
        pool = only_d if s.compare == "multiset" else all_d
        m = next((d for d in pool if same_but_unread(b, d)), None) if strs else None
        if m is None:
            keep_b.append(b)
            continue
        unread += 1
        if s.compare == "multiset":
            only_d.remove(m)
        elif m in only_d:
            only_d.remove(m)
    return only_d, keep_b, unread


def compare(label, specs, djp_ev, bpf_ev, other="bpftrace"):
    """The differences, one line each (at most a few per probe), and how
    many probes and values were compared; other: who bpf_ev is from."""
    diffs = []
    nprobes = nvalues = 0
    for s, name in [(s, s.name + t) for s in specs for t in ("", " (thread)")]:
        d = [v for p, n, v in djp_ev if n == name]
        b = [v for p, n, v in bpf_ev if n == name]
        if s.compare == "set":
            dc, bc = collections.Counter(set(d)), collections.Counter(set(b))
        else:
            dc, bc = collections.Counter(d), collections.Counter(b)
        if (d or b) and name == s.name:
            nprobes += 1
        nvalues += sum(bc.values()) * len(s.kinds)
        only_d = sorted((dc - bc).elements(), key=repr)
        only_b = sorted((bc - dc).elements(), key=repr)
        only_d, only_b, unread = unread_by_bpftrace(s, only_d, only_b, set(d))
        if unread:
            note("%s: %s: %d hit(s) whose string bpftrace could not read (\"\"), djp did: taken as equal" %
                 (label, name, unread))
        if not only_d and not only_b:
            continue
        shown = 0
        for x, y in zip(only_d, only_b):
            for i, (xv, yv) in enumerate(zip(x, y)):
                if xv != yv and shown < 4:
                    diffs.append("%s: %s argument %d (%s): djp %s, %s %s" %
                                 (label, name, i + 1, s.locs[i] if i < len(s.locs) else "?", show(xv), other,
                                  show(yv)))
                    shown += 1
                    break
        n = min(len(only_d), len(only_b))
        extra_d, extra_b = only_d[n:], only_b[n:]
        for tool, extra, total in (("djp", extra_d, len(d)), (other, extra_b, len(b))):
            if extra:
                diffs.append("%s: %s: %s has %d hit(s) the other has not (%d %s in all, %d djp %d %s), e.g. (%s)" %
                             (label, name if s.pattern == s.name else "%s (%s)" % (name, s.pattern), tool, len(extra), total, s.compare, len(d), len(b), other,
                              ", ".join("%s (%s)=%s" % ("arg%d" % (i + 1), s.locs[i] if i < len(s.locs) else "?", show(v))
                                        for i, v in enumerate(extra[0]))))
        if not shown and not extra_d and not extra_b:
            diffs.append("%s: %s differs" % (label, name))
    return diffs, nprobes, nvalues


def lost_check(tool, text):
    m = re.search(r"Lost (\d+) events", text)
    if m and int(m.group(1)):
        raise Fail("%s lost %s events: a comparison needs all of them" % (tool, m.group(1)))


def djp_lost(err):
    """Lost and missed counts of the summary: they must be 0."""
    for m in re.finditer(r"process (\d+) .*: (\d+) events, (\d+) lost", err):
        if int(m.group(3)):
            raise Fail("djp lost %s events: %s" % (m.group(3), err[-800:]))


# ---- rows that run a command -----------------------------------------------------


# The system's files the private copies stand for: {copy: original}.
PRIVATE_OF = {}


def private_libs(row):
    """Copies of LIBC and LIBZ, and of the row's object where it is a
    library, in a directory of their own, loaded by the row's workload
    (LD_LIBRARY_PATH) and probed by bpftrace in their place: a uprobe is
    on a file, in every process that maps that file."""
    d = tempfile.mkdtemp(prefix="djp-oracle-libs-")
    atexit.register(shutil.rmtree, d, True)
    for key, path in (("libc", LIBC), ("libz", LIBZ)):
        UPROBE_LIB[key] = os.path.join(d, os.path.basename(path))
        shutil.copy(path, UPROBE_LIB[key])
        PRIVATE_OF[UPROBE_LIB[key]] = path
    obj = row.get("object")
    if obj and ".so" in os.path.basename(obj):
        row["object"] = os.path.join(d, os.path.basename(obj))
        shutil.copy(obj, row["object"])
        PRIVATE_OF[row["object"]] = obj
    row.setdefault("env", {})["LD_LIBRARY_PATH"] = d


def sdt_addresses(path, names):
    """The SDT probes of path named in names: their link-time addresses,
    less the address path's first segment is linked at (0 for a library
    or a PIE), so that they add to where it is mapped."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    m = re.search(r"^\s*LOAD\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)", out, re.M)
    first = int(m.group(1), 16) if m else 0
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    addrs, name = [], None
    for line in out.splitlines():
        m = re.match(r"\s*Name: (\S+)", line)
        if m:
            name = m.group(1)
        m = re.match(r"\s*Location: (0x[0-9a-f]+)", line)
        if m and name in names:
            addrs.append(int(m.group(1), 16) - first)
    return addrs


def load_base(path):
    """Where this process has the library at path (loaded here if it was
    not): the start of its mapping at file offset 0."""
    ctypes.CDLL(path)
    real = os.path.realpath(path)
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and os.path.realpath(fields[5]) == real and int(fields[2], 16) == 0:
                return int(fields[0].split("-")[0], 16)
    raise Fail("%s is not mapped in the oracle" % path)


def mapped_sdt_int3(path, name):
    """Does an SDT probe `name` of path begin with an int3 in a fresh
    executable mapping of the file?"""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    segs = [(int(o, 16), int(v, 16), int(n, 16)) for o, v, n in
            re.findall(r"^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)", out, re.M)]
    first = segs[0][1] if segs else 0
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
    try:
        for a in sdt_addresses(path, {name}):
            for off, vaddr, size in segs:
                if vaddr <= a + first < vaddr + size and m[a + first - vaddr + off] == 0xcc:
                    return True
    finally:
        m.close()
    return False


def program_base():
    """Where this process's program is: its mapping at file offset 0."""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == os.path.realpath("/proc/self/exe") and int(fields[2], 16) == 0:
                return int(fields[0].split("-")[0], 16)
    raise Fail("the oracle's own program is not in its maps")


def system_breakpoints(specs):
    """The probed functions and SDT probes of the system's files that
    begin with an int3 in this process (which maps them) while bpftrace
    runs: its uprobes, in a process not its own.  bpftrace must probe the
    row's private copies (private_libs) or the program, never these."""
    hit = []
    for s in specs:
        path = PRIVATE_OF.get(s.obj, s.obj)
        this_program = os.path.realpath(path) == os.path.realpath("/proc/self/exe")
        if not path.startswith(("/lib/", "/usr/lib/")):
            continue
        if not this_program and ".so" not in os.path.basename(path):
            # a program of the system's (postgres): mapped here as the
            # kernel maps it to run it, which puts a uprobe's int3 in
            if not s.func and mapped_sdt_int3(path, s.name.split(":")[-1]):
                hit.append("%s in %s" % (s.name, path))
            continue
        if this_program:
            if s.func:
                continue
            addrs = [program_base() + a for a in sdt_addresses(path, {s.name.split(":")[-1]})]
        elif s.func:
            lib = ctypes.CDLL(path)
            if not hasattr(lib, s.func):
                continue
            addrs = [ctypes.cast(getattr(lib, s.func), ctypes.c_void_p).value]
        else:
            base = load_base(path)
            addrs = [base + a for a in sdt_addresses(path, {s.name.split(":")[-1]})]
        if any(ctypes.string_at(a, 1) == b"\xcc" for a in addrs):
            hit.append("%s in %s" % (s.func or s.name, path))
    return hit


def bpftrace_for(specs, pid, tree=False):
    """bpftrace, its probes on their files (in every process that maps
    one), printing pid's hits, its probes in."""
    b = Proc([BPFTRACE, "-e", bpftrace_program(specs, only=pid, tree=tree)])
    if not b.wait_for(b"oracle-begin", "out", 60):
        b.finish(10, signal.SIGINT)
        raise Fail("bpftrace did not start: %s" % b.err.decode(errors="replace")[-800:])
    hit = system_breakpoints(specs)
    if hit:
        b.finish(10, signal.SIGINT)
        raise Fail("bpftrace's uprobes are in every process that maps the system's files (%s): a process "
                   "another tool armed with jumps there dies on them" % ", ".join(sorted(set(hit))))
    return b


def bpftrace_end(b):
    """Stop b once it has printed the process's exit: its hits are out."""
    if not b.wait_for(b"oracle-end", "out", 60):
        raise Fail("bpftrace did not see the process exit: %s" % b.err.decode(errors="replace")[-800:])
    b.finish(60, signal.SIGINT)


def run_bpftrace_cmd(args, row, specs):
    argv = row["argv"](args)
    env = dict(row.get("env", {}))
    workload_out = b""
    if row.get("attach"):
        t = Proc(argv, env, stdin=True)
        if not t.wait_for(b"ready", "out", 20):
            raise Fail("%s did not start: %s" % (argv[0], t.err.decode(errors="replace")))
        # not -p: bpftrace 0.17 given -p reports its own calls of a
        # library's functions, not the process's
        b = bpftrace_for(specs, t.p.pid)
        t.p.stdin.write(b"go\n")
        t.p.stdin.close()
        if t.finish(60):
            raise Fail("%s failed under bpftrace: %s" % (argv[0], t.err.decode(errors="replace")))
        bpftrace_end(b)
        keep = {t.p.pid}
    elif row.get("stdin") is not None or row.get("object") != argv[0]:
        # probes in a library (bpftrace -c looks for them in the command
        # before it has loaded any), or a workload reading commands: the
        # probes go on the file, the process waits in a shell for
        # bpftrace's BEGIN and execs the workload
        t = Proc(["/bin/sh", "-c", 'read go && exec "$@"', "sh"] + argv, env, stdin=True)
        b = bpftrace_for(specs, t.p.pid)
        t.p.stdin.write(b"go\n" + row.get("stdin", "").encode())
        t.p.stdin.close()
        if t.finish(60):
            raise Fail("%s failed under bpftrace: %s" % (argv[0], t.err.decode(errors="replace")))
        bpftrace_end(b)
        keep = {t.p.pid}
        workload_out = t.out
    else:
        # probes in the program itself: on that process only (its stdout
        # is bpftrace's: the workload must write nothing there)
        b = Proc([BPFTRACE, "-c", " ".join(argv), "-e", bpftrace_program(specs, True)], env)
        if b.wait_for(b"oracle-begin", "out", 60):
            hit = system_breakpoints(specs)
            if hit:
                b.finish(10, signal.SIGINT)
                raise Fail("bpftrace's uprobes are in every process that maps the system's files (%s): a "
                           "process another tool armed with jumps there dies on them" % ", ".join(sorted(set(hit))))
        st = b.finish(120)
        m = re.search(rb"oracle-begin (\d+)", b.out)
        if st or not m:
            raise Fail("bpftrace -c %s: exit %s: %s" % (" ".join(argv), st, b.err.decode(errors="replace")[-800:]))
        keep = {int(m.group(1))}
    lost_check("bpftrace", b.out.decode(errors="replace") + b.err.decode(errors="replace"))
    run = parse_bpftrace(b.out, specs)
    run.pids = keep
    run.workload_out = workload_out
    return run


def bpftrace_reads(s):
    """Can bpftrace read the arguments of SDT probe s?  (It refuses the
    whole program for one location it does not parse.)"""
    prog = bpftrace_program([s]).replace('BEGIN {', 'BEGIN { exit();', 1)
    b = Proc([BPFTRACE, "-e", prog])
    return b.finish(60) == 0


def parse_expected(out, specs):
    """The workload's own account of its probes' arguments, a line a
    firing: "PROBE V1 V2 ..." in decimal."""
    run = Run("the program")
    names = {s.name for s in specs}
    for i, line in enumerate(out.decode(errors="replace").splitlines()):
        f = line.split()
        if f and f[0] in names:
            run.hits.append((i, 0, 0, 0, f[0], f[1:]))
    return run


def run_djp_cmd(args, row, specs, mode):
    argv = row["argv"](args)
    env = dict(row.get("env", {}))
    pats = djp_patterns(specs)
    if row.get("attach"):
        t = Proc(argv, env, stdin=True)
        if not t.wait_for(b"ready", "out", 20):
            raise Fail("%s did not start: %s" % (argv[0], t.err.decode(errors="replace")))
        d = djp_trace(args, mode, ["-x", str(t.p.pid)], pats)
        wait_armed(args, t.p.pid, specs, d)
        t.p.stdin.write(b"go\n")
        t.p.stdin.close()
        if t.finish(60):
            raise Fail("%s failed under djp: %s" % (argv[0], t.err.decode(errors="replace")))
        st = d.finish(60)
    else:
        d = djp_trace(args, mode, ["-c", " ".join(argv)], pats, env, row.get("stdin"))
        st = d.finish(120)
    err = d.err.decode(errors="replace")
    if st:
        raise Fail("djp trace %s: exit %d: %s" % (" ".join(mode), st, err[-1500:]))
    djp_lost(err)
    return parse_djp(d, specs)


def wait_armed(args, pid, specs, d):
    """Until the first byte of each function the tool probes differs from
    the file's (a jump or an int3): the tool connects one pattern at a
    time, and the workload must not start before the last."""
    want = {}
    for s in specs:
        if s.func and not s.ret:
            want[s.func] = s.obj
    end = time.monotonic() + 30
    while time.monotonic() < end:
        left = 0
        for fn, obj in want.items():
            addr = func_addr(pid, obj, fn)
            with open("/proc/%d/mem" % pid, "rb") as m:
                m.seek(addr)
                if m.read(1) == file_byte(obj, fn):
                    left += 1
        if not left:
            return
        time.sleep(0.05)
        if d.p.poll() is not None:
            break
    raise Fail("djp trace -x did not arm the functions: %s" % d.err.decode(errors="replace")[-800:])


_syms = {}


def symbol(obj, fn):
    """The value of fn's symbol in obj (dynamic first, then the symbol
    table): its entry, which in these objects is also its file offset."""
    if (obj, fn) not in _syms:
        for opt in (["-D"], []):
            out = subprocess.run(["nm"] + opt + ["--defined-only", obj], capture_output=True, text=True).stdout
            for line in out.splitlines():
                f = line.split()
                if len(f) == 3 and f[2].split("@")[0] == fn and f[1] in "TtiWw":
                    _syms[(obj, fn)] = int(f[0], 16)
                    break
            if (obj, fn) in _syms:
                break
        else:
            raise Fail("%s: no function %s" % (obj, fn))
    return _syms[(obj, fn)]


def file_byte(obj, fn):
    # shared objects here map their text at file offset == address
    with open(obj, "rb") as f:
        f.seek(symbol(obj, fn))
        return f.read(1)


def func_addr(pid, obj, fn):
    """The run-time address of fn: in the executable mapping of obj that
    holds its file offset (a reader may have mapped the file too)."""
    real = os.path.realpath(obj)
    off = symbol(obj, fn)
    with open("/proc/%d/maps" % pid) as m:
        for line in m:
            f = line.split()
            if len(f) < 6 or "x" not in f[1] or os.path.realpath(f[5]) != real:
                continue
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            if int(f[2], 16) <= off < int(f[2], 16) + hi - lo:
                return lo + off - int(f[2], 16)
    raise Fail("process %d has no %s mapped" % (pid, obj))


# ---- PostgreSQL ------------------------------------------------------------------


class Cluster:
    """One initialised cluster (pgbench -i), copied afresh for each run."""

    def __init__(self):
        if not os.access(PGBIN + "/pgbench", os.X_OK):
            raise Fail("%s/pgbench is missing (make check installs postgresql-15)" % PGBIN)
        self.pw = pwd.getpwnam("postgres")
        self.top = tempfile.mkdtemp(prefix="djp-oracle-pg-")
        os.chown(self.top, self.pw.pw_uid, self.pw.pw_gid)
        self.seed = os.path.join(self.top, "seed")
        self.port = 20000 + os.getpid() % 20000
        self.as_pg([PGBIN + "/initdb", "-D", self.seed])
        srv = self.start(self.seed)
        self.as_pg([PGBIN + "/pgbench", "-h", self.seed, "-p", str(self.port), "-i", "postgres"], retry=True)
        self.stop(srv, self.seed)

    def as_pg(self, argv, retry=False):
        for _ in range(100 if retry else 1):
            r = subprocess.run(["runuser", "-u", "postgres", "--"] + argv, capture_output=True, text=True)
            if r.returncode == 0:
                return r.stdout
            time.sleep(0.2)
        raise Fail("%s: %s" % (" ".join(argv[:2]), r.stderr.strip()[-500:]))

    def private_postgres(self):
        """A copy of postgres for bpftrace's probes (see the top), in a tree
        laid out as the system's: postgres finds its lib and share
        directories relative to where it runs from."""
        tree = os.path.join(self.top, "tree")
        bindir = tree + PGBIN
        os.makedirs(bindir)
        shutil.copy(PGBIN + "/postgres", bindir + "/postgres")
        os.symlink(os.path.dirname(PGBIN) + "/lib", os.path.dirname(bindir) + "/lib")
        share = "/usr/share/postgresql/" + os.path.basename(os.path.dirname(PGBIN))
        os.makedirs(os.path.dirname(tree + share), exist_ok=True)
        os.symlink(share, tree + share)
        PRIVATE_OF[bindir + "/postgres"] = PGBIN + "/postgres"
        self.postgres = bindir + "/postgres"
        return self.postgres

    def server(self, d, postgres=PGBIN + "/postgres"):
        return ["runuser", "-u", "postgres", "--", postgres, "-D", d, "-k", d, "-p", str(self.port),
                "-c", "listen_addresses=", "-c", "autovacuum=off"]

    def start(self, d):
        return Proc(self.server(d))

    def postmaster(self, d):
        with open(os.path.join(d, "postmaster.pid")) as f:
            return int(f.readline())

    def stop(self, p, d):
        """A fast shutdown (runuser passes no signal on)."""
        os.kill(self.postmaster(d), signal.SIGINT)
        if p.finish(60):
            raise Fail("the server failed: %s" % p.err.decode(errors="replace")[-500:])

    def fresh(self, name):
        d = os.path.join(self.top, name)
        subprocess.run(["cp", "-a", self.seed, d], check=True)
        return d

    def bench(self, d, log):
        """pgbench once the server says it is ready (log: the Proc whose
        stderr has the server's): a connection refused and retried would
        add the queries of its start to one run and not the other."""
        if not log.wait_for(b"ready to accept connections", "err", 60):
            raise Fail("the server did not start: %s" % log.err.decode(errors="replace")[-800:])
        out = self.as_pg([PGBIN + "/pgbench", "-h", d, "-p", str(self.port), "-c", "1", "-t", "50",
                          "--random-seed=7", "postgres"])
        if "number of transactions actually processed: 50/50" not in out:
            raise Fail("pgbench: %s" % out[-500:])

    def remove(self):
        shutil.rmtree(self.top, ignore_errors=True)


def run_bpftrace_pg(args, cl, specs):
    """The server waits in a shell for bpftrace's BEGIN, then the shell
    execs runuser, which forks the postmaster, which forks the backends:
    bpftrace prints the hits of that tree only (other servers may run)."""
    d = cl.fresh("bpftrace")
    copy = cl.private_postgres()
    for s in specs:
        if s.obj == PGBIN + "/postgres":
            s.obj = copy
    srv = Proc(["/bin/sh", "-c", 'read go && exec "$@"', "sh"] + cl.server(d, cl.postgres), stdin=True)
    b = bpftrace_for(specs, srv.p.pid, tree=True)
    srv.p.stdin.write(b"go\n")
    srv.p.stdin.close()
    cl.bench(d, srv)
    pm = cl.postmaster(d)
    cl.stop(srv, d)
    bpftrace_end(b)
    lost_check("bpftrace", b.out.decode(errors="replace") + b.err.decode(errors="replace"))
    run = parse_bpftrace(b.out, specs)
    run.pids = {pm} | {h[1] for h in run.hits if h[3] == pm}
    return run


def run_djp_pg(args, cl, specs, mode):
    d = cl.fresh("djp" + "".join(mode).replace("-", ""))
    p = djp_trace(args, mode, ["-c", " ".join(cl.server(d))], djp_patterns(specs))
    cl.bench(d, p)
    os.kill(cl.postmaster(d), signal.SIGINT)  # the trace ends with the server
    st = p.finish(60)
    err = p.err.decode(errors="replace")
    if st:
        raise Fail("djp trace %s: exit %d: %s" % (" ".join(mode), st, err[-1500:]))
    djp_lost(err)
    return parse_djp(p, specs)


def backend_only(ev, specs):
    """proc == "backend" probes keep the hits of the processes that ran
    queries (the pgbench connection's backend)."""
    backends = {p for p, n, v in ev if n == "postgresql:query__start"}
    procs = {s.name: s.proc for s in specs}
    return [e for e in ev if procs[e[1].split(" ")[0]] != "backend" or e[0] in backends]


# ---- a row ---------------------------------------------------------------------


def run_row(args, name):
    row = ROWS[name]
    if row.get("optional"):
        prog = row["argv"](args)[0]
        if not os.path.exists(prog):
            note("%s: %s is not built here: row not run" % (name, os.path.relpath(prog, args.build)))
            return 0, 0, []
    if row.get("needs_notes"):
        out = subprocess.run(["readelf", "-n", row["object"]], capture_output=True, text=True).stdout
        if "stapsdt" not in out:
            note("%s: %s has no SDT probes (this glibc was built without them): row not run" % (name, row["object"]))
            return 0, 0, []
    if row.get("private_libs"):
        private_libs(row)
    specs = resolve(args, row)
    if not specs:
        raise Fail("%s: no probe of the row is in %s" % (name, row.get("object")))
    bspecs = list(specs)
    if row.get("expect"):
        bspecs = [s for s in specs if bpftrace_reads(s)]
        for s in specs:
            if s not in bspecs:
                note("%s: bpftrace cannot read %s (%s): compared with the program's own values only" %
                     (name, s.name, " ".join(s.locs)))
    cl = None
    try:
        if row.get("postgres"):
            cl = Cluster()
            bpf = run_bpftrace_pg(args, cl, bspecs)
        else:
            bpf = run_bpftrace_cmd(args, row, bspecs)
        bev, bad = canonical(bpf, bspecs, bpf.pids)
        if bad:
            raise Fail("\n".join(bad[:10]))
        if row.get("expect"):
            want, bad = canonical(parse_expected(bpf.workload_out, specs), specs, None)
            if bad or not want:
                raise Fail("the program's own values: %s" % ("\n".join(bad[:10]) or "none printed"))
            # bpftrace is held to the program too: where they differ,
            # bpftrace is wrong (0.17 reads sym(%rip) of a PIE from the
            # wrong base), and djp is compared with the program only
            for s in list(bspecs):
                d, _, _ = compare(name, [s], bev, want, other="the program")
                if d:
                    note("%s: bpftrace misreads %s, compared with the program's own values only: %s" %
                         (name, s.name, d[0].replace("djp", "bpftrace", 1)))
                    bspecs.remove(s)
        diffs = []
        nprobes = nvalues = 0
        for mlabel, mode in MODES:
            if args.only_mode and mlabel != args.only_mode:
                continue
            dj = run_djp_pg(args, cl, specs, mode) if cl else run_djp_cmd(args, row, specs, mode)
            dev, bad = canonical(dj, specs, None)
            if bad:
                diffs += ["%s %s: %s" % (name, mlabel, b) for b in bad[:10]]
                continue
            if cl:
                dev, bev2 = backend_only(dev, specs), backend_only(bev, specs)
            else:
                bev2 = bev
            d, np, nv = compare("%s %s" % (name, mlabel), bspecs, dev, bev2)
            diffs += d
            nprobes, nvalues = max(nprobes, np), nvalues + nv
            note("%s %s: %d probes, %d hits of djp, %d of bpftrace, %d values compared, %d differences" %
                 (name, mlabel, np, len(dev), len(bev2), nv, len(d)))
            if row.get("expect"):
                d, np, nv = compare("%s %s" % (name, mlabel), specs, dev, want, other="the program")
                diffs += d
                nprobes, nvalues = max(nprobes, np), nvalues + nv
                note("%s %s: %d probes, %d hits of djp, %d the program printed, %d values compared, "
                     "%d differences" % (name, mlabel, np, len(dev), len(want), nv, len(d)))
        return nprobes, nvalues, diffs
    finally:
        if cl:
            cl.remove()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--only-mode")
    ap.add_argument("rows", nargs="+")
    args = ap.parse_args()
    args.djp = os.path.join(args.build, "djp")
    for tool in (BPFTRACE,):
        if not os.access(tool, os.X_OK):
            print("oracle: %s is missing (make check installs bpftrace)" % tool, file=sys.stderr)
            return 1
    total_p = total_v = 0
    fails = []
    for r in args.rows:
        try:
            p, v, d = run_row(args, r)
        except Fail as e:
            d, p, v = ["%s: %s" % (r, e)], 0, 0
        finally:
            for t in TEMPS:
                if os.path.exists(t):
                    os.unlink(t)
        total_p += p
        total_v += v
        fails += d
    for f in fails:
        print(f, file=sys.stderr)
    note("oracle: %d probes and %d values compared (%s), %d differences" %
         (total_p, total_v, " ".join(args.rows), len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
