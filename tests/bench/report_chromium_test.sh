#!/usr/bin/env bash
# The HTML report in a real browser: renders tests/data/bench_report_sample.json with
# `triad report --html`, loads it in headless Chromium (Debian's `chromium`), and checks the DOM
# it built: every chart is an <svg> with its <title>, the tables are there with their rows. Then
# takes a screenshot (OUT/report.png, 1400x3000) and checks that it is not blank and that the
# charts' colours were painted. Skipped (77) only when chromium is not installed.
# Usage: report_chromium_test.sh TRIAD_BINARY SOURCE_DIR OUT_DIR
set -u
TRIAD=$1
SRC=$2
OUT=$3
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $CHROMIUM ]]; then
  echo "SKIP: chromium is not installed (scripts/setup.sh installs Debian's chromium)"
  exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd) # file:// URLs need an absolute path
rm -f "$OUT/report.html" "$OUT/dom.html" "$OUT/report.png"

"$TRIAD" report "$SRC/tests/data/bench_report_sample.json" --html "$OUT/report.html" || {
  echo "FAIL: triad report --html"; exit 1; }

# The page's SVGs are well-formed XML on their own (a browser would forgive what XML does not).
python3 - "$OUT/report.html" <<'PYEOF' || exit 1
import re, sys, xml.etree.ElementTree as ET
page = open(sys.argv[1], encoding="utf-8").read()
svgs = re.findall(r"<svg\b.*?</svg>", page, re.S)
assert len(svgs) >= 8, f"only {len(svgs)} svg elements"
for s in svgs:
    ET.fromstring(s)  # raises on malformed XML
print(f"ok   {len(svgs)} inline SVGs parse as XML")
PYEOF

flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$TMP/profile"
       --no-first-run --no-default-browser-check --disable-extensions)
timeout 120 "$CHROMIUM" "${flags[@]}" --dump-dom "file://$OUT/report.html" >"$OUT/dom.html" 2>"$TMP/chromium.log"
rc=$?
if [[ $rc -ne 0 ]]; then
  echo "FAIL: chromium --dump-dom exited $rc$([[ $rc -eq 124 ]] && echo ' (timed out after 120 s)')"
  tail -5 "$TMP/chromium.log"; exit 1
fi

if [[ ! -s $OUT/dom.html ]]; then
  echo "FAIL: chromium --dump-dom printed nothing"; tail -5 "$TMP/chromium.log"; exit 1
fi
python3 - "$OUT/dom.html" <<'PYEOF' || exit 1
import sys
from html.parser import HTMLParser

class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.svgs, self.tables, self.rows, self.sections = [], [], 0, 0, []
        self.svg = None
        self.in_title = False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg = {"id": a.get("id"), "title": "", "shapes": 0, "first": None}
            self.svgs.append(self.svg)
        elif self.svg is not None:
            if self.svg["first"] is None:
                self.svg["first"] = tag
            if tag == "title" and self.svg["first"] == "title" and not self.svg["title"]:
                self.in_title = True
            if tag in ("rect", "line", "path", "circle", "text"):
                self.svg["shapes"] += 1
        if tag == "table":
            self.tables += 1
        if tag == "tr":
            self.rows += 1
        if tag == "section":
            self.sections.append(a.get("id"))
    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None
        if tag == "title":
            self.in_title = False
    def handle_data(self, data):
        if self.in_title and self.svg is not None:
            self.svg["title"] += data

d = Dom()
d.feed(open(sys.argv[1], encoding="utf-8").read())
titles = {s["id"]: s["title"] for s in d.svgs}
want = {
    "chart-latency": "Latency per device and batch",
    "chart-throughput": "Throughput against batch size",
    "chart-accuracy": "Accuracy per device",
    "chart-fpga-resources": "FPGA resources against the xcku115 budget",
    "chart-fpga-cycles": "FPGA cycles: latency and initiation interval",
    "chart-partition": "Partition plan",
    "chart-partition-times": "Partition plan: predicted against measured times",
    "chart-layers-share": "Share of time per layer and device",
    "chart-layers-0": "Per-layer time: cpu (batch 1)",
}
bad = 0
for cid, title in want.items():
    if titles.get(cid) != title:
        print(f"FAIL chart {cid}: title {titles.get(cid)!r}, expected {title!r}"); bad += 1
for s in d.svgs:
    if s["first"] != "title" or s["shapes"] < 10:
        print(f"FAIL chart {s['id']}: first child {s['first']}, {s['shapes']} shapes"); bad += 1
for sec in ["run", "system", "model", "settings", "results", "accuracy", "memory", "gpu", "fpga",
            "partition", "layers"]:
    if sec not in d.sections:
        print(f"FAIL section {sec} missing from the DOM"); bad += 1
if d.tables < 12 or d.rows < 80:
    print(f"FAIL: {d.tables} tables, {d.rows} rows"); bad += 1
if bad:
    sys.exit(1)
print(f"ok   DOM: {len(d.svgs)} charts with titles, {d.tables} tables, {d.rows} rows, "
      f"{len(d.sections)} sections")
PYEOF

timeout 120 "$CHROMIUM" "${flags[@]}" --screenshot="$OUT/report.png" --window-size=1400,3000 \
  "file://$OUT/report.html" >"$TMP/shot.log" 2>&1
rc=$?
if [[ $rc -ne 0 || ! -s $OUT/report.png ]]; then
  echo "FAIL: chromium --screenshot exited $rc$([[ $rc -eq 124 ]] && echo ' (timed out)')"
  tail -5 "$TMP/shot.log"; exit 1
fi

# The screenshot: decode the PNG (zlib + row filters, no imaging library needed) and check that
# the page is not blank and the charts were painted in the targets' colours.
python3 - "$OUT/report.png" <<'PYEOF' || exit 1
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), f"unexpected PNG format {depth}/{ctype}"
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours, painted, total = {}, 0, 0
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    if y % 2:
        continue
    for x in range(0, stride, bpp * 2):
        px = bytes(line[x:x + 3])
        colours[px] = colours.get(px, 0) + 1
        total += 1
        if px not in (b"\xff\xff\xff", b"\xf6\xf8\xfa"):
            painted += 1
want = {"cpu": b"\x1f\x77\xb4", "gpu": b"\x2c\xa0\x2c", "fpga": b"\xff\x7f\x0e"}
missing = [t for t, c in want.items() if colours.get(c, 0) < 20]
print(f"screenshot {w}x{h}: {painted / total:.1%} painted, {len(colours)} colours")
if painted / total < 0.05 or missing:
    print(f"FAIL screenshot: blank or charts missing (colours not found: {missing})")
    sys.exit(1)
print(f"ok   screenshot {sys.argv[1]}")
PYEOF
echo "report chromium: ok"
