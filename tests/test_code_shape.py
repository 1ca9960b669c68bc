"""The code-shape limits of ``socialjax/`` (docs/architecture.md, "Code shape").

Everywhere in the package a module is at most ``MODULE_LINES`` lines and a function (or
method) at most ``FUNCTION_LINES``. The host side (``HOST_SIDE``: the command line, the
reproductions, and the training modules that run jobs on the host and look after their
folders, devices, trackers and reports, rather than build the compiled programs) is held
to the tighter ``HOST_MODULE_LINES`` and ``HOST_FUNCTION_LINES``. A failure lists every
module and function over its limit, with its length and the limit.

A module's length is its line count; a function's is ``end_lineno - lineno + 1`` of its
``ast`` node (decorators are not counted). The test reads the source with ``ast`` only:
it imports nothing from the package and takes well under a second.
"""

import ast
from fnmatch import fnmatch
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "socialjax"

MODULE_LINES = 500
FUNCTION_LINES = 80
HOST_MODULE_LINES = 400
HOST_FUNCTION_LINES = 60

# The host side: path patterns relative to socialjax/ (fnmatch; "*" also crosses "/"). The
# command line, the reproductions, and the training modules that run jobs and look after
# their folders, devices, trackers and reports rather than trace arrays (the compiled loop,
# the learners' plumbing and the seating are held to the package's limits).
HOST_SIDE = (
    "cli/*",
    "reproduce/*",
    "train/engine.py",
    "train/stages.py",
    "train/run.py",
    "train/runner.py",
    "train/models.py",
    "train/spec.py",
    "train/store.py",
    "train/store_paths.py",
    "train/store_locks.py",
    "train/results.py",
    "train/formats.py",
    "train/tracking.py",
    "train/listeners.py",
    "train/trackers.py",
    "train/progress.py",
    "train/reports.py",
    "train/tables.py",
    "train/interrupts.py",
    "train/compilation.py",
    "train/devices.py",
    "train/memory.py",
    "train/cultural_evolution.py",
)


def is_host_side(relative: str) -> bool:
    return any(fnmatch(relative, pattern) for pattern in HOST_SIDE)


def functions(tree: ast.AST):
    """Every function and method of a module, nested ones included, with its qualified name."""

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                yield name, child
                yield from visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.")
            else:
                yield from visit(child, prefix)

    yield from visit(tree, "")


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        host = is_host_side(relative)
        module_limit, function_limit = (
            (HOST_MODULE_LINES, HOST_FUNCTION_LINES) if host else (MODULE_LINES, FUNCTION_LINES)
        )
        source = path.read_text()
        lines = len(source.splitlines())
        side = "host side" if host else "package"
        if lines > module_limit:
            found.append(f"socialjax/{relative}: module of {lines} lines (limit {module_limit}, {side})")
        for name, node in functions(ast.parse(source, filename=str(path))):
            length = node.end_lineno - node.lineno + 1
            if length > function_limit:
                found.append(
                    f"socialjax/{relative}:{node.lineno} {name}: function of {length} lines "
                    f"(limit {function_limit}, {side})"
                )
    return found


def test_the_host_side_patterns_name_existing_modules():
    """Every pattern matches a module, so a typo shows."""
    relatives = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")]
    unmatched = [p for p in HOST_SIDE if not any(fnmatch(r, p) for r in relatives)]
    assert not unmatched, f"host-side patterns matching no module: {unmatched}"


def test_modules_and_functions_within_the_limits():
    found = violations()
    assert not found, f"{len(found)} code-shape violation(s):\n" + "\n".join(found)
