"""The Python API reference: python/qgemm -> docs/PYTHON_API.md (for tools/gen_api_doc.py).

What it does: reads the package's sources with `ast`, never importing them (the
package needs its compiled extension, and some helpers need torch), and renders

  - the package docstring, as the overview;
  - every name in qgemm.__all__, in that order, in sections titled by the
    "# comment" lines inside the __all__ list. A computed part of __all__,
    `sorted(module.TABLE)`, is read from that module's dict TABLE and titled by
    the "# ---- title ----" banner above it. A name is shown as
      a function: its signature (from the source text) and its docstring;
      another name for a function (`x = y`): an alias, with the line's comment;
      a variable: its annotation and value, and its attribute docstring;
      a dict entry whose value is a string: a stub that raises
      NotImplementedError, with that string as the reason (one table);
  - the public type aliases that have an attribute docstring (the names the
    signatures use, wherever they are defined), and every public submodule
    (qgemm/x.py) that is not a family module whose names qgemm re-exports, and
    every subpackage (qgemm/deep_gemm/...): its docstring and the names it
    binds differently.

Invariants: the output depends only on the source text. Every name in __all__
is rendered or the generator stops with an error naming it (nothing is dropped
silently). A public function or variable without documentation is returned as
a gap ("python/qgemm/x.py:LINE: name: ...").
"""
from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import apidoc_md as md

PACKAGE = "python/qgemm"
_BANNER = re.compile(r"#\s*-{2,}\s*(.*?)\s*-*\s*$")


class Module:
    """One source file of the package: its top-level definitions by name, and
    the docstrings written under assignments."""

    def __init__(self, root: Path, name: str) -> None:
        self.name = name
        self.path = f"{PACKAGE}/{name}.py"
        self.source = (root / self.path).read_text()
        self.lines = self.source.split("\n")
        self.tree = ast.parse(self.source)
        self.defs: Dict[str, ast.AST] = {}
        self.attr_docs: Dict[str, str] = {}
        body = self.tree.body
        for i, node in enumerate(body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs[node.name] = node
            elif isinstance(node, ast.ImportFrom) and node.level == 1:
                for alias in node.names:
                    self.defs[alias.asname or alias.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        self.defs[t.id] = node
                        nxt = body[i + 1] if i + 1 < len(body) else None
                        if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) \
                                and isinstance(nxt.value.value, str):
                            self.attr_docs[t.id] = inspect.cleandoc(nxt.value.value)

    def seg(self, node: ast.AST) -> str:
        """The node's source text, whitespace collapsed (ast's offsets are in
        UTF-8 bytes; ast.get_source_segment would re-split the file per call)."""
        lines = [l.encode() for l in self.lines[node.lineno - 1:node.end_lineno]]
        lines[-1] = lines[-1][:node.end_col_offset]
        lines[0] = lines[0][node.col_offset:]
        return " ".join(b"\n".join(lines).decode().split())

    def banner_above(self, line: int) -> Optional[str]:
        for text in reversed(self.lines[:line - 1]):
            m = _BANNER.match(text.strip())
            if m:
                return m.group(1)
        return None

    def trailing_comment(self, line: int) -> str:
        text = self.lines[line - 1]
        return text.split("#", 1)[1].strip() if "#" in text else ""


class Package:
    def __init__(self, root: Path) -> None:
        self.root, self._modules = root, {}

    def module(self, name: str) -> Module:
        if name not in self._modules:
            self._modules[name] = Module(self.root, name)
        return self._modules[name]

    def resolve(self, mod: Module, name: str) -> Tuple[Module, ast.AST, str]:
        """The module and node that define `name` as seen from `mod`, following
        `from .x import name` (and `from . import x as name`, a module)."""
        node = mod.defs.get(name)
        if node is None:
            raise KeyError(f"{mod.path}: {name} is not defined at the top level")
        if isinstance(node, ast.ImportFrom):
            alias = next(a for a in node.names if (a.asname or a.name) == name)
            if node.module is None:  # from . import x [as y]: the module itself
                return self.module(alias.name), node, alias.name
            return self.resolve(self.module(node.module), alias.name)
        return mod, node, name


class Entry:
    def __init__(self, name: str, kind: str, mod: Module, node: Optional[ast.AST],
                 text: str = "") -> None:
        self.name, self.kind, self.mod, self.node, self.text = name, kind, mod, node, text


def public_entries(pkg: Package) -> List[Tuple[str, List[Entry]]]:
    """qgemm.__all__ as [(section title, entries)] in __all__'s order."""
    init = pkg.module("__init__")
    sections: List[Tuple[str, List[Entry]]] = []

    def add(title: str, entry: Entry) -> None:
        if not sections or sections[-1][0] != title:
            sections.append((title, []))
        sections[-1][1].append(entry)

    def walk(expr: ast.AST) -> None:
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            walk(expr.left)
            walk(expr.right)
        elif isinstance(expr, ast.List):
            title, line = "qgemm's own names", expr.lineno
            for elt in expr.elts:
                for text in init.lines[line:elt.lineno - 1]:  # comment lines in between
                    if text.strip().startswith("#"):
                        title = text.strip().lstrip("#").strip()
                if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
                    raise ValueError(f"{init.path}:{elt.lineno}: __all__ holds a non-string")
                add(title, describe(pkg, init, elt.value))
                line = elt.end_lineno
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) \
                and expr.func.id == "sorted" and len(expr.args) == 1:
            mod, node, entries = table_entries(pkg, init, expr.args[0])
            title = mod.banner_above(node.lineno) or f"{mod.name}: {init.seg(expr.args[0])}"
            for e in sorted(entries, key=lambda e: e.name):
                add(title, e)
        else:
            raise ValueError(f"{init.path}:{expr.lineno}: cannot read __all__ part "
                             f"{init.seg(expr)}")

    walk(assigned(init, "__all__"))
    return sections


def assigned(mod: Module, name: str) -> ast.AST:
    node = mod.defs.get(name)
    if not isinstance(node, (ast.Assign, ast.AnnAssign)):
        raise ValueError(f"{mod.path}: {name} is not assigned at the top level")
    return node.value


def describe(pkg: Package, mod: Module, name: str) -> Entry:
    mod, node, defined = pkg.resolve(mod, name)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return Entry(name, "function", mod, node)
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
        return Entry(name, "alias", mod, node, node.value.id)
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return Entry(name, "variable", mod, node, mod.attr_docs.get(defined, ""))
    raise ValueError(f"{mod.path}:{node.lineno}: {name}: a kind of definition the "
                     "generator does not render")


def table_entries(pkg: Package, mod: Module, expr: ast.AST) -> Tuple[Module, ast.AST, List[Entry]]:
    """The entries of a dict named by `expr` (`x.TABLE` or `TABLE`): a literal
    {name: reason} (stubs), or a comprehension over such a dict's .items() or
    over a tuple of functions."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        mod, _, _ = pkg.resolve(mod, expr.value.id)
        expr = ast.Name(id=expr.attr)
    if not isinstance(expr, ast.Name):
        raise ValueError(f"{mod.path}: cannot read the table {ast.dump(expr)}")
    node = mod.defs[expr.id]
    value = node.value
    if isinstance(value, ast.Dict):
        return mod, node, [Entry(k.value, "stub", mod, None, const_str(mod, v))
                           for k, v in zip(value.keys, value.values)]
    if isinstance(value, ast.DictComp):
        it = value.generators[0].iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) \
                and it.func.attr == "items":
            _, _, entries = table_entries(pkg, mod, it.func.value)
            return mod, node, entries
        if isinstance(it, (ast.Tuple, ast.List)):
            return mod, node, [describe(pkg, mod, e.id) for e in it.elts]
    raise ValueError(f"{mod.path}:{node.lineno}: cannot read the table {expr.id}")


def const_str(mod: Module, node: ast.AST) -> str:
    """A string built from literals, module-level string names and "+"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return const_str(mod, assigned(mod, node.id))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return const_str(mod, node.left) + const_str(mod, node.right)
    raise ValueError(f"{mod.path}:{node.lineno}: not a constant string: {mod.seg(node)}")


# ---- rendering ---------------------------------------------------------------------

def render(root: Path, version: str) -> Tuple[str, List[str]]:
    pkg = Package(root)
    init = pkg.module("__init__")
    sections = public_entries(pkg)
    # public names set as code in running text: those with an "_" (not "compile",
    # "align"), not after a "." ("torch.compile")
    public = sorted({e.name for _, es in sections for e in es if "_" in e.name.strip("_")},
                    key=len, reverse=True)
    names = r"(?<![.\w])(?:" + "|".join(map(re.escape, public)) + r")\b(?:\(\))?"
    errors: List[str] = []
    doc = md.Document()

    doc.heading(2, "Overview")
    doc.add(*md.blocks(ast.get_docstring(init.tree) or "", names))
    for title, entries in sections:
        doc.heading(2, title)
        stubs = [e for e in entries if e.kind == "stub"]
        if stubs:
            doc.add("Each of these exists so that code written for DeepGEMM fails clearly: "
                    "calling it raises `NotImplementedError` with the reason given here.",
                    md.table(("Name", "Why qgemm lacks it"),
                             [(f"`{e.name}`", md.inline(e.text, names)) for e in stubs]))
        for e in entries:
            if e.kind != "stub":
                doc.heading(3, f"`{e.name}`")
                doc.add(*_entry(e, "qgemm", names, errors))

    aliases = []
    for n in init.defs:
        if n.startswith("_"):
            continue
        try:
            mod, node, defined = pkg.resolve(init, n)
        except KeyError:
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and defined in mod.attr_docs \
                and n not in {e.name for _, es in sections for e in es}:
            aliases.append((n, mod, node, mod.attr_docs[defined]))
    if aliases:
        doc.heading(2, "Type aliases")
        doc.add("The names the signatures above use for their argument types.")
        for n, mod, node, text in aliases:
            doc.heading(3, f"`{n}`")
            doc.add(f"```python\n{mod.seg(node)}\n```", *md.blocks(text, names))

    # Public submodules: a family module (qgemm/fp8.py, ...) whose names qgemm
    # re-exports is documented through them above; the others (and the
    # subpackages, qgemm/deep_gemm/, qgemm/deep_gemm/utils/) get a section.
    families = {node.module for node in init.tree.body
                if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}
    for path in sorted((root / PACKAGE).glob("[!_]*.py")):
        if path.stem not in families:
            _submodule(doc, pkg.module(path.stem), names, errors)
    for path in sorted((root / PACKAGE).glob("[!_]*/**/__init__.py")):
        rel = path.relative_to(root / PACKAGE).parent.as_posix()
        _submodule(doc, pkg.module(f"{rel}/__init__"), names, errors, rel.replace("/", "."))

    preamble = [
        f"*Generated from [`{PACKAGE}/`](../{PACKAGE}) by `tools/gen_api_doc.py`, which reads "
        "the sources without importing them: edit the docstrings, then run `make docs`.*",
        f"The Python package `qgemm` {version} (its version is the C library's). The C API "
        "is described in [API.md](API.md), the DeepGEMM mapping in "
        "[DEEPGEMM.md](DEEPGEMM.md), installation in "
        "[python/README.md](../python/README.md).",
    ]
    return doc.render("qgemm Python API reference", preamble), errors


def _entry(e: Entry, prefix: str, names: str, errors: List[str]) -> List[str]:
    where = f"{e.mod.path}:{e.node.lineno}: {e.name}"
    if e.kind == "function":
        text = ast.get_docstring(e.node) or ""
        if not text:
            errors.append(f"{where}: no docstring")
        ret = f" -> {e.mod.seg(e.node.returns)}" if e.node.returns else ""
        sig = md.signature(f"{prefix}.{e.name}", _params(e.mod, e.node.args), ret)
        return [f"```python\n{sig}\n```", *md.blocks(text, names)]
    if e.kind == "alias":
        note = e.mod.trailing_comment(e.node.lineno)
        return [f"Another name for [`{e.text}`](#{md.anchor(e.text)})"
                + (f" ({md.inline(note, names)})." if note else ".")]
    if not e.text:
        errors.append(f"{where}: no docstring under the assignment")
    return [f"```python\n{e.mod.seg(e.node)}\n```", *md.blocks(e.text, names)]


def _params(mod: Module, args: ast.arguments) -> List[str]:
    def one(a: ast.arg, default: Optional[ast.AST]) -> str:
        s = a.arg + (f": {mod.seg(a.annotation)}" if a.annotation else "")
        if default is not None:
            s += (" = " if a.annotation else "=") + mod.seg(default)
        return s

    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = [one(a, d) for a, d in zip(positional, defaults)]
    if args.posonlyargs:
        out.insert(len(args.posonlyargs), "/")
    if args.vararg:
        out.append("*" + one(args.vararg, None))
    elif args.kwonlyargs:
        out.append("*")
    out += [one(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        out.append("**" + one(args.kwarg, None))
    return out


def _submodule(doc: md.Document, mod: Module, names: str, errors: List[str],
               dotted: Optional[str] = None) -> None:
    """A public submodule (or subpackage, `dotted` its name below qgemm): its
    docstring, the names it binds to other objects, and its own functions."""
    dotted = dotted or mod.name
    doc.heading(2, f"qgemm.{dotted}")
    doc.add(*md.blocks(ast.get_docstring(mod.tree) or "", names))
    star = any(isinstance(n, ast.ImportFrom) and n.names[0].name == "*" for n in mod.tree.body) \
        or any(isinstance(n, ast.ImportFrom) and n.level == 2 for n in mod.tree.body)
    rows = [(f"`{n}`", f"`qgemm.{node.value.id}`") for n, node in mod.defs.items()
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
            and not n.startswith("_")]
    if rows:
        doc.add(f"`qgemm.{dotted}` binds these names differently from `qgemm`"
                + (" (every other public name is `qgemm`'s):" if star else ":"),
                md.table(("Name", "Is"), rows))
    for n, node in mod.defs.items():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.startswith("_"):
            doc.heading(3, f"`qgemm.{dotted}.{n}`")
            doc.add(*_entry(Entry(n, "function", mod, node), f"qgemm.{dotted}", names, errors))
