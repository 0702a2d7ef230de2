#!/usr/bin/python3
"""Check a trace `djp trace --format=perfetto` wrote.

  perfetto_check.py FILE.json SCHEMA.json [--timeline R [--text TEXT]]
                    [--count NAME=N]... [--lost NAME=N]... [--process NAME]

Always: FILE is JSON (numbers read exactly, as decimals) that SCHEMA (a
JSON Schema of the trace-event format) accepts; every (pid, tid) with
events has a thread_name and its pid a process_name; on every thread the
B and E events nest, each E closing the innermost B of its name no
earlier than it began; every async b has its e (same cat, id, name,
pid), no earlier; timestamps are microseconds with three decimals (ns).

--timeline R: the trace of timeline_target R (selftests/trace_progs):
the two workers' tracks (named tl-worker-1 and -2) hold exactly the
events it makes, in order, with their arguments; each tl_work slice
returns id * 10 + depth and holds the slice of the call it makes.
--text TEXT: djp trace's text output of the same program (another run:
one run writes one format): each worker's lines, in order, are its
events in FILE, name for name (an END's as its pair's E) and field for
field, values as the text prints them.  --count NAME=N: N events named NAME (instant, B or b).
--lost NAME=N: the "lost events" instants of marker NAME add up to N, and
the counter of their process ends at the sum of all of them.  --process
NAME: the process_name of every process.

Prints what it checked; exits 1 with the first difference.
"""
import collections
import decimal
import json
import sys

try:
    import jsonschema
except ImportError:
    print("perfetto_check: no jsonschema: make check installs it (the Debian package python3-jsonschema)")
    sys.exit(1)


def fail(msg):
    print("perfetto_check: " + msg)
    sys.exit(1)


def ns(ts):
    """A ts in us (a Decimal with three decimals) as integer ns."""
    v = ts * 1000
    if v != v.to_integral_value():
        fail("ts %s is not a whole number of ns" % ts)
    return int(v)


def slices_end(pairs, b):
    return next(e["ns"] for c, e in pairs if c is b)


def text_threads(path):
    """djp trace's text lines, by worker (its first event's id // 100):
    [(name, {field: value as printed})]."""
    by_tid = collections.OrderedDict()
    with open(path) as f:
        for line in f:
            words = line.split()
            if len(words) < 4 or not words[3].startswith(("tl_", "func:tl_")):
                continue
            fields = dict(w.split("=", 1) for w in words[4:])
            by_tid.setdefault(words[2], []).append((words[3], fields))
    return dict((int(evs[0][1]["id"]) // 100, evs) for evs in by_tid.values())


# the event each JSON phase of timeline_target's trace stands for
END_OF = {"tl_lock": "tl_unlock", "tl_req_start": "tl_req_done", "func:tl_work": "func:tl_work%return"}


def compare_text(path, tracks):
    text = text_threads(path)
    for key, t in tracks.items():
        w = t[0]["args"]["id"] // 100
        lines = text.get(w, [])
        if len(lines) != len(t):
            fail("worker %d: %d events, %d lines in the text output" % (w, len(t), len(lines)))
        for e, (name, fields) in zip(t, lines):
            as_name = END_OF[e["name"]] if e["ph"] in "Ee" else e["name"]
            args = dict((k, str(v)) for k, v in e["args"].items())
            if (as_name, args) != (name, fields):
                fail("worker %d: %s %s where the text output has %s %s" % (w, as_name, args, name, fields))
    print("# the text output's lines of both workers, field for field: %d" % sum(len(t) for t in tracks.values()))


def timeline_model(w, requests):
    """What worker w of timeline_target makes, in order: (ph, name, args)."""
    seq = []
    for i in range(0, requests, 2):
        ids = [w * 100 + i, w * 100 + i + 1]
        for k, kind in enumerate(("get", "put")):
            seq.append(("b", "tl_req_start", {"id": ids[k], "kind": kind}))
        for k in range(2):
            seq.append(("B", "tl_lock", {"id": ids[k]}))
            for d in (2, 1, 0):
                seq.append(("B", "func:tl_work", {"id": ids[k], "depth": d}))
            for d in (0, 1, 2):
                seq.append(("i", "tl_step", {"id": ids[k], "depth": d}))
                seq.append(("E", "func:tl_work", {"return": ids[k] * 10 + d}))
            seq.append(("E", "tl_lock", {"id": ids[k]}))
        for k in range(2):
            seq.append(("e", "tl_req_start", {"id": ids[k], "status": 200 + k}))
    return seq


def main(argv):
    path, schema_path = argv[1], argv[2]
    opts = collections.defaultdict(list)
    for i in range(3, len(argv), 2):
        opts[argv[i]].append(argv[i + 1])
    with open(path) as f:
        trace = json.load(f, parse_float=decimal.Decimal)
    with open(schema_path) as f:
        schema = json.load(f)
    try:
        jsonschema.validate(trace, schema)
    except jsonschema.ValidationError as e:
        fail("the schema refuses the trace: %s at %s" % (e.message, list(e.absolute_path)))
    evs = trace["traceEvents"]
    print("# %d events, the schema accepts them" % len(evs))

    procs, threads = {}, {}
    for e in evs:
        if e["ph"] == "M":
            table = procs if e["name"] == "process_name" else threads
            key = e["pid"] if e["name"] == "process_name" else (e["pid"], e["tid"])
            if key in table:
                fail("%s named twice: %s" % (key, e))
            table[key] = e["args"]["name"]
    tracks = collections.defaultdict(list)
    for e in evs:
        if e["ph"] in "iBEbe":
            if e["ph"] != "i" or e["s"] == "t":
                tracks[(e["pid"], e["tid"])].append(e)
            e["ns"] = ns(e["ts"])
        if e["ph"] == "C":
            e["ns"] = ns(e["ts"])
    for pid, tid in tracks:
        if pid not in procs:
            fail("process %d has no process_name" % pid)
        if (pid, tid) not in threads:
            fail("thread %d of %d has no thread_name" % (tid, pid))
    for want in opts["--process"]:
        for pid, name in procs.items():
            if name != want:
                fail("process %d is named %r, not %r" % (pid, name, want))
    print("# %d processes, %d threads named" % (len(procs), len(threads)))

    # B/E nest on each thread; an E closes the innermost B, of its name.
    slices = collections.defaultdict(list)
    for key, t in tracks.items():
        t.sort(key=lambda e: e["ns"])  # stable: the file's order among equal ts
        stack = []
        for e in t:
            if e["ph"] == "B":
                stack.append(e)
            elif e["ph"] == "E":
                if not stack:
                    fail("an E with no B open on thread %s: %s" % (key, e))
                b = stack.pop()
                if b["name"] != e["name"]:
                    fail("E %r closes B %r on thread %s" % (e["name"], b["name"], key))
                if e["ns"] < b["ns"]:
                    fail("slice %r ends before it begins: %s, %s" % (b["name"], b, e))
                slices[b["name"]].append((b, e))
        if stack:
            fail("thread %s ends with %d slices open: %s" % (key, len(stack), stack[-1]))
    opened = {}
    async_n = collections.Counter()
    for e in sorted((e for e in evs if e["ph"] in "be"), key=lambda e: e["ns"]):
        key = (e["cat"], e["id"], e["name"], e["pid"])
        if e["ph"] == "b":
            if key in opened:
                fail("async slice %s begun twice" % (key,))
            opened[key] = e
        else:
            if key not in opened:
                fail("async slice %s ends without its b" % (key,))
            if e["ns"] < opened.pop(key)["ns"]:
                fail("async slice %s ends before it begins" % (key,))
            async_n[e["name"]] += 1
    if opened:
        fail("async slices never ended: %s" % list(opened))
    print("# slices nest: %s; async: %s" % (dict((k, len(v)) for k, v in slices.items()), dict(async_n)))

    for spec in opts["--count"]:
        name, n = spec.split("=")
        got = sum(1 for e in evs if e["name"] == name and e["ph"] in "iBb" and
                  not (e["ph"] == "i" and e["s"] != "t"))
        if got != int(n):
            fail("%d events named %s, not %s" % (got, name, n))
        print("# %s: %d events" % (name, got))

    lost = collections.Counter()
    for e in evs:
        if e["ph"] == "i" and e["name"] == "lost events":
            lost[e["args"]["marker"]] += e["args"]["lost"]
    for spec in opts["--lost"]:
        name, n = spec.split("=")
        if lost[name] != int(n):
            fail("lost events of %s add up to %d, not %s" % (name, lost[name], n))
        print("# %s: %d lost, on the timeline" % (name, lost[name]))
    for pid in procs:
        counter = sorted((e for e in evs if e["ph"] == "C" and e["pid"] == pid), key=lambda e: e["ns"])
        values = [c["args"]["lost"] for c in counter]
        if values != sorted(values):
            fail("the lost counter of %d goes down: %s" % (pid, values))
        total = sum(e["args"]["lost"] for e in evs if e["ph"] == "i" and e["name"] == "lost events" and
                    e["pid"] == pid)
        if (values[-1] if values else 0) != total:
            fail("the lost counter of %d ends at %s, its losses add up to %d" % (pid, values[-1:], total))

    if opts["--timeline"]:
        requests = int(opts["--timeline"][0])
        seen = set()
        for key, t in tracks.items():
            w = t[0]["args"]["id"] // 100
            if w not in (1, 2) or w in seen:
                fail("thread %s is no worker of timeline_target: %s" % (key, t[0]))
            seen.add(w)
            if threads[key] != "tl-worker-%d" % w:
                fail("thread %s is named %r, not tl-worker-%d" % (key, threads[key], w))
            model = timeline_model(w, requests)
            if len(t) != len(model):
                fail("worker %d: %d events, timeline_target makes %d" % (w, len(t), len(model)))
            for got, (ph, name, args) in zip(t, model):
                have = dict((k, got["args"].get(k)) for k in args)
                if (got["ph"], got["name"], have) != (ph, name, args):
                    fail("worker %d: %s where timeline_target makes %s" % (w, got, (ph, name, args)))
        if seen != {1, 2}:
            fail("workers seen: %s" % seen)
        work = slices["func:tl_work"]
        for b, e in work:
            if e["args"]["return"] != b["args"]["id"] * 10 + b["args"]["depth"]:
                fail("tl_work(%s) returned %s" % (b["args"], e["args"]))
            inner = [c for c, r in work if c["tid"] == b["tid"] and c["args"]["id"] == b["args"]["id"] and
                     c["args"]["depth"] == b["args"]["depth"] - 1]
            if b["args"]["depth"] and not (len(inner) == 1 and b["ns"] <= inner[0]["ns"] and
                                           slices_end(work, inner[0]) <= e["ns"]):
                fail("tl_work(%s)'s slice does not hold the call it makes" % b["args"])
        if opts["--text"]:
            compare_text(opts["--text"][0], tracks)
        print("# both workers: every event, in order, with its arguments; %d calls of tl_work, "
              "each holding the call it makes" % len(work))
    print("# ok")


if __name__ == "__main__":
    main(sys.argv)
