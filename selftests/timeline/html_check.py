#!/usr/bin/python3
"""Check the page `djp trace --html` wrote, as a browser draws it.

  html_check.py PAGE.html [--marker NAME=N]... [--slice NAME=N]...
                [--lost NAME=N]...

Renders PAGE in headless Chromium (--dump-dom: the document after its
script ran) and reads what it drew: the markers are exactly those of
--marker, each a section with N events said in its count and N in the
bars of its rate chart; each --slice a section whose histogram bars add
up to N slices; --lost: N events marked lost on NAME's chart (those not
named: none).  Prints what it checked; exits 1 with the first difference.
"""
import collections
import html.parser
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("html_check: " + msg)
    sys.exit(1)


def plural(n, what):
    return "%d %s%s" % (n, what, "" if n == 1 else "s")


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.sections = []
        self.drawn = False
        self.total = None
        self.cur = None
        self.in_count = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "body" and a.get("data-drawn") == "1":
            self.drawn = True
        if tag == "span" and a.get("id") == "total":
            self.total = int(a["data-count"])
        if tag == "section":
            self.cur = {"kind": cls[0], "name": a.get("data-marker") or a.get("data-slice"),
                        "count": int(a["data-count"]), "lost_attr": int(a.get("data-lost", 0)),
                        "bins": 0, "bars": 0, "lost": 0, "count_text": None, "nbars": 0}
            self.sections.append(self.cur)
        if self.cur is None:
            return
        if tag == "rect" and "bin" in cls:
            self.cur["bins"] += int(a["data-count"])
        if tag == "rect" and "bar" in cls:
            self.cur["bars"] += int(a["data-count"])
            self.cur["nbars"] += 1
        if tag == "line" and "lost" in cls:
            self.cur["lost"] += int(a["data-lost"])
        self.in_count = tag == "span" and "count" in cls

    def handle_data(self, data):
        if self.in_count and self.cur is not None:
            self.cur["count_text"] = data.strip()
            self.in_count = False

    def handle_endtag(self, tag):
        if tag == "section":
            self.cur = None


def main(argv):
    page = os.path.abspath(argv[1])
    opts = collections.defaultdict(dict)
    for i in range(2, len(argv), 2):
        name, n = argv[i + 1].rsplit("=", 1)
        opts[argv[i]][name] = int(n)
    with tempfile.TemporaryDirectory(prefix="djp-chromium-") as profile:
        try:
            r = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--user-data-dir=" + profile, "--dump-dom", "file://" + page],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=240)
        except FileNotFoundError:
            fail("no chromium: make check installs it (the Debian package chromium)")
    if r.returncode != 0:
        fail("chromium exited %d: %s" % (r.returncode, r.stderr.decode(errors="replace")[-2000:]))
    p = Page()
    p.feed(r.stdout.decode())
    if not p.drawn:
        fail("the page's script did not run to its end (no data-drawn on body)")
    markers = dict((s["name"], s) for s in p.sections if s["kind"] == "marker")
    slices = dict((s["name"], s) for s in p.sections if s["kind"] == "latency")
    if set(markers) != set(opts["--marker"]):
        fail("the page charts markers %s, not %s" % (sorted(markers), sorted(opts["--marker"])))
    for name, n in opts["--marker"].items():
        s = markers[name]
        if (s["count"], s["bins"], s["count_text"]) != (n, n, plural(n, "event")):
            fail("marker %s: count %d, %d in its chart's bars, says %r; %d expected" %
                 (name, s["count"], s["bins"], s["count_text"], n))
        lost = opts["--lost"].get(name, 0)
        if (s["lost"], s["lost_attr"]) != (lost, lost):
            fail("marker %s: %d marked lost on its chart (%d said); %d expected" %
                 (name, s["lost"], s["lost_attr"], lost))
        print("# marker %s: %d events, in its count and its chart's bars; %d lost marked" % (name, n, lost))
    if p.total != sum(opts["--marker"].values()):
        fail("the overview says %s events" % p.total)
    if set(slices) != set(opts["--slice"]):
        fail("the page has histograms of %s, not %s" % (sorted(slices), sorted(opts["--slice"])))
    for name, n in opts["--slice"].items():
        s = slices[name]
        if (s["count"], s["bars"], s["count_text"]) != (n, n, plural(n, "slice")) or not s["nbars"]:
            fail("slice %s: count %d, %d in %d histogram bars, says %r; %d expected" %
                 (name, s["count"], s["bars"], s["nbars"], s["count_text"], n))
        print("# slice %s: %d in %d histogram bars" % (name, n, s["nbars"]))
    print("# ok")


if __name__ == "__main__":
    main(sys.argv)
