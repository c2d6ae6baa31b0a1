#!/usr/bin/env python3
"""Lists import cycles among the modules of one Rust module directory.

Usage: python3 scripts/module_cycles.py crates/nabla-tensor/src/autograd

A module depends on another when its code (comments excluded) names it by `super::NAME`,
`super::super::NAME` (from a submodule) or `crate::<dir>::NAME`; a submodule directory
(`rules/`) counts as one module. Prints each module's dependencies and every cycle (strongly
connected component of more than one module); exits with 1 when there is a cycle.
"""
import pathlib
import re
import sys


def module_of(path: pathlib.Path, root: pathlib.Path) -> str:
    rel = path.relative_to(root)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def code_lines(path: pathlib.Path):
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not stripped.startswith("//"):
            yield line.split("//")[0]


def graph(root: pathlib.Path) -> dict:
    modules = {module_of(p, root) for p in root.rglob("*.rs")} - {"mod"}
    crate_path = "crate::" + "::".join(root.parts[root.parts.index("src") + 1:]) + "::"
    deps = {m: set() for m in modules}
    for path in root.rglob("*.rs"):
        me = module_of(path, root)
        if me == "mod":
            continue
        nested = len(path.relative_to(root).parts) > 1
        prefixes = ["super::super::", re.escape(crate_path)] if nested else ["super::", re.escape(crate_path)]
        pattern = re.compile(r"(?:%s)([a-z_]+)" % "|".join(prefixes))
        for line in code_lines(path):
            for name in pattern.findall(line):
                if name in modules and name != me:
                    deps[me].add(name)
    return deps


def cycles(deps: dict) -> list:
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return found


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "crates/nabla-tensor/src/autograd")
    deps = graph(root)
    for module in sorted(deps):
        print(f"{module} -> {', '.join(sorted(deps[module])) or '(nothing)'}")
    loops = cycles(deps)
    for loop in loops:
        print("cycle:", " <-> ".join(loop))
    print(f"{len(loops)} cycle(s)")
    return 1 if loops else 0


if __name__ == "__main__":
    sys.exit(main())
