#!/usr/bin/env python3
"""Rewrites the charts of a results directory smaller, drawing the same picture.

The load generator's charts (plotters' SVG backend) draw every grid line as an element of its
own, one per line of the file: more than half the bytes of benches/results/. Here each run of
consecutive `<line>` elements with the same opacity, stroke and width becomes one `<path>` of
their segments (`M x1 y1 L x2 y2 ...`), and nothing else changes. The one visible difference:
where two grid lines of one run cross, the crossing is no darker than the lines (a path is
painted once). Each polyline also drops the points that draw no pixel of their own: on the
integer grid the charts use, a run of points in one column is drawn as the segment from its
least to its greatest y, so only the run's first, least, greatest and last points are kept, in
their order. And the attributes that say the default or repeat the root's go: `opacity="1"`, a
text's `fill="#000000"`, a rectangle's `stroke="none"`,
and every text's `font-family="sans-serif"` (set once on the root, whence it is inherited);
font sizes keep two decimals (hundredths of a pixel). Consecutive polylines of the same
attributes (the axes' ticks, the series' segments) become one path of their point lists.
Usage: benches/compact_svg.py FILE.svg... (rewritten in place; prints the bytes
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


POINTS = re.compile(r'(<polyline [^>]*points=")([^"]*)(")')


def column_extremes(points: str) -> str:
    """The points of a polyline that draw something: per run of points in one column, its first,
    lowest, highest and last, in the order drawn."""
    pts = [tuple(p.split(",")) for p in points.split()]
    kept, start = [], 0
    while start < len(pts):
        end = start
        while end < len(pts) and pts[end][0] == pts[start][0]:
            end += 1
        run = list(range(start, end))
        try:
            ys = [float(pts[i][1]) for i in run]
        except ValueError:
            return points
        low = run[ys.index(min(ys))]
        high = run[ys.index(max(ys))]
        for i in sorted({start, low, high, end - 1}):
            if not kept or kept[-1] != pts[i]:
                kept.append(pts[i])
        start = end
    return " ".join(",".join(p) for p in kept)


def thin_polylines(text: str) -> str:
    return POINTS.sub(lambda m: m.group(1) + column_extremes(m.group(2)) + m.group(3), text)


POLYLINES = re.compile(r'(?:<polyline ([^>]*?) points="([^"]*)"/>\n)+')
ONE_POLYLINE = re.compile(r'<polyline ([^>]*?) points="([^"]*)"/>\n')


def merge_polylines(text: str) -> str:
    def merge(run: re.Match) -> str:
        out, attrs, parts = [], None, []

        def flush():
            if parts:
                out.append(f'<path {attrs} d="{"".join(parts)}"/>\n')
                parts.clear()

        for m in ONE_POLYLINE.finditer(run.group(0)):
            if m.group(1) != attrs:
                flush()
                attrs = m.group(1)
            pts = m.group(2).split()
            parts.append("M" + pts[0].replace(",", " ") + "".join("L" + p.replace(",", " ") for p in pts[1:]))
        flush()
        # A lone polyline stays as it was.
        return run.group(0) if len(out) == len(ONE_POLYLINE.findall(run.group(0))) else "".join(out)

    return POLYLINES.sub(merge, text)


FONT_SIZE = re.compile(r'font-size="(\d+\.\d{3,})"')


def plain_attributes(text: str) -> str:
    text = text.replace(' opacity="1"', "")
    text = re.sub(r'(<text [^>]*) fill="#000000"', r"\1", text)
    text = re.sub(r'(<rect [^>]*) stroke="none"', r"\1", text)
    text = FONT_SIZE.sub(lambda m: f'font-size="{round(float(m.group(1)), 2)}"', text)
    if ' font-family="sans-serif"' in text and text.startswith("<svg "):
        text = text.replace(' font-family="sans-serif"', "")
        text = text.replace("<svg ", '<svg font-family="sans-serif" ', 1)
    return text


saved = 0
for name in sys.argv[1:]:
    with open(name, encoding="utf-8") as f:
        text = f.read()
    new = plain_attributes(merge_polylines(thin_polylines(compact(text))))
    if new != text:
        with open(name, "w", encoding="utf-8") as f:
            f.write(new)
        saved += len(text) - len(new)
print(f"{len(sys.argv) - 1} charts, {saved} bytes saved")
