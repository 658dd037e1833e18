"""The C API reference: include/qgemm.h -> docs/API.md (for tools/gen_api_doc.py).

What it does: reads the public header as a sequence of comments, preprocessor
lines and declarations, in header order, and renders each declaration with the
comment written directly above it (no blank line between):

  /* ---- */ /* Title */ /* ---- */   a section (## Title)
  the file's first comment            the overview
  #define QG_...  (consecutive)        a macro group: name | value table
  QG_API ret name(params);             a function: signature, text, **Returns**
  typedef enum {...} name;             an enum: name | value | meaning table
  typedef struct {...} name;           a struct: field | type | meaning table
  typedef struct x x; / struct x;      an opaque type

Invariants:
  - Output depends only on the header's text (deterministic).
  - Every top-level declaration is either rendered or reported: an unknown
    form is an error, never silently dropped. Conditional blocks other than
    the include guard (#ifdef __cplusplus, the QG_API definition) are not API
    and are skipped.
  - The contract check: every function has a /** doc comment, and one with an
    @return unless it returns void; every type and macro group has a comment.
    Violations are returned as "include/qgemm.h:LINE: name: what is missing".
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

import apidoc_md as md

HEADER = "include/qgemm.h"
# API names set as code in running text: qg_x, QG_X, QGEMM_X, with a trailing "()".
NAMES = r"\b(?:qg|QG|QGEMM)_\w+\b(?:\(\))?"


class Token:
    def __init__(self, kind: str, text: str, line: int, blank_before: bool) -> None:
        self.kind, self.text, self.line, self.blank_before = kind, text, line, blank_before


def lex(text: str) -> List[Token]:
    """Comments, preprocessor lines and declarations (up to ";" outside braces),
    each with its first line and whether a blank line precedes it."""
    tokens: List[Token] = []
    pos, guard_seen = 0, False
    while True:
        start = pos
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return tokens
        blank = text.count("\n", start, pos) >= 2
        line = text.count("\n", 0, pos) + 1
        if text.startswith("/*", pos):
            end = text.index("*/", pos) + 2
            tokens.append(Token("comment", text[pos:end], line, blank))
        elif text[pos] == "#":
            end = pos
            while True:  # to the end of the line, following backslash continuations
                end = text.find("\n", end)
                end = len(text) if end < 0 else end
                if text[end - 1] != "\\":
                    break
                end += 1
            directive = text[pos:end]
            if re.match(r"#\s*if", directive):
                if guard_seen:  # not the include guard: skip to the matching #endif
                    end = _skip_conditional(text, end)
                    pos = end
                    continue
                guard_seen = True
            tokens.append(Token("pp", directive, line, blank))
        else:
            end, depth = pos, 0
            while True:
                if text.startswith("/*", end):
                    end = text.index("*/", end) + 2
                    continue
                if end >= len(text):
                    raise SyntaxError(f"{HEADER}:{line}: declaration without ';'")
                c = text[end]
                depth += (c == "{") - (c == "}")
                end += 1
                if c == ";" and depth == 0:
                    break
            tokens.append(Token("decl", text[pos:end], line, blank))
        pos = end


def _skip_conditional(text: str, pos: int) -> int:
    level = 1
    for m in re.compile(r"^\s*#\s*(if|endif)", re.M).finditer(text, pos):
        level += 1 if m.group(1) == "if" else -1
        if level == 0:
            nl = text.find("\n", m.end())
            return len(text) if nl < 0 else nl
    raise SyntaxError(f"{HEADER}: unterminated #if")


def comment_text(raw: str) -> str:
    """The text of a /* */ comment: delimiters and the " * " margin removed,
    relative indentation kept (it marks lists and tables)."""
    lines = raw[3 if raw.startswith("/**") else 2:-2].split("\n")
    out = [lines[0].strip()]
    for line in lines[1:]:
        m = re.match(r"\s*\*(?!/) ?", line)
        out.append(line[m.end():].rstrip() if m else line.strip())
    return "\n".join(out).strip("\n")


def flat(text: str) -> str:
    """Comments removed and whitespace collapsed: the declaration as C sees it."""
    return " ".join(re.sub(r"/\*.*?\*/", " ", text, flags=re.S).split())


# ---- the model: what the header declares, in order -------------------------------

class Item:
    def __init__(self, kind: str, name: str, line: int, doc: Optional[str], **fields) -> None:
        self.kind, self.name, self.line, self.doc = kind, name, line, doc
        self.__dict__.update(fields)


def parse(text: str) -> Tuple[List[Item], List[str]]:
    """The header's items in order, and the contract violations."""
    items: List[Item] = []
    errors: List[str] = []
    pending: List[Token] = []  # comments directly above the next token
    guard = re.search(r"^#\s*ifndef\s+(\w+)", text, re.M)  # the include guard's name

    def detach() -> None:  # comments followed by a blank line: sections or prose
        texts = [comment_text(c.text) for c in pending]
        if not items:
            items.append(Item("overview", "Overview", pending[0].line, "\n\n".join(texts)))
        elif len(texts) == 3 and all(re.fullmatch(r"-+", t) for t in texts[::2]):
            items.append(Item("section", texts[1], pending[1].line, None))
        else:
            items.append(Item("prose", "", pending[0].line, "\n\n".join(texts)))
        pending.clear()

    for tok in lex(text):
        if tok.blank_before and pending:
            detach()
        if tok.kind == "comment":
            pending.append(tok)
            continue
        doc = "\n\n".join(comment_text(c.text) for c in pending) if pending else None
        is_doc = bool(pending) and pending[-1].text.startswith("/**")
        if tok.kind == "pp":
            m = re.match(r"#\s*define\s+(\w+)\s*(.*)", tok.text, re.S)
            if m and not (guard and m.group(1) == guard.group(1)):
                value = " ".join(m.group(2).replace("\\\n", " ").split())
                last = items[-1] if items else None
                if last and last.kind == "macros" and not tok.blank_before and not pending:
                    last.values.append((m.group(1), value))
                else:
                    items.append(Item("macros", m.group(1), tok.line, doc,
                                      values=[(m.group(1), value)]))
            elif pending:
                detach()
            pending.clear()
            continue
        item = declaration(tok, doc, is_doc, errors)
        if item:
            items.append(item)
        pending.clear()
    if pending:
        detach()
    for it in items:
        if it.kind == "macros":  # a group is named by its names' common prefix
            names = [n for n, _ in it.values]
            prefix = names[0] if len(names) == 1 else _common_prefix(names) + "*"
            it.name = prefix
        if it.kind in ("macros", "enum", "struct", "opaque") and not it.doc:
            errors.append(f"{HEADER}:{it.line}: {it.name}: no comment above it")
    errors.sort(key=lambda e: int(e.split(":")[1]))
    return items, errors


def _common_prefix(names: List[str]) -> str:
    p = names[0]
    for n in names[1:]:
        while not n.startswith(p):
            p = p[:-1]
    return p


def declaration(tok: Token, doc: Optional[str], is_doc: bool, errors: List[str]) -> Optional[Item]:
    c = flat(tok.text)
    where = f"{HEADER}:{tok.line}"
    m = re.fullmatch(r"QG_API (.+?)\b(\w+) ?\((.*)\) ?;", c)
    if m:
        ret, name = m.group(1).strip(), m.group(2)
        params = [p.strip() for p in m.group(3).split(",")]
        desc, returns = doc or "", None
        if doc is not None and "@return" in doc:
            desc, returns = doc.split("@return", 1)
        if doc is None or not is_doc:
            errors.append(f"{where}: {name}: no /** doc comment above it")
        elif ret != "void" and returns is None:
            errors.append(f"{where}: {name}: its doc comment has no @return (the contract)")
        return Item("function", name, tok.line, doc, ret=ret, params=params,
                    desc=_prose(desc), returns=_prose(returns) if returns else None)
    m = re.fullmatch(r"typedef (enum|struct) (?:\w+ )?\{.*\} ?(\w+) ?;", c)
    if m:
        body = tok.text[tok.text.index("{") + 1:tok.text.rindex("}")]
        body_line = tok.line + tok.text[:tok.text.index("{")].count("\n")
        members = _members(body, body_line, "," if m.group(1) == "enum" else ";", where)
        return Item(m.group(1), m.group(2), tok.line, doc, members=members)
    m = re.fullmatch(r"typedef struct (\w+) (\w+) ?;|struct (\w+) ?;", c)
    if m:
        name = m.group(2) or f"struct {m.group(3)}"
        return Item("opaque", name, tok.line, doc, decl=c)
    errors.append(f"{where}: a declaration the generator does not know: {c[:60]}")
    return None


def _prose(text: str) -> str:
    """A function's text: paragraphs (blank-line separated) joined into lines."""
    paras = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(md.inline(" ".join(p.split()), NAMES) for p in paras if p.strip())


def _members(body: str, first_line: int, sep: str, where: str) -> List[Tuple[str, str]]:
    """An enum's or struct's body -> [(code, comment)] in order; code "" is a
    note (a comment on a line of its own). A comment that starts on the line
    where a member ends describes that member."""
    def line_at(pos: int) -> int:
        return first_line + body.count("\n", 0, pos)

    members: List[list] = []  # [code, comment, line where the code ends]
    code, code_line = "", 0
    for m in re.finditer(r"/\*.*?\*/|[^/]+|/", body, re.S):
        piece, start = m.group(0), m.start()
        if piece.startswith("/*"):
            if code.strip() and sep == ",":  # the last enumerator needs no comma
                members.append([code, "", code_line])
                code = ""
            last = members[-1] if members else None
            text = " ".join(comment_text(piece).split())
            if last and last[0] and not last[1] and last[2] == line_at(start):
                last[1] = text
            else:
                members.append(["", text, line_at(start)])
            continue
        off = 0
        for i, part in enumerate(piece.split(sep)):
            if i:  # a separator ended the member before this part
                members.append([code, "", code_line])
                code = ""
            code += part
            if part.strip():
                code_line = line_at(start + off + len(part.rstrip()))
            off += len(part) + len(sep)
    if code.strip():
        if sep == ";":
            raise SyntaxError(f"{where}: struct member without ';': {code.strip()}")
        members.append([code, "", code_line])
    return [(" ".join(c.split()), t) for c, t, _ in members if c.strip() or t]


# ---- rendering ---------------------------------------------------------------------

def render(text: str) -> Tuple[str, List[str]]:
    items, errors = parse(text)
    version = next((v for it in items if it.kind == "macros"
                    for n, v in it.values if n == "QG_VERSION_STRING"), "?").strip('"')
    doc = md.Document()
    for it in items:
        if it.kind == "overview":
            doc.heading(2, "Overview")
            doc.add(*md.blocks(it.doc, NAMES))
        elif it.kind == "section":
            doc.heading(2, it.name)
        elif it.kind == "prose":
            doc.add(*md.blocks(it.doc, NAMES))
        else:
            doc.heading(3, f"`{it.name}`")
            doc.add(*RENDER[it.kind](it))
    preamble = [
        f"*Generated from [`{HEADER}`](../{HEADER}) by `tools/gen_api_doc.py`: edit the "
        "header's comments, then run `make docs`.*",
        f"The C API of qgemm {version}. Every function returns a `qg_status` unless its "
        "**Returns** says otherwise; on failure `qg_last_error()` says why. The Python "
        "package is described in [PYTHON_API.md](PYTHON_API.md).",
    ]
    return doc.render("qgemm C API reference", preamble), errors


def _function(it: Item) -> List[str]:
    sig = md.signature(f"{it.ret}{'' if it.ret.endswith('*') else ' '}{it.name}", it.params, ";")
    parts = [f"```c\n{sig}\n```", it.desc]
    if it.returns:
        parts.append(f"**Returns** {it.returns}")
    return parts


def _enum(it: Item) -> List[str]:
    rows, value = [], -1
    for code, comment in it.members:
        if not code:
            rows.append(("", "", md.inline(comment, NAMES)))
            continue
        name, _, given = (s.strip() for s in code.partition("="))
        try:  # an enumerator without "=" is the previous one plus 1
            value = int(given, 0) if given else value + 1
        except (ValueError, TypeError):
            value = given or "?"
        rows.append((f"`{name}`", f"`{value}`", md.inline(comment, NAMES)))
    return [*md.blocks(it.doc, NAMES), md.table(("Name", "Value", "Meaning"), rows)]


def _struct(it: Item) -> List[str]:
    parts, rows = md.blocks(it.doc, NAMES), []
    for code, comment in it.members:
        if not code:  # a note between fields: it ends one table and starts another
            if rows:
                parts.append(md.table(("Field", "Type", "Meaning"), rows))
                rows = []
            parts.append(f"*{md.inline(comment, NAMES)}*")
            continue
        first, *more = code.split(",")
        m = re.fullmatch(r"(.+?) ?(\**) ?(\w+) ?(\[\w*\])?", first.strip())
        if not m:
            raise SyntaxError(f"{HEADER}: {it.name}: cannot read the field '{code}'")
        base, stars, name, array = m.groups()
        names = [name] + [re.sub(r"[\s*]", "", n) for n in more]
        ctype = base + (" " + stars if stars else "") + (array or "")
        rows.append((", ".join(f"`{n}`" for n in names), f"`{ctype}`", md.inline(comment, NAMES)))
    if rows:
        parts.append(md.table(("Field", "Type", "Meaning"), rows))
    return parts


def _macros(it: Item) -> List[str]:
    rows = [(f"`{n}`", f"`{v}`") for n, v in it.values]
    return [*md.blocks(it.doc, NAMES), md.table(("Macro", "Value"), rows)]


def _opaque(it: Item) -> List[str]:
    return [f"```c\n{it.decl}\n```", *md.blocks(it.doc, NAMES)]


RENDER = {"function": _function, "enum": _enum, "struct": _struct, "macros": _macros,
          "opaque": _opaque}
