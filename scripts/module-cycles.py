#!/usr/bin/env python3
"""Lists pairs of modules of a Rust library crate that use each other (A uses B and B uses A).

Usage: scripts/module-cycles.py crates/enygma-server [crates/...]; exit status 1 if any pair.

A module is a source file (`a.rs` or `a/mod.rs` is `a`, `a/b.rs` is `a::b`, `lib.rs` the root).
A file uses module M when its code (comments aside) names a path into M: `crate::m::...`,
`super::...`, a `use crate::{...}` group, or a child module declared in the file (`child::...`).
An inline module (`mod tests { ... }`) counts as its file, so its `super::` is the file itself.
Binaries (`main.rs`, `src/bin/`) are other crates and are left out.
"""

import re
import sys
from pathlib import Path


def module_of(src: Path, file: Path) -> tuple:
    rel = file.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


def expand_groups(prefix: str, body: str) -> list:
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (prefix already split off)."""
    out, depth, start = [], 0, 0
    items = []
    for i, ch in enumerate(body):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(body[start:i])
            start = i + 1
    items.append(body[start:])
    for item in items:
        item = item.strip()
        if not item:
            continue
        m = re.match(r"([\w:]*?)::\{(.*)\}$", item, flags=re.S)
        if m:
            out += expand_groups(prefix + "::" + m.group(1), m.group(2))
        else:
            out.append(prefix + "::" + item.split(" as ")[0].strip())
    return out


def references(code: str, children: set) -> list:
    paths = []
    heads = "|".join(["crate", "super", "self"] + sorted(children))
    for m in re.finditer(r"(?<![\w:])(" + heads + r")::\{", code):
        depth, i = 1, m.end()
        while depth and i < len(code):
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        paths += expand_groups(m.group(1), code[m.end() : i - 1])
    paths += re.findall(r"\b(?:crate|super)(?:::\w+)+", code)
    for child in children:
        paths += re.findall(r"(?<![\w:])" + child + r"(?:::\w+)+", code)
    return paths


def resolve(path: str, here: tuple, inline: bool, modules: set):
    parts = path.split("::")
    if parts[0] == "crate":
        base, rest = (), parts[1:]
    elif parts[0] == "super":
        base, rest = here, parts
        # In an inline module the first `super` is the file's own module.
        if inline:
            rest = rest[1:]
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    elif parts[0] == "self":
        base, rest = here, parts[1:]
    else:
        base, rest = here, parts
    best = None
    for n in range(len(rest), -1, -1):
        if base + tuple(rest[:n]) in modules:
            best = base + tuple(rest[:n])
            break
    return best


def crate_uses(crate: Path) -> dict:
    src = crate / "src"
    files = [f for f in src.rglob("*.rs") if f.name != "main.rs" and "bin" not in f.relative_to(src).parts[:1]]
    modules = {module_of(src, f) for f in files}
    uses = {}
    for f in files:
        here = module_of(src, f)
        code = strip_comments(f.read_text())
        children = set(re.findall(r"^\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+(\w+)\s*;", code, flags=re.M))
        # Code before the first inline module, then the inline modules' code.
        inline_at = re.search(r"^(?:pub(?:\([\w:]+\))?\s+)?mod\s+\w+\s*\{", code, flags=re.M)
        parts = [(code, False)] if not inline_at else [(code[: inline_at.start()], False), (code[inline_at.start() :], True)]
        targets = set()
        for part, inline in parts:
            for path in references(part, children):
                target = resolve(path, here, inline, modules)
                if target is not None and target != here:
                    targets.add(target)
        uses[here] = targets
    return uses


def name(module: tuple) -> str:
    return "::".join(module) or "crate"


def main() -> int:
    found = 0
    for arg in sys.argv[1:]:
        uses = crate_uses(Path(arg))
        for a in sorted(uses):
            for b in sorted(uses[a]):
                if a < b and a in uses.get(b, ()):
                    print(f"{arg}: {name(a)} <-> {name(b)}")
                    found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
