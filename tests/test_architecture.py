"""The layout holds: no import cycle among the app's modules, however deep the import, and the
rooms depend one way (the engine on nothing of the host, the socket and the runs on the room
for events, and the socket on the runs only through the commands they accept)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "workflows"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def app_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for path in (ROOT / PACKAGE).rglob("*.py")
        if "migrations" not in path.parts
    }


def imported(module: str, path: Path, known: set[str]) -> set[str]:
    """Every app module `module` imports, at the top or inside a function."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the submodule when there is one.
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        found.update(name for name in names if name in known and name != module)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle():
    """The check itself works: a two-module loop and a three-module loop are reported."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": set()}
    assert cycles(graph) == [["a", "b"], ["c", "d", "e"]]


def test_relative_and_submodule_imports_are_resolved():
    """`from . import x` inside a package and `from pkg import sub` count as edges."""
    modules = app_modules()
    graph = {name: imported(name, path, set(modules)) for name, path in modules.items()}
    assert "workflows.events.broadcast" in graph["workflows.live.consumer"]
    assert "workflows.execution.durable" in graph["workflows.execution.launcher"]


def test_no_import_cycle_among_app_modules():
    """No module imports one that imports it back, however deep the chain."""
    modules = app_modules()
    graph = {name: imported(name, path, set(modules)) for name, path in modules.items()}
    assert cycles(graph) == []


FORBIDDEN = {
    # room: the rooms (packages or modules, by prefix) it must not import
    "workflows.engine": ("workflows.",),
    "workflows.tools": ("workflows.",),
    "workflows.events": (
        "workflows.live",
        "workflows.execution",
        "workflows.api",
        "workflows.views",
        "workflows.admin",
        "workflows.services",
    ),
    "workflows.execution": ("workflows.live", "workflows.api", "workflows.views"),
    "workflows.live": ("workflows.execution", "workflows.api", "workflows.views"),
}
ALLOWED = {
    "workflows.engine": ("workflows.engine",),
    "workflows.tools": ("workflows.tools", "workflows.engine", "workflows.markdown"),
    # the socket carries out a client's commands; the runs' other modules are theirs
    "workflows.live": ("workflows.execution.commands",),
}


def in_room(module: str, room: str) -> bool:
    return module == room or module.startswith(room + ".")


def crossings(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a room into a room it must not depend on."""
    found = []
    for module, targets in sorted(graph.items()):
        for room, banned in FORBIDDEN.items():
            if not in_room(module, room):
                continue
            for target in sorted(targets):
                if any(in_room(target, ok) for ok in ALLOWED.get(room, ())):
                    continue
                if any(
                    in_room(target, bad.rstrip(".")) or target.startswith(bad) for bad in banned
                ):
                    found.append(f"{module} -> {target}")
    return found


def test_rooms_depend_one_way():
    """The engine and the tools import nothing of the host; the room for events imports neither
    the socket nor the runs; the runs never import the socket; the socket reaches the runs only
    through the commands a client may send."""
    modules = app_modules()
    graph = {name: imported(name, path, set(modules)) for name, path in modules.items()}
    assert crossings(graph) == []


def test_a_crossing_is_found():
    """The check sees an import from the runs into the socket, and from the socket into a run's
    internals (so an empty list above means something)."""
    graph = {
        "workflows.execution.runner": {"workflows.live.follow"},
        "workflows.live.consumer": {"workflows.execution.launcher", "workflows.execution.commands"},
    }
    assert crossings(graph) == [
        "workflows.execution.runner -> workflows.live.follow",
        "workflows.live.consumer -> workflows.execution.launcher",
    ]
