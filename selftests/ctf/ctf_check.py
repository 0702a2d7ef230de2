#!/usr/bin/python3
"""Read a CTF trace `djp trace -f ctf` wrote with babeltrace2's Python
bindings (Debian's python3-bt2) and check it against the text and JSON
lines and the summary the same run printed:

  ctf_check.py DIR TEXT JSON SUMMARY

Every event of the trace must be a line of both, in the order its seq
says, and every line an event: its time (the clock's value, CLOCK_MONOTONIC
ns), pid and tid (vpid and vtid), CPU and name; each field's name, in
order, and value (the JSON's numbers equal, its hex and octal strings
equal the integer, its strings equal the string); the field's class
signed where the value is negative, shown in hex where the text is; the
event's thread that of its packet (a stream a thread), and its time on
the wall clock (the clock's offset) within ten minutes of now: the trace
was just taken.  The
discarded events babeltrace2 reports, per stream (a thread: the packet
context's vpid and vtid), must be the LOST of the summary's THREAD rows,
and add up to the total of its process lines.

Prints one line of what was compared; exits 1 with every difference.
"""
import json
import re
import sys
import time

import bt2


def summary_losses(path):
    """{(pid, tid): lost} of the summary's THREAD rows (tid -1: no ring
    slot), and the sum of its process lines' "N lost"."""
    losses, total, pid, rows = {}, 0, None, False
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.match(r"djp trace: process (\d+) \(.*\): \d+ events, (\d+) lost", line)
        if m:
            pid, rows = int(m.group(1)), False
            total += int(m.group(2))
            continue
        m = re.match(r"djp trace: (\d+) lost because no ring slot was free", line)
        if m and pid is not None:
            losses[(pid, -1)] = losses.get((pid, -1), 0) + int(m.group(1))
            continue
        if line.startswith("  THREAD "):
            rows = True
            continue
        m = re.match(r"^\s+(\d+)\s+(\d+)\s+(\d+)$", line)
        if rows and m:
            if int(m.group(3)):  # a pid and tid used again add up, as in their stream
                key = (pid, int(m.group(1)))
                losses[key] = losses.get(key, 0) + int(m.group(3))
            continue
        rows = False
    return losses, total


def main():
    trace, text_path, json_path, summary_path = sys.argv[1:5]
    texts = open(text_path, "rb").read().decode("utf-8").split("\n")[:-1]
    jsons = [json.loads(l) for l in open(json_path, "rb").read().decode("utf-8").split("\n")[:-1]]
    errors, fields, seen = [], 0, set()
    stream_thread, discarded = {}, {}

    def err(msg):
        if len(errors) < 50:
            errors.append(msg)

    if len(texts) != len(jsons):
        err("the text has %d lines, the JSON %d" % (len(texts), len(jsons)))
    for msg in bt2.TraceCollectionMessageIterator(trace):
        if type(msg) is bt2._PacketBeginningMessageConst:
            ctx = msg.packet.context_field
            stream_thread[msg.packet.stream.addr] = (int(ctx["vpid"]), int(ctx["vtid"]))
            continue
        if type(msg) is bt2._DiscardedEventsMessageConst:
            if msg.count is None:
                err("stream %s: discarded events without a count" % msg.stream.name)
            else:
                key = msg.stream.addr
                discarded[key] = discarded.get(key, 0) + msg.count
            continue
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        ctx = ev.common_context_field
        seq = int(ctx["seq"])
        where = "event seq %d (%s)" % (seq, ev.name)
        if seq in seen or seq >= len(texts):
            err("%s: no line of the text is its (%d lines)" % (where, len(texts)))
            continue
        seen.add(seq)
        ts = msg.default_clock_snapshot.value
        wall = msg.default_clock_snapshot.ns_from_origin / 1e9
        if abs(wall - time.time()) > 600:
            err("%s: at %s on the wall clock, now is %s" % (where, time.ctime(wall), time.ctime()))
        if stream_thread.get(ev.packet.stream.addr) not in (None, (ctx["vpid"], ctx["vtid"])):
            err("%s: thread %d/%d in a packet of %s" % (where, ctx["vpid"], ctx["vtid"],
                                                        stream_thread.get(ev.packet.stream.addr)))
        head = "%d.%09d %d %d %s" % (ts // 10**9, ts % 10**9, ctx["vpid"], ctx["vtid"], ev.name)
        line, js = texts[seq], jsons[seq]
        if line != head and not line.startswith(head + " "):
            err("%s: the text says %r, the trace %r" % (where, line[:200], head))
        if (js["ts_ns"], js["pid"], js["tid"], js["name"]) != (ts, ctx["vpid"], ctx["vtid"], ev.name):
            err("%s: the JSON says %r" % (where, js))
        if js.get("cpu", -1) != ctx["cpu_id"]:
            err("%s: cpu %r, the trace %d" % (where, js.get("cpu"), ctx["cpu_id"]))
        payload = ev.payload_field
        names = list(payload.keys())
        if names != list(js["args"].keys()):
            err("%s: fields %s, the JSON's %s" % (where, names, list(js["args"].keys())))
            continue
        for name in names:
            fields += 1
            want, got = js["args"][name], payload[name]
            cls = payload.cls[name].field_class
            if isinstance(got, bt2._StringFieldConst):
                ok = isinstance(want, str) and str(got) == want
            elif isinstance(want, int):
                ok = int(got) == want and (want >= 0 or isinstance(cls, bt2._SignedIntegerFieldClassConst))
            elif want.lower().startswith("0x"):
                ok = int(got) == int(want, 16) and cls.preferred_display_base == 16
            elif want.startswith("0") and want.isdigit():
                ok = int(got) == int(want, 8) and cls.preferred_display_base == 8
            else:
                ok = False
            if not ok:
                err("%s: field %s is %r in the trace, %r in the JSON" % (where, name, got, want))
    if len(seen) != len(texts):
        err("the trace has %d events, the text %d lines" % (len(seen), len(texts)))
    losses, total = summary_losses(summary_path)
    by_thread = {}
    for addr, n in discarded.items():
        if addr not in stream_thread:
            err("discarded events in a stream with no packet context")
            continue
        by_thread[stream_thread[addr]] = by_thread.get(stream_thread[addr], 0) + n
    if by_thread != losses:
        err("discarded events by thread %s, the summary's %s" % (sorted(by_thread.items()), sorted(losses.items())))
    if sum(by_thread.values()) != total:
        err("%d discarded events, the summary's total %d" % (sum(by_thread.values()), total))
    if errors:
        print("\n".join(errors), file=sys.stderr)
        sys.exit(1)
    print("ctf_check: %d events, %d fields, %d discarded in %d threads: equal to the text, the JSON and the summary"
          % (len(seen), fields, sum(by_thread.values()), len(by_thread)))


if __name__ == "__main__":
    main()
