#!/usr/bin/env python3
"""Rewrites the charts of a results directory smaller, drawing the same picture.

The load generator's charts (plotters' SVG backend) draw every grid line as an element of its
own, one per line of the file: more than half the bytes of benches/results/. Here each run of
consecutive `<line>` elements with the same opacity, stroke and width becomes one `<path>` of
their segments (`M x1 y1 L x2 y2 ...`), and nothing else changes. The one visible difference:
where two grid lines of one run cross, the crossing is no darker than the lines (a path is
painted once). Usage: benches/compact_svg.py FILE.svg... (rewritten in place; prints the bytes
saved)."""
import re
import sys

LINE = re.compile(
    r'<line opacity="([^"]*)" stroke="([^"]*)" stroke-width="([^"]*)" '
    r'x1="([^"]*)" y1="([^"]*)" x2="([^"]*)" y2="([^"]*)"/>\n?'
)


def compact(text: str) -> str:
    out, pos, run, attrs = [], 0, [], None

    def flush():
        if run:
            d = "".join(f"M{x1} {y1}L{x2} {y2}" for x1, y1, x2, y2 in run)
            op, stroke, width = attrs
            out.append(f'<path opacity="{op}" stroke="{stroke}" stroke-width="{width}" fill="none" d="{d}"/>\n')
            run.clear()

    for m in LINE.finditer(text):
        between = text[pos:m.start()]
        if between:
            flush()
            out.append(between)
        key = m.group(1, 2, 3)
        if run and key != attrs:
            flush()
        attrs = key
        run.append(m.group(4, 5, 6, 7))
        pos = m.end()
    flush()
    out.append(text[pos:])
    return "".join(out)


saved = 0
for name in sys.argv[1:]:
    with open(name, encoding="utf-8") as f:
        text = f.read()
    new = compact(text)
    if new != text:
        with open(name, "w", encoding="utf-8") as f:
            f.write(new)
        saved += len(text) - len(new)
print(f"{len(sys.argv) - 1} charts, {saved} bytes saved")
