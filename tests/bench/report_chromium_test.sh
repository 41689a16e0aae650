#!/usr/bin/env bash
# The HTML report in a real browser: renders tests/data/bench_report_sample.json with
# `triad report --html`, loads it in headless Chromium (Debian's `chromium`), and checks the DOM
# it built: every chart is an <svg> with its <title>, the tables are there with their rows. Then
# takes a screenshot (OUT/report.png, 1400x3000) and checks that it is not blank and that the
# charts' colours were painted. Then reports whose names are hostile (a model's strings are
# untrusted: docs/reliability.md) show them as text and run nothing: the fixture with every name
# replaced by an HTML/SVG/Markdown/DOT/terminal payload, and `triad bench` on a copy of jet_mlp
# from tests/security/hostile_names.py (in a file whose name is a payload too). In the DOM
# Chromium built, document.title is the page's own, no element or handler came from a name, and
# each name is there as text; a page with a real <script> first shows that scripts do run here.
# Skipped (77) only when chromium is not installed.
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

# ---- hostile names ------------------------------------------------------------------------------
H=$OUT/hostile
rm -rf "$H"
mkdir -p "$H"
dump() { # PAGE DOM: the DOM Chromium built from PAGE (scripts run)
  timeout 120 "$CHROMIUM" "${flags[@]}" --dump-dom "file://$1" >"$2" 2>"$TMP/chromium.log" &&
    [[ -s $2 ]] || { echo "FAIL: chromium --dump-dom $1"; tail -5 "$TMP/chromium.log"; exit 1; }
}

# Scripts run in this browser: a page that sets document.title from a script shows it changed.
printf '<!DOCTYPE html><html><head><title>plain</title></head><body><script>document.title="PWNED"</script></body></html>\n' >"$H/control.html"
dump "$H/control.html" "$H/control.dom.html"
grep -q '<title>PWNED</title>' "$H/control.dom.html" || {
  echo "FAIL: the control page's script did not run: the checks below would prove nothing"
  cat "$H/control.dom.html"; exit 1; }
echo "ok   control: a page's <script> runs in headless Chromium (document.title became PWNED)"

# 1. The fixture with every name hostile (model, inputs, outputs, layers, partition nodes and
# tensors, host, a failure's why): every section and chart of the report shows them.
python3 - "$SRC/tests/data/bench_report_sample.json" "$H/sample.json" <<'PYEOF' || exit 1
import json, sys
PAYLOADS = [
    '<script>document.title="PWNED"</script>',
    '<img src=x onerror="document.title=\'PWNED\'">',
    '</title></svg><script>document.title="PWNED"</script>',
    '| a | b |',
    'two\nlines\r\n|---|---|',
    '\x1b[2J\x1b]0;title\x07 \r\x08 \x7f esc',
    '"]; x [label="',
    '<svg onload="document.title=\'PWNED\'"><a href="javascript:alert(1)">x</a></svg>',
    '<style>*{display:none}</style><iframe src="file:///etc/passwd"></iframe>',
    '&lt;script&gt; &amp; \' " < > ` * _ [x](javascript:alert(1))',
]
rep = json.load(open(sys.argv[1]))
rename = {}
def hostile(old):
    if old not in rename:
        rename[old] = f"{PAYLOADS[len(rename) % len(PAYLOADS)]} #{len(rename)}"
    return rename[old]
m = rep["model"]
for v in m["inputs"] + m["outputs"]:
    hostile(v["name"])
for r in rep["results"]:
    for l in r.get("layers", []):
        hostile(l["layer"])
p = rep["partition"]
for part in p["partitions"]:
    for n in part["nodes"]:
        hostile(n)
for t in p["transfers"]:
    hostile(t["tensor"])
for n in p["nodes"]:
    hostile(n["node"])
def walk(j):
    if isinstance(j, dict):
        return {k: walk(v) for k, v in j.items()}
    if isinstance(j, list):
        return [walk(v) for v in j]
    return rename.get(j, j) if isinstance(j, str) else j
rep = walk(rep)
rep["model"]["name"] = PAYLOADS[2] + PAYLOADS[0]
rep["system"]["host"] = PAYLOADS[1]
for r in rep["results"]:
    if r["status"] != "ok":
        r["why"] = PAYLOADS[4] + PAYLOADS[7]
json.dump(rep, open(sys.argv[2], "w"), indent=1)
PYEOF
"$TRIAD" report "$H/sample.json" --html "$H/sample.html" >/dev/null ||
  { echo "FAIL: triad report --html (hostile names)"; exit 1; }
dump "$H/sample.html" "$H/sample.dom.html"

# 2. `triad bench` on a hostile-named jet_mlp, in a file whose name is a payload too (the report's
# title shows the file's stem): the interpreter, the CPU and the FPGA (their per-layer tables and
# charts name the layers). A target that fails is a failed result in the report, said here, not
# this test's failure (tests/security/hostile_names_test.sh checks every target); the interpreter
# alone when the bench itself fails with them.
PY=$SRC/.venv/bin/python
bench_page=""
if [[ -x $PY ]] && "$PY" -c "import onnx" 2>/dev/null; then
  "$PY" "$SRC/tests/security/hostile_names.py" "$H/MARKER" 3 "$H/model" "$SRC/models/jet_mlp.onnx" \
    >"$TMP/hostile.log" 2>&1 || { echo "FAIL: hostile_names.py"; cat "$TMP/hostile.log"; exit 1; }
  MODEL="$H/model/jet<img src=x onerror=\"document.title='PWNED'\">.onnx"
  cp "$H/model/jet_mlp.onnx" "$MODEL"
  for targets in interp,cpu,fpga interp; do
    if CI=1 TRIAD_CXXFLAGS="-O1" TRIAD_CACHE_DIR="$H/cache" timeout 240 "$TRIAD" bench "$MODEL" \
      --targets $targets --reuse 4 --batch 1 --repeat 3 --rounds 1 --warmup 1 -o "$H/bench" \
      --no-db >"$TMP/bench.out" 2>"$TMP/bench.log"; then
      bench_page=$H/bench/report.html
      echo "ok   triad bench --targets $targets on a hostile-named jet_mlp"
      if LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]' "$TMP/bench.out" "$TMP/bench.log"; then
        echo "FAIL: triad bench printed a control character (ESC, CR, BEL) from a name"; exit 1
      fi
      python3 - "$H/bench/report.json" <<'PYEOF'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    if r["status"] != "ok":
        why = (r.get("why") or "")[:100]
        print(f"note: its {r['target']} result is {r['status']}: {why!r}")
PYEOF
      break
    fi
    echo "note: triad bench --targets $targets on the hostile-named jet_mlp failed:"
    tail -3 "$TMP/bench.log"
  done
  [[ -n $bench_page ]] || { echo "FAIL: triad bench on the hostile-named jet_mlp"; exit 1; }
  [[ ! -e $H/MARKER ]] || { echo "FAIL: the marker file exists: code from the model ran"; exit 1; }
  dump "$bench_page" "$H/bench.dom.html"
else
  echo "note: no $PY with onnx: the triad bench part is left out"
fi

# The DOM each page built: its own title, no element or handler from a name, the names as text.
python3 - "$H/sample.json" "$H/sample.html" "$H/sample.dom.html" \
  ${bench_page:+"$H/bench/report.json" "$bench_page" "$H/bench.dom.html"} <<'PYEOF' || exit 1
import json, re, sys, xml.etree.ElementTree as ET
from html.parser import HTMLParser

class Page(HTMLParser):
    """The document's <title> (not a chart's), its elements and attributes, its text."""
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title, self.in_title, self.depth_svg = None, False, 0
        self.tags, self.attrs, self.text = set(), set(), []
    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs.update(k for k, _ in attrs)
        if tag == "svg":
            self.depth_svg += 1
        if tag == "title" and self.depth_svg == 0 and self.title is None:
            self.in_title, self.title = True, ""
    def handle_endtag(self, tag):
        if tag == "svg":
            self.depth_svg -= 1
        if tag == "title":
            self.in_title = False
    def handle_data(self, data):
        if self.in_title:
            self.title += data
        self.text.append(data)

def parse(path):
    p = Page()
    p.feed(open(path, encoding="utf-8").read())
    p.close()
    return p

def shown(name):  # a name as the page shows it: control characters as \xNN (escape::html)
    return "".join(f"\\x{ord(c):02x}" if (ord(c) < 0x20 and c != "\t") or ord(c) == 0x7f else c
                   for c in name)

# The elements and attributes the renderer writes; anything else came from a name.
TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "p", "nav",
        "a", "main", "section", "div", "table", "thead", "tbody", "tr", "th", "td", "figure", "svg",
        "g", "rect", "line", "circle", "text", "path", "defs", "marker", "footer"}
bad = 0
args = sys.argv[1:]
for k in range(0, len(args), 3):
    report, page, dom = json.load(open(args[k])), args[k + 1], args[k + 2]
    static, built = parse(page), parse(dom)
    what = "/".join(page.split("/")[-2:])
    problems = []
    if (built.title != static.title or built.title == "PWNED"
            or not built.title.startswith("Triad benchmark: ")):
        problems.append(f"document.title {built.title!r}, the page's own is {static.title!r}")
    if built.tags - TAGS:
        problems.append(f"elements from a name: {sorted(built.tags - TAGS)}")
    if any(a.startswith("on") or a in ("src", "srcdoc") for a in built.attrs):
        problems.append(f"attributes from a name: {sorted(built.attrs)}")
    for s in re.findall(r"<svg\b.*?</svg>", open(page, encoding="utf-8").read(), re.S):
        try:
            ET.fromstring(s)
        except ET.ParseError as e:
            problems.append(f"an inline SVG is not XML: {e}")
    # The names are on the page as text: the model's inputs and outputs always, the layers in the
    # per-layer tables (each device's slowest 8).
    model = report["model"]
    io = [v["name"] for v in model.get("inputs", []) + model.get("outputs", [])]
    layers = {l["layer"] for x in report.get("results", []) for l in x.get("layers", [])}
    text = "".join(built.text)
    missing_io = [n for n in io if shown(n) not in text]
    missing = [n for n in layers if shown(n) not in text]
    if missing_io or len(missing) > max(0, len(layers) - 8):
        problems.append(f"names not shown as text: {(missing_io + missing)[:3]!r}")
    if shown(model["name"]) not in built.title:
        problems.append(f"the model's name is not in the title {built.title!r}")
    for p in problems:
        print(f"FAIL {what}: {p}")
    bad += len(problems)
    if not problems:
        print(f"ok   {what}: document.title unchanged ({built.title[:48]!r}...), "
              f"{len(io) + len(layers)} hostile names shown as text, no element or handler from them")
sys.exit(1 if bad else 0)
PYEOF
echo "report chromium: ok"
