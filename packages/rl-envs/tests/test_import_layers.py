"""The folders of rl_envs import in layers: no import circle among the modules of a folder
(function-level and TYPE_CHECKING imports included), read from import-linter's graph."""

import pytest

grimp = pytest.importorskip("grimp")  # import-linter's graph (the lint group)


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("rl_envs")


def _circle(graph, folder: str) -> list[str] | None:
    """One import circle among the children of ``folder`` (a child stands for itself and its
    descendants), or ``None``."""
    children = sorted(graph.find_children(folder))
    members = {child: {child} | graph.find_descendants(child) for child in children}
    owner = {module: child for child, modules in members.items() for module in modules}
    edges: dict[str, set[str]] = {child: set() for child in children}
    for child, modules in members.items():
        for module in modules:
            for imported in graph.find_modules_directly_imported_by(module):
                target = owner.get(imported)
                if target is not None and target != child:
                    edges[child].add(target)
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found is not None:
                    return found
        path.pop()
        state[node] = 2
        return None

    for child in children:
        if child not in state:
            found = visit(child)
            if found is not None:
                return found
    return None


@pytest.mark.parametrize("folder", ["rl_envs", "rl_envs.batched", "rl_envs.libs"])
def test_no_import_circle_inside_the_folder(graph, folder):
    circle = _circle(graph, folder)
    assert circle is None, f"{folder}: import circle {' -> '.join(circle)}"
