"""The extension's layers, read from its source (no Blender needed): no import cycle among its modules,
counting imports inside functions (only `if TYPE_CHECKING:` blocks, never run, are left out), and the pure
modules (the solvers, the ground model and its tuning) import neither `bpy` nor a module that does."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Pure numpy / mathutils: testable without Blender's data, like `solvers/`.
PURE = ("solvers", "core.model", "core.tuning", "core.heightfield")


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for p in sorted(ROOT.rglob("*.py")):
        rel = p.relative_to(ROOT)
        if rel.parts[0] in ("tests", "benchmarks", "tools") or any(part.startswith(".") for part in rel.parts):
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node but those under `if TYPE_CHECKING:` (imports for annotations only)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return [n for n in ast.walk(tree) if id(n) not in skip]


def imports(mods: dict[str, pathlib.Path]) -> dict[str, tuple[set[str], set[str]]]:
    """Per module: (the extension's modules it imports, the outside top-level packages it imports)."""
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        ours: set[str] = set()
        outside: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                outside.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                outside.add((node.module or "").split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join(base + ([node.module] if node.module else []))
                subs = [f"{mod}.{a.name}".lstrip(".") for a in node.names]
                found = [s for s in subs if s in mods]
                if len(found) < len(subs):  # names from the module itself
                    found.append(mod)
                ours.update(f for f in found if f in mods and f != name)
        graph[name] = (ours, outside)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_a_cycle_and_a_function_level_import():
    """The checker itself can fail: a cycle made only by an import inside a function is found."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    tree = ast.parse("def f():\n    from . import b\nif TYPE_CHECKING:\n    from . import c\n")
    names = [n.names[0].name for n in _runtime_nodes(tree) if isinstance(n, ast.ImportFrom)]
    assert names == ["b"]


def test_no_import_cycle_among_the_extensions_modules():
    mods = _modules()
    assert {"core.reader", "core.model", "core.batch", "core.live", "core.bake", "properties", "cli"} <= set(mods)
    graph = {name: ours for name, (ours, _outside) in imports(mods).items()}
    assert cycles(graph) == []


def test_pure_modules_import_no_bpy():
    mods = _modules()
    graph = imports(mods)
    pure = [m for m in mods if any(m == p or m.startswith(p + ".") for p in PURE)]
    assert "core.model" in pure and "core.tuning" in pure and "solvers.rotations" in pure
    for name in pure:
        ours, outside = graph[name]
        assert "bpy" not in outside and "bpy_extras" not in outside, name
        impure = [m for m in ours if not any(m == p or m.startswith(p + ".") for p in PURE)]
        assert not impure, f"{name} imports {impure}, which are not pure"
