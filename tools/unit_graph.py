#!/usr/bin/env python3
"""unit_graph.py -- which C units call which, and whether any of them form a cycle.

Usage: unit_graph.py [--print] GROUP=OBJ... [GROUP=OBJ...]

A unit is one object file (one .c). Unit X depends on unit Y when X has an
undefined symbol that Y defines (read with `nm`). Units of one GROUP (the
library, the CLI, the Python extension) are checked together; symbols other
groups or the system define are not edges. The house rule (docs/DESIGN.md §2):
dependencies point one way, so no group may hold a cycle. Exits 1 naming each
cycle's units, 0 when there is none; --print lists every edge.
"""
import subprocess
import sys
from collections import defaultdict


def symbols(obj):
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRCVWG":  # global definitions (lower case: local)
            defined.add(name)
    return defined, undefined


def strongly_connected(nodes, edges):
    """Tarjan's algorithm: the components of more than one unit, or with a self loop."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main(argv):
    show = "--print" in argv
    groups = defaultdict(list)
    for arg in argv:
        if arg == "--print":
            continue
        if "=" not in arg:
            print(f"unit_graph.py: expected GROUP=OBJ, got {arg!r}", file=sys.stderr)
            return 2
        group, obj = arg.split("=", 1)
        groups[group].append(obj)
    if not groups:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    bad = 0
    for group, objs in sorted(groups.items()):
        table = {obj: symbols(obj) for obj in objs}
        owner = {}
        for obj, (defined, _) in table.items():
            for sym in defined:
                owner[sym] = obj
        edges = defaultdict(set)
        for obj, (_, undefined) in table.items():
            for sym in undefined:
                if sym in owner and owner[sym] != obj:
                    edges[obj].add(owner[sym])
        if show:
            for obj in sorted(edges):
                print(f"{group}: {obj} -> {', '.join(sorted(edges[obj]))}")
        cycles = strongly_connected(table.keys(), edges)
        for comp in cycles:
            print(f"unit cycle in {group}: {' <-> '.join(comp)}")
            bad = 1
        if not cycles:
            print(f"ok: {group}: {len(objs)} units, no cycle")
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
