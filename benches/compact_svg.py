#!/usr/bin/env python3
"""Rewrites the charts of a results directory smaller, drawing the same picture.

The load generator's charts (plotters' SVG backend) draw every grid line and every series
segment as an element of its own, one per line of the file. Here:
- each `<line>` is read as a two-point polyline, and each run of consecutive polylines with the
  same attributes becomes one `<path>` of their point lists (`M x y L x y ...`). The one visible
  difference: where two lines of one run cross, the crossing is no darker than the lines (a
  path is painted once);
- a polyline drops the points that draw no pixel of their own: on the integer grid the charts
  use, a run of points in one column is drawn as the segment from its least to its greatest y,
  so only the run's first, least, greatest and last points are kept, in their order;
- attributes that say the default or repeat the root's go: `opacity="1"`, a text's
  `fill="#000000"`, a rectangle's `stroke="none"`, and every text's `font-family="sans-serif"`
  (set once on the root, whence it is inherited); font sizes keep two decimals.

Usage: benches/compact_svg.py FILE.svg... (rewritten in place; prints the bytes saved)."""
import re
import sys

LINE = re.compile(
    r'<line (opacity="[^"]*" stroke="[^"]*" stroke-width="[^"]*") '
    r'x1="([^"]*)" y1="([^"]*)" x2="([^"]*)" y2="([^"]*)"/>\n?'
)


def lines_as_polylines(text: str) -> str:
    return LINE.sub(r'<polyline \1 fill="none" points="\2,\3 \4,\5"/>\n', text)


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


POLYLINES = re.compile(r'(?:<polyline [^>]*?points="[^"]*"/>\n)+')
ONE_POLYLINE = re.compile(r'<polyline ([^>]*?) points="([^"]*)"/>\n')


def merge_polylines(text: str) -> str:
    """Each run of consecutive polylines with the same attributes as one path; a polyline with
    no neighbour of its attributes stays as it is."""

    def merge(run: re.Match) -> str:
        groups = []  # [attributes, [point lists]] per run of equal attributes
        for m in ONE_POLYLINE.finditer(run.group(0)):
            if not groups or groups[-1][0] != m.group(1):
                groups.append([m.group(1), []])
            groups[-1][1].append(m.group(2).split())
        out = []
        for attrs, lists in groups:
            if len(lists) == 1:
                out.append(f'<polyline {attrs} points="{" ".join(lists[0])}"/>\n')
                continue
            d = "".join(
                "M" + "L".join(p.replace(",", " ") for p in points) for points in lists
            )
            out.append(f'<path {attrs} d="{d}"/>\n')
        return "".join(out)

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
    new = plain_attributes(merge_polylines(thin_polylines(lines_as_polylines(text))))
    if new != text:
        with open(name, "w", encoding="utf-8") as f:
            f.write(new)
        saved += len(text) - len(new)
print(f"{len(sys.argv) - 1} charts, {saved} bytes saved")
