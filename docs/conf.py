"""Sphinx configuration of the documentation site: the API reference from the docstrings, the
guides in docs/*.md, and the repository's README, BENCHMARKS, REPRODUCTIONS and CHANGELOG.

Build it (strict: any warning, a broken cross-reference or a link to a page or heading that does
not exist among them, fails the build), from the repository root:

    pip install -e ".[docs]" && sphinx-build -W --keep-going -c docs . docs/_build/html

The sources are the repository's (``.``, this configuration in ``docs``): the guides link to
``../BENCHMARKS.md`` and the README to ``docs/training.md``, and those links work here as they
do on GitHub, and are checked. Nothing is mocked: the reference imports the package as a user
would.
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
# the checkout's package, even if another copy is installed; then the extension beside this file
sys.path[:0] = [os.path.dirname(_HERE), os.path.join(_HERE, "_ext")]
os.environ.setdefault("JAX_PLATFORMS", "cpu")  # importing the package needs no accelerator

import sjdocs  # noqa: E402  (docs/_ext)

import socialjax  # noqa: E402

project = "socialjax"
author = "socialjax contributors"
copyright = "socialjax contributors"  # noqa: A001
release = version = socialjax.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "myst_parser",  # the Markdown pages
    "sjdocs",  # docs/_ext/sjdocs.py
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "docs/index"
include_patterns = ["README.md", "BENCHMARKS.md", "REPRODUCTIONS.md", "CHANGELOG.md", "docs/**"]
exclude_patterns = ["docs/_build", "docs/_templates", "docs/_ext", "docs/examples", "docs/figures"]
templates_path = [os.path.join(_HERE, "_templates")]  # absolute: autosummary reads it from the sources

# -- strictness ---------------------------------------------------------------------------------
# With -W every warning fails the build. nitpicky makes a Python cross-reference that finds no
# target a warning: without it Sphinx drops a broken :func:, :class: or :mod: silently.
nitpicky = True
# The exceptions, none of them this package's public API:
# - the types of Python's standard library and of the dependencies, in signatures and docstrings
#   (``jax.Array``, ``collections.abc.Callable``): without intersphinx (CI reaches no other
#   project's documentation to fetch its inventory) they have nothing to link to here. (Sphinx
#   itself lets ``int``, ``None`` and ``typing.Any`` pass.)
# - private helpers (``Bases: _CleanUpBase``), documented through their public subclasses.
_OTHER_PACKAGES = ("jax", "jaxlib", "numpy", "np", "flax", "optax", "gymnasium", "pettingzoo",
                   "collections", "pathlib", "os", "argparse", "contextlib")
nitpick_ignore_regex = [
    (r"py:.*", rf"({'|'.join(_OTHER_PACKAGES)})\..+"),
    (r"py:.*", r"(.*\.)?_[A-Za-z]\w*"),
]

# -- autodoc / autosummary ----------------------------------------------------------------------
autosummary_generate = True
autosummary_generate_overwrite = True
autosummary_context = sjdocs.CONTEXT
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True  # signatures show ``noise=DEFAULT_NOISE``, not a float's repr
autoclass_content = "class"

# -- Markdown pages -----------------------------------------------------------------------------
# GitHub's heading slugs, so a link to ``training.md#metrics`` works here as on GitHub, and one to
# a heading that does not exist fails the build
myst_heading_anchors = 4

# -- HTML ---------------------------------------------------------------------------------------
# Sphinx's own theme (no other package): furo, tried first, rebuilds its whole navigation (some 160
# pages) with BeautifulSoup for every page, and the build took twice the CPU time (112 s against 58 s
# on the 2-core CPU)
html_theme = "alabaster"
html_theme_options = {"page_width": "1240px", "sidebar_width": "260px", "fixed_sidebar": True,
                      "description": "Social dilemmas as compiled, vectorised JAX simulations"}
html_title = f"socialjax {release}"
html_show_sourcelink = False
