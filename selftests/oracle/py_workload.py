# The oracle's python workload: function calls and returns, lines, full
# collections and imports, the same every run under PYTHONHASHSEED=0 and
# python3.11 -S (no site: nothing of the machine's installed packages).
import gc
import sys


def leaf(n):
    return n * 2 + 1


def branch(n):
    total = 0
    for i in range(n):
        total += leaf(i)
    return total


class Node:
    def __init__(self, peer):
        self.peer = peer


def cycles(n):
    # reference cycles only a full collection frees: gc__done counts them
    for _ in range(n):
        a = Node(None)
        b = Node(a)
        a.peer = b


for round in range(5):
    branch(round + 3)
    cycles(10 * round)
    gc.collect(2)

import json  # noqa: E402  imports after the first collections on purpose
import textwrap  # noqa: E402

# on stderr: under bpftrace -c, stdout is bpftrace's
print(json.dumps({"sum": branch(7)}), textwrap.shorten("oracle workload", 20), file=sys.stderr)
