"""The documentation site builds strictly (docs/conf.py, docs/index.md): the API reference from
every module's docstrings and the Markdown pages, where any warning fails the build, a Python
cross-reference that finds no entry (``nitpicky``) or a link to a page or heading that does not
exist among them. Slow tier: about a minute on the 2-core CPU. Skipped, with what to install, when
the ``docs`` extra is not installed; never in CI, which installs it (``dev``)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    missing = [m for m in ("sphinx", "myst_parser") if importlib.util.find_spec(m) is None]
    if missing:
        message = f"the docs extra is not installed ({', '.join(missing)} missing): pip install -e \".[docs]\""
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    out = tmp_path / "html"
    # the README's command, into a temporary folder (-d: the pickled sources there too)
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-c", "docs",
                           "-d", str(tmp_path / "doctrees"), ".", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"the strict build failed:\n{done.stderr[-20000:]}"
    for page in ("index.html", "docs/index.html", "docs/api/index.html", "docs/api/environments.html",
                 "docs/api/generated/socialjax.train.run.html", "README.html", "search.html"):
        assert (out / page).is_file(), f"{page} missing from the site"
    # the reference by public name: sj.make's entry is where make is defined, and every registered
    # environment is listed
    api = (out / "docs/api/index.html").read_text()
    assert 'href="generated/socialjax.core.registry.html#socialjax.core.registry.make"' in api
    import socialjax as sj

    envs = (out / "docs/api/environments.html").read_text()
    assert all(f"<code class=\"docutils literal notranslate\"><span class=\"pre\">{name}</span></code>" in envs
               for name in sj.registered_envs())
