"""Copies of ONNX models whose every string field is drawn from a hostile alphabet (issue 25).

Usage: hostile_names.py MARKER SEED OUT_DIR MODEL... writes OUT_DIR/<stem>.onnx for each MODEL: the
same graph, weights and outputs, with the graph name, node names, value names (inputs, outputs,
intermediates, initializers), doc strings, producer, domain and metadata replaced by payloads that
try to break out of every language Triad generates (C++, OpenCL C, Verilog, Makefiles, Tcl, shell,
HTML, SVG, Markdown, DOT, JSON, Python) and, where they succeed, create the file MARKER. Names that
differ only in characters an identifier loses ("a/b", "a.b", "a b") and 4 KiB names are included.
The same SEED gives the same models. OUT_DIR/payloads.txt lists, one per line, the lines a payload
would put at the start of a generated line if it escaped its comment or literal (the check of
hostile_names_test.sh).
"""
import os
import random
import sys

import onnx

MARKER, SEED, OUT = sys.argv[1], int(sys.argv[2]), sys.argv[3]
MODELS = sys.argv[4:]
M = MARKER

# Each payload targets one language; the lines after its first newline are what would start a
# line of generated source if the payload escaped.
PAYLOADS = [
    # C++ / OpenCL C: a new line with a preprocessor directive and a static initializer.
    f'a\n#ifndef PWNED_ONCE\n#define PWNED_ONCE\n#include <cstdlib>\nstatic int x_ = std::system("touch {M}");\n#endif\n//',
    # Out of a block comment, and a trigraph/line splice that swallows the next line.
    f'*/ static int y_ = std::system("touch {M}"); /*',
    'ends in a splice \\',
    'trigraph ??/',
    '??=define X',
    # Out of a C string literal.
    f'"); static int z_ = std::system("touch {M}"); ("',
    f"\\\"); std::system(\"touch {M}\"); //",
    # Verilog: a directive and a system task.
    f'm\n`include "/etc/passwd"\ninitial $system("touch {M}");\n',
    f'*/ initial $system("touch {M}"); /*',
    f'\\escaped_ident ) ; initial $system("touch {M}"); (',
    # Makefile and shell.
    f'mk\n\t$(shell touch {M})\nall:\n\ttouch {M}',
    f'$(shell touch {M})',
    f'$(touch {M})',
    f'`touch {M}`',
    f'; touch {M} #',
    # Tcl (Yosys and vendor scripts) and Python.
    f'[exec touch {M}]',
    f"'''; __import__('os').system('touch {M}'); '''",
    # HTML, SVG, Markdown, DOT.
    '<script>document.title="PWNED"</script>',
    '<img src=x onerror="document.title=\'PWNED\'">',
    '</title></svg><script>document.title="PWNED"</script>',
    '| col | umn |\n|---|---|',
    '`code` *em* _u_ [link](javascript:alert(1)) ![i](x) # h',
    '"]; evil [label="x", shape=box]; x -> y [label="',
    '\\N \\G \\L \\n',
    # Format strings.
    '{} {0} {:>99999999} %s%n%x',
    # Terminals: escape sequences, bell, carriage return, right-to-left override.
    '\x1b[2J\x1b]0;title\x07 \r\x08 \x7f',
    '\u202eevil\u202c ünïcødé ✓ 名前 \U0001f600',
    # Every separator an identifier drops.
    '&amp; \' " < > | $ # ` ~ ! @ % ^ & * ( ) = + ; : , . ? / \\',
]
LONG = ('L' * 1500) + '\n#error long\n' + ('é' * 1300)  # over 4 KiB of UTF-8 bytes


def payload_lines():
    out = set()
    for p in PAYLOADS + [LONG]:
        for line in p.split('\n')[1:]:
            line = line.strip()
            # Only lines no generator writes itself ("#include <cstdlib>" is one it does).
            if any(t in line for t in (M, 'PWNED', 'evil', '#error')):
                out.add(line)
    return sorted(out)


def hostile(model, rng):
    g = model.graph
    pool = PAYLOADS[:]
    rng.shuffle(pool)
    counter = [0]

    def draw():
        k = counter[0]
        counter[0] += 1
        if k % 11 == 5:
            return LONG + f' #{k}'
        # Five names in a row share a payload and differ only in a separator an identifier loses.
        tail = ['/', '.', ' ', '-', ':'][k % 5]
        return f'{pool[(k // 5) % len(pool)]}{tail}{k // 5}'

    names = {}

    def rename(old):
        if old == '':
            return ''
        if old not in names:
            names[old] = draw()
        return names[old]

    for vi in list(g.input) + list(g.output) + list(g.value_info):
        vi.name = rename(vi.name)
        vi.doc_string = draw()
    for t in g.initializer:
        t.name = rename(t.name)
        t.doc_string = draw()
    for n in g.node:
        n.input[:] = [rename(x) for x in n.input]
        n.output[:] = [rename(x) for x in n.output]
        n.name = draw()
        n.doc_string = draw()
    g.name = PAYLOADS[0]
    g.doc_string = draw()
    model.doc_string = draw()
    model.producer_name = draw()
    model.producer_version = draw()
    model.domain = draw()
    del model.metadata_props[:]
    for _ in range(3):
        p = model.metadata_props.add()
        p.key, p.value = draw(), draw()
    return model


os.makedirs(OUT, exist_ok=True)
rng = random.Random(SEED)
for path in MODELS:
    m = hostile(onnx.load(path), rng)
    stem = os.path.splitext(os.path.basename(path))[0]
    with open(os.path.join(OUT, stem + '.onnx'), 'wb') as f:
        f.write(m.SerializeToString())
with open(os.path.join(OUT, 'payloads.txt'), 'w', encoding='utf-8') as f:
    for line in payload_lines():
        f.write(line.replace('\r', ' ') + '\n')
