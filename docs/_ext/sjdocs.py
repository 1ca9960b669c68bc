"""The Sphinx extension behind docs/conf.py: what the API reference needs beyond autodoc.

- Every object is documented once, in the module that defines it. A module's page lists what
  it re-exports (its ``__all__`` names imported from elsewhere), and a cross-reference by any
  public name (``:func:`socialjax.make` ``, ``:class:`socialjax.train.TrainConfig` ``) or by a
  name as the docstring's own module sees it links to that one entry (``_resolve_alias``); a
  name that Python cannot import, or an object documented nowhere, stays a broken reference,
  which the strict build fails on.
- Module constants are documented whether or not they carry a ``#:`` comment.
- The modules whose package rebinds their name (``socialjax.rollout``, ``socialjax.train.run``)
  get their pages here, since autosummary cannot reach them.
- ``.. socialjax-envs::`` lists the registered environments from the registry.
- A module of the package with no page is a warning.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

import flax.linen
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.ext import autodoc, autosummary
from sphinx.ext.napoleon import Config as NapoleonConfig
from sphinx.ext.napoleon.docstring import GoogleDocstring
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, switch_source_input
from sphinx.util.inspect import object_description
from sphinx.util.nodes import make_refnode, nested_parse_with_titles

import socialjax

logger = logging.getLogger(__name__)
PACKAGE = Path(socialjax.__file__).parent
#: every module of the package, by its file (``socialjax.envs.grid`` has no ``__init__``), except
#: the command line's ``__main__``, whose import runs the command
MODULES = sorted(".".join(("socialjax", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
                 for p in PACKAGE.rglob("*.py") if p.name != "__main__.py")
for _name in MODULES:  # all of them, so that what they export is known below
    importlib.import_module(_name)


@functools.cache
def _assigned(modname: str) -> frozenset[str]:
    """The names a module's top level assigns (``X = ...``, ``X: T = ...``, also under an
    ``if``/``try``), not those it imports."""
    try:
        tree = ast.parse(inspect.getsource(sys.modules[modname]))
    except (OSError, TypeError, KeyError):
        return frozenset()
    names, todo = set(), list(tree.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(stmt, ast.If | ast.Try):
            todo += stmt.body + stmt.orelse + getattr(stmt, "finalbody", []) + [
                s for h in getattr(stmt, "handlers", []) for s in h.body]
    return frozenset(names)


def _defined_here(module, name: str) -> bool:
    """Whether ``module`` itself defines ``name`` (a def, a class or an assignment), rather
    than importing it from another module."""
    value = getattr(module, name)
    if inspect.isfunction(value) or inspect.isclass(value):
        return value.__module__ == module.__name__
    return name in _assigned(module.__name__)


def _public_modules() -> dict[str, object]:
    """The package's modules, by name."""
    return {name: sys.modules[name] for name in MODULES}


def _exports() -> dict[str, list[str]]:
    """``{module: [name, ...]}``: the names a module's ``__all__`` lists that it imports from
    another module (``socialjax.make`` is ``socialjax.core.registry.make``). Each object is
    documented once, in the module that defines it; a module's page lists what it re-exports,
    and a reference by any public name (``:func:`socialjax.make` ``) links to that one entry
    (``_resolve_alias`` below)."""
    exports = {}
    for name, module in _public_modules().items():
        names = [n for n in getattr(module, "__all__", ()) if hasattr(module, n)
                 and not inspect.ismodule(getattr(module, n)) and not _defined_here(module, n)]
        if names:
            exports[name] = names
    return exports


def _shadowed_modules() -> list[str]:
    """Modules whose package rebinds their name to one of their members: ``socialjax.rollout``
    is the function ``rollout``, ``socialjax.train.run`` the function ``run``. autosummary
    reaches a module through its package's attribute, so it cannot generate their pages;
    ``_write_shadowed_pages`` does. (A reference to the name links to the module's page,
    which documents the function: Sphinx has one entry per full name.)"""
    shadowed = []
    for name, module in _public_modules().items():
        if "." in name:
            parent, child = name.rsplit(".", 1)
            value = getattr(sys.modules.get(parent), child, module)
            if value is not module and getattr(value, "__module__", None) == name:
                shadowed.append(name)
    return shadowed


EXPORTS = _exports()
SHADOWED = _shadowed_modules()
#: what docs/_templates/autosummary/module.rst reads
CONTEXT = {
    "exports": EXPORTS,
    "shadowed": SHADOWED,
    "rebound": {p: [m for m in SHADOWED if m.rsplit(".", 1)[0] == p] for p in _public_modules()},
    # autosummary would import socialjax.cli.__main__ to list the command line's modules
    "extra_modules": {"socialjax.cli": [m for m in MODULES if m.startswith("socialjax.cli.")]},
}


def _write_shadowed_pages(app) -> None:
    out = os.path.join(app.confdir, "api", "generated")
    os.makedirs(out, exist_ok=True)
    for name in SHADOWED:
        text = (f"{name}\n{'=' * len(name)}\n\n.. automodule:: {name}\n   :members:\n   :undoc-members:\n"
                "   :ignore-module-all:\n   :show-inheritance:\n")
        path = Path(out, f"{name}.rst")
        if not path.exists() or path.read_text() != text:  # rewritten only when it changes
            path.write_text(text)


_MISSING = object()


@functools.cache
def _python_object(dotted: str):
    """The object a dotted name of this package names, or _MISSING: as Python's attribute access
    from ``socialjax`` finds it (``socialjax.rollout`` is the function), else by importing the
    longest module the name starts with (``socialjax.rollout.scan_steps``)."""
    if not (dotted == "socialjax" or dotted.startswith("socialjax.")):
        return _MISSING
    parts = dotted.split(".")
    obj = socialjax
    for part in parts[1:]:
        obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            break
    else:
        return obj
    for i in range(len(parts), 0, -1):
        modname = ".".join(parts[:i])
        if modname.endswith("__main__"):
            return _MISSING
        try:
            obj = importlib.import_module(modname)
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part, _MISSING)
            if obj is _MISSING:
                return _MISSING
        return obj
    return _MISSING


def _entries_by_last_name(env) -> dict[str, list[str]]:
    """The Python domain's entries by the last part of their name, built once per build (the
    references are resolved after every page has been read)."""
    objects = env.get_domain("py").objects
    cache = getattr(env, "_socialjax_by_last", None)
    if cache is None or cache[0] != len(objects):
        by_last = defaultdict(list)
        for name in objects:
            by_last[name.rsplit(".", 1)[-1]].append(name)
        cache = env._socialjax_by_last = (len(objects), by_last)
    return cache[1]


def _resolve_alias(app, env, node, contnode):
    """A Python cross-reference that names no documented entry, but names (as a full dotted name,
    or as a name in the namespace of the module or class the reference is written in) an object
    that is documented under another name: link to that entry. ``socialjax.make``, or
    ``TrainConfig`` written in a module that imports it, links to where it is defined;
    ``reproduce`` written in ``socialjax.reproduce.entry`` is looked up there, then in
    ``socialjax.reproduce`` and ``socialjax``. A name that imports nothing, or an object
    documented nowhere, stays a broken reference."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    module, cls = node.get("py:module"), node.get("py:class")
    candidates = [target]
    if module:
        candidates += [f"{module}.{cls}.{target}"] if cls else []
        # the module's own namespace, then its packages', as the docstrings write a sibling's
        # name (``engine.resolve_moves`` in ``socialjax.envs.grid.base``)
        parts = module.split(".")
        candidates += [".".join(parts[:i] + [target]) for i in range(len(parts), 0, -1)]
    objects = env.get_domain("py").objects
    for candidate in candidates:
        obj = _python_object(candidate)
        if obj is _MISSING:
            continue
        # the name itself too: a TypeVar is documented as data, and an annotation asks for a class;
        # a None or a bool is the same object under any name, so it must be that name
        same_name = obj is None or isinstance(obj, bool)
        for name in _entries_by_last_name(env).get(candidate.rsplit(".", 1)[-1], ()):
            if (name == candidate if same_name else _python_object(name) is obj):
                entry = objects[name]
                return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, name)
        break
    # an attribute of the class the reference is written in that has no entry of its own (set
    # in ``__init__``, or inherited from a private base): the class's entry, which describes it
    if node.get("reftype") == "attr" and module and cls and f"{module}.{cls}" in objects:
        klass = _python_object(f"{module}.{cls}")
        if inspect.isclass(klass) and _has_attribute(klass, target):
            entry = objects[f"{module}.{cls}"]
            return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode,
                                f"{module}.{cls}")
    return None


def _has_attribute(klass: type, name: str) -> bool:
    """Whether ``klass`` (or a base) has the attribute ``name``: as a class attribute, or set
    as ``self.name`` in one of its methods."""
    if "." in name or not name.isidentifier():
        return False
    if hasattr(klass, name):
        return True
    for base in klass.__mro__:
        if base.__module__.startswith("socialjax"):
            analyzer = ModuleAnalyzer.for_module(base.__module__)
            analyzer.analyze()
            if f"{base.__qualname__}.{name}" in analyzer.tagorder:
                return True
    return False


def _first_sentence(text: str) -> str:
    """The first sentence of a paragraph: up to the first period that ends a sentence outside
    a ``literal`` (autosummary's own may cut ``learner 0 .. L-1`` in two)."""
    done = ""
    for part in re.split(r"(``.*?``)", " ".join(text.split())):
        if part.startswith("``"):
            done += part
            continue
        end = re.search(r"\.(\s|$)", part)
        if end:
            return done + part[:end.start() + 1]
        done += part
    return re.sub(r"::$", ".", done)  # "... as follows::" before a code block


def _constant_comment(name: str, value) -> str:
    """The ``#:`` comment of the constant ``name`` in the module that assigns it ("" if none)."""
    for modname, module in _public_modules().items():
        if name in _assigned(modname) and getattr(module, name, _MISSING) is value:
            analyzer = ModuleAnalyzer.for_module(modname)
            return " ".join(analyzer.find_attr_docs().get(("", name), []))
    return ""


class Autosummary(autosummary.Autosummary):
    """autosummary's table, with each summary read where its object is defined: a short
    reference in it (``:func:`scan_steps` ``) means what it means in that module's docstrings,
    not a name on the page that lists it; and the summary is the docstring's first sentence
    whole, never cut inside a literal."""

    def get_table(self, items):
        nodes_ = super().get_table([(name, sig, "", real) for name, sig, _, real in items])
        rows = list(nodes_[1].findall(nodes.row))
        for (_, _, summary, real_name), row in zip(items, rows, strict=True):
            obj = _python_object(real_name)
            doc = inspect.getdoc(obj) if obj is not _MISSING and (
                inspect.isroutine(obj) or inspect.isclass(obj) or inspect.ismodule(obj)) else None
            if doc:
                summary = _first_sentence(doc.split("\n\n")[0])
            elif obj is not _MISSING:  # a constant: its ``#:`` comment where it is assigned
                summary = _first_sentence(_constant_comment(real_name.rsplit(".", 1)[-1], obj))
            if obj is _MISSING:
                module = real_name.rsplit(".", 1)[0]
            elif inspect.ismodule(obj):
                module = obj.__name__
            else:
                module = getattr(obj, "__module__", None) or real_name.rsplit(".", 1)[0]
            if not (inspect.isroutine(obj) or inspect.isclass(obj) or inspect.ismodule(obj)):
                module = real_name.rsplit(".", 1)[0]  # data: where it is listed from
            cell = nodes.paragraph()
            saved = self.env.ref_context.get("py:module")
            self.env.ref_context["py:module"] = module
            try:
                source, line = self.state_machine.get_source_and_line()
                text = StringList([summary], source=f"{source}:{line}:<autosummary>")
                with switch_source_input(self.state, text):
                    self.state.nested_parse(text, 0, cell)
            finally:
                if saved is None:
                    self.env.ref_context.pop("py:module", None)
                else:
                    self.env.ref_context["py:module"] = saved
            entry = row[1]
            entry.children = []
            entry += cell[0] if len(cell) and isinstance(cell[0], nodes.paragraph) else cell
        return nodes_


class DataDocumenter(autodoc.DataDocumenter):
    """Module constants: documented when the module assigns them, with a ``#:`` comment or not
    (autodoc's own takes only commented ones, so ``:data:`ENTRIES` `` would find nothing);
    the value is shown when short (``ATOL = 1e-06``) and left out when it is a table's repr
    (``ENTRIES``, a colour map), whose docstring says what it holds."""

    @classmethod
    def can_document_member(cls, member, membername, isattr, parent) -> bool:
        if not isinstance(parent, autodoc.ModuleDocumenter):
            return False
        if isattr:
            return True
        if inspect.isroutine(member) or inspect.isclass(member) or inspect.ismodule(member):
            return False
        return membername in _assigned(parent.modname)

    def should_suppress_value_header(self) -> bool:
        return super().should_suppress_value_header() or len(object_description(self.object)) > 80

    def get_doc(self) -> list[list[str]]:
        # its ``#:`` comment, or nothing: not the docstring of its type (dict's, TypeVar's)
        comment = self.get_module_comment(self.objpath[-1])
        return [comment] if comment else []

    def check_module(self) -> bool:
        # assigned here, so documented here, even when its value is an instance of a class
        # from elsewhere (``MODEL = register_kind(JobKind(...))``)
        return self.objpath[-1] in _assigned(self.modname) or super().check_module()


_FLAX_FIELDS = ("parent", "name", "scope")


class ClassDocumenter(autodoc.ClassDocumenter):
    """A flax module's page lists its own fields, not the ``parent``/``name``/``scope`` that
    flax adds to every module."""

    def get_object_members(self, want_all):
        check, members = super().get_object_members(want_all)
        if inspect.isclass(self.object) and issubclass(self.object, flax.linen.Module):
            members = [m for m in members if m.__name__ not in _FLAX_FIELDS]
        return check, members


_GOOGLE_SECTION = re.compile(r"^\s*(Args|Arguments|Returns|Raises|Yields):\s*$")
_NAPOLEON = NapoleonConfig(napoleon_numpy_docstring=False)


def _google_sections(app, what, name, obj, options, lines) -> None:
    """napoleon, for the few docstrings with Google-style sections (``Args:``, ``Returns:``) only:
    over the others it would read a first line ``tit-for-tat: cooperate first ...`` of a
    constant's comment as a type and a description."""
    if any(_GOOGLE_SECTION.match(line) for line in lines):
        lines[:] = GoogleDocstring(lines, _NAPOLEON, app, what, name, obj, options).lines()



# -- the registered environments, from the registry ----------------------------------------------
class RegisteredEnvs(SphinxDirective):
    """``.. socialjax-envs::``: every name :func:`socialjax.make` accepts, grouped by class,
    each class with its docstring (read from the registry at build time, so a new
    environment appears here with no edit)."""

    def run(self) -> list[nodes.Node]:
        from socialjax.core import registry

        by_target: dict[str, list[str]] = defaultdict(list)
        for name in registry.registered_envs():
            by_target[registry.env_target(name)].append(name)
        described = registry.describe_envs()
        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 25 30 45", "",
                 "   * - name", "     - class", "     - description"]
        for name in registry.registered_envs():
            module, cls = registry.env_target(name).split(":")
            lines += [f"   * - ``{name}``", f"     - :class:`~{module}.{cls}`",
                      f"     - {described[name] or '-'}"]
        lines.append("")
        for target in sorted(by_target, key=lambda t: t.split(":")[1]):
            module, cls = target.split(":")
            lines += [cls, "-" * len(cls), ""]
            for name in by_target[target]:
                lines.append(f"- ``sj.make({name!r})``: {described[name] or '-'}")
            lines += ["", f".. autoclass:: {module}.{cls}", "   :no-index:", ""]
        container = nodes.section()
        nested_parse_with_titles(self.state, StringList(lines, source="socialjax-envs"), container)
        return container.children


def _every_module_documented(app, env) -> None:
    """A module with no page (a new one that docs/api/index.rst's lists do not reach) is a
    warning, so the strict build fails on it."""
    documented = env.get_domain("py").modules
    for name in MODULES:
        if name not in documented:
            logger.warning("module %s has no page in the API reference (add it to docs/api/index.rst)", name)


def _redirect_root(app, exception) -> None:
    """The site's front page is ``docs/index.html`` (the sources are the repository's, so that a
    guide's ``../BENCHMARKS.md`` is a page here too); ``index.html`` at the top leads there."""
    if exception is None and app.builder.format == "html":
        path = os.path.join(app.outdir, "index.html")
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write('<!DOCTYPE html>\n<meta charset="utf-8">\n<title>socialjax</title>\n'
                        '<meta http-equiv="refresh" content="0; url=docs/index.html">\n'
                        '<a href="docs/index.html">socialjax documentation</a>\n')


def setup(app):
    app.add_directive("socialjax-envs", RegisteredEnvs)
    app.add_directive("autosummary", Autosummary, override=True)
    app.add_autodocumenter(DataDocumenter, override=True)
    app.add_autodocumenter(ClassDocumenter, override=True)
    app.connect("autodoc-process-docstring", _google_sections)
    app.connect("builder-inited", _write_shadowed_pages)
    app.connect("missing-reference", _resolve_alias)
    app.connect("env-check-consistency", _every_module_documented)
    app.connect("build-finished", _redirect_root)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


