"""Import cycles and function-level imports of a package, from its source (the AST; nothing is imported).

Counts (a) the pairs of modules that import each other and the groups of modules that reach each other through
imports (longer cycles), counting every import statement wherever it is (inside functions and ``if
TYPE_CHECKING:`` too), and (b) the function-level imports of the package's own modules (one per statement and
module loaded: ``from .x import a, b`` is one). ``--list`` names them all. Relative imports are resolved;
``from pkg import name`` counts ``pkg.name`` when that is a module, else ``pkg``.

Usage (from the checkout)::

    python tools/import_cycles.py [--src src] [--package taskbench] [--list]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def targets(node: ast.Import | ast.ImportFrom, here: str, is_pkg: bool, known: set[str]) -> list[str]:
    """The known modules an import statement loads (the deepest known module of each name)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = here.split(".") if is_pkg else here.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        names = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
    out = []
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            out.append(name)
    return out


def scan(root: Path, package: str) -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    files = {module_name(root, p): p for p in (root / package).rglob("*.py")}
    known = set(files)
    edges: dict[str, set[str]] = {m: set() for m in known}
    lazy: list[tuple[str, int, str]] = []
    for mod, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        is_pkg = path.name == "__init__.py"

        def visit(node: ast.AST, in_function: bool, mod: str = mod, is_pkg: bool = is_pkg) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    # one statement counts once per module it loads (from x import a, b: once)
                    for target in sorted(set(targets(child, mod, is_pkg, known)) - {mod}):
                        edges[mod].add(target)
                        if in_function:
                            lazy.append((mod, child.lineno, target))
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(tree, False)
    return edges, lazy


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other through imports (strongly connected, more than one)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            connect(v)
    return sorted(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=Path("src"), help="the directory holding the package")
    parser.add_argument("--package", default="taskbench")
    parser.add_argument("--list", action="store_true", help="name every pair, cycle and function-level import")
    args = parser.parse_args()
    package = args.package
    edges, lazy = scan(args.src, package)
    pairs = sorted({tuple(sorted((a, b))) for a, bs in edges.items() for b in bs if a in edges.get(b, set())})
    print(f"mutual import pairs: {len(pairs)}")
    groups = cycles(edges)
    print(f"import cycles (groups of modules reaching each other): {len(groups)}, "
          f"{sum(map(len, groups))} modules")
    print(f"function-level imports of {package} modules: {len(lazy)}")
    if args.list:
        for a, b in pairs:
            print(f"  pair: {a} <-> {b}")
        for group in groups:
            print(f"  cycle: {' '.join(group)}")
        for mod, line, target in lazy:
            print(f"  lazy: {mod}:{line} -> {target}")


if __name__ == "__main__":
    main()
