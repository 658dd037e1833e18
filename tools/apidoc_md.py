"""Markdown helpers shared by the API reference generators (tools/gen_api_doc.py).

What it does: turns comment and docstring prose into Markdown (inline code for
API names, links for docs/*.md, escapes), splits structured comments into
paragraphs, lists and code blocks, wraps signatures, and builds a document with
a table of contents from its headings.

Invariants: every function here is pure (same input, same output, no clock, no
environment), so the generated files are byte-for-byte reproducible, which is
what `gen_api_doc.py --check` relies on. Text inside code spans and code blocks
is never altered.
"""
from __future__ import annotations

import re
from typing import Iterable, List, Optional, Sequence, Tuple

# ``literal`` (reST) or `code` (Markdown) spans, and docs/NAME.md references.
_SPANS = r"``(?P<rst>.+?)``|`(?P<md>[^`]+)`|\bdocs/(?P<doc>[A-Za-z0-9_]+\.md)\b"
# Characters that could start Markdown syntax in running text. `_` only matters
# where it is not between two word characters (CommonMark: no intraword
# emphasis with `_`), so snake_case names stay readable in the source.
_ESCAPE = re.compile(r"[\\*~<|]|(?<!\w)_|_(?!\w)")


def escape(text: str) -> str:
    """Plain text -> Markdown text that renders as itself."""
    return _ESCAPE.sub(lambda m: "\\" + m.group(0), text)


def inline(text: str, names: Optional[str] = None) -> str:
    """Prose -> one line of Markdown: code spans kept (reST ``x`` becomes `x`),
    docs/X.md linked relative to docs/, names matching the regex `names`
    (e.g. the API's identifiers, optionally followed by "()") set as code, and
    everything else escaped."""
    pattern = _SPANS + (rf"|(?P<name>{names})" if names else "")
    out, pos = [], 0
    for m in re.finditer(pattern, text):
        out.append(escape(text[pos:m.start()]))
        if m.group("doc"):
            out.append(f"[docs/{m.group('doc')}]({m.group('doc')})")
        else:
            out.append("`" + (m.group("rst") or m.group("md") or m.group(0)) + "`")
        pos = m.end()
    out.append(escape(text[pos:]))
    return " ".join("".join(out).split())


def cell(text: str) -> str:
    """Markdown inline text made safe inside a table cell (`|` escaped even in code)."""
    return re.sub(r"(?<!\\)\|", r"\\|", text)


def blocks(text: str, names: Optional[str] = None) -> List[str]:
    """Structured prose (a header comment or a docstring, already dedented) ->
    Markdown blocks. Paragraphs are separated by blank lines; within one,
    unindented lines are prose, lines starting with "- " are list items (more
    deeply indented lines continue them), and other indented lines, or a reST
    table rule (=== ===), are kept verbatim as a code block. A prose line
    ending in "::" (reST) introduces the code block after it. A one-line
    label without final punctuation directly above a list is set in bold."""
    out: List[str] = []
    for para in re.split(r"\n\s*\n", (text or "").strip("\n")):
        if not para.strip():
            continue
        lines = para.split("\n")
        if re.match(r"=+(\s+=+)+\s*$", lines[0]):  # a reST simple table
            out.append(_code(lines))
            continue
        kind, run, bullet_indent = None, [], 0
        for line in lines + [None]:
            indent = len(line) - len(line.lstrip()) if line is not None else 0
            if line is None:
                new = "end"
            elif line.lstrip().startswith("- "):
                new, bullet_indent = "item", indent
            elif kind == "item" and indent > bullet_indent:
                run.append(line)
                continue
            elif indent > 0:
                new = "code"
            else:
                new = "prose"
            if run and (new != kind or new == "item"):
                label = kind == "prose" and new == "item" and len(run) == 1 \
                    and not re.search(r"[.:;,]$", run[0])
                out.append(f"**{inline(run[0], names)}**" if label else _flush(kind, run, names))
                run = []
            kind = new
            if line is not None:
                run.append(line)
    # consecutive list items form one list
    merged: List[str] = []
    for b in out:
        if merged and b.startswith("- ") and merged[-1].startswith("- "):
            merged[-1] += "\n" + b
        else:
            merged.append(b)
    return merged


def _flush(kind: Optional[str], run: List[str], names: Optional[str]) -> str:
    if kind == "code":
        return _code(run)
    text = " ".join(line.strip() for line in run)
    if kind == "item":
        return "- " + inline(text[2:], names)
    if text.endswith("::"):
        text = text[:-1]
    return inline(text, names)


def _code(lines: Sequence[str]) -> str:
    width = min(len(l) - len(l.lstrip()) for l in lines if l.strip())
    body = "\n".join(l[width:].rstrip() for l in lines)
    return f"```text\n{body}\n```"


def signature(head: str, params: Sequence[str], tail: str, width: int = 88) -> str:
    """`head(p1, p2, ...)tail` on one line, or filled to `width` with the
    continuation lines aligned after the parenthesis, as in the C header."""
    one = f"{head}({', '.join(params)}){tail}"
    if len(one) <= width or not params:
        return one
    lines, cur = [], head + "("
    indent = " " * len(cur)
    for i, p in enumerate(params):
        piece = p + ("," if i < len(params) - 1 else ")" + tail)
        if cur.endswith("("):
            cur += piece
        elif len(cur) + 1 + len(piece) <= width:
            cur += " " + piece
        else:
            lines.append(cur)
            cur = indent + piece
    lines.append(cur)
    return "\n".join(lines)


def anchor(title: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation but "-" and "_"
    dropped, spaces to "-" (Document adds "-N" to repeats)."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; cells are Markdown inline text (see cell())."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


class Document:
    """A Markdown document built heading by heading. Level-2 headings are the
    sections of the table of contents, level-3 headings their entries, listed
    on the section's line; anchors as anchor(), with "-N" added to repeats."""

    def __init__(self) -> None:
        self.parts: List[str] = []
        self.toc: List[Tuple[str, str, List[Tuple[str, str]]]] = []
        self._seen: dict = {}

    def heading(self, level: int, title: str) -> None:
        base = anchor(title)
        n = self._seen.get(base, 0)
        self._seen[base] = n + 1
        slug = base if n == 0 else f"{base}-{n}"
        if level == 2:
            self.toc.append((title, slug, []))
        elif level == 3 and self.toc:
            self.toc[-1][2].append((title, slug))
        self.parts.append("#" * level + " " + title)

    def add(self, *chunks: str) -> None:
        self.parts.extend(c for c in chunks if c)

    def render(self, title: str, preamble: Sequence[str]) -> str:
        toc = []
        for name, anchor, entries in self.toc:
            line = f"- [{name}](#{anchor})"
            if entries:
                line += ": " + ", ".join(f"[{t}](#{a})" for t, a in entries)
            toc.append(line)
        parts = [f"# {title}", *preamble, "## Contents", "\n".join(toc), *self.parts]
        return "\n\n".join(p.rstrip("\n") for p in parts) + "\n"
