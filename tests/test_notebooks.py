"""Every notebook in notebooks/ runs top to bottom without an error, those that show
the interactive viewer (``sj.viz.Viewer``) show it with its frames, and those that train
with ``run`` or ``reproduce`` show the live display (``socialjax.viz.live``) at its end."""

import re
from pathlib import Path

import nbclient  # dev extra: a missing notebook runner is a failure, not a skip
import nbformat
import pytest

from socialjax.viz.live import MARKER as LIVE_MARKER
from socialjax.viz.viewer import viewer_data

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
#: how many viewers each notebook shows as cell outputs (others: none)
VIEWERS = {"02_gridworlds.ipynb": 1, "04_population_training.ipynb": 1}
#: how many live training displays each notebook shows (a run's, a reproduction's runs')
LIVE = {"04_population_training.ipynb": 1, "05_reproductions.ipynb": 2}


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs",
                                                                          []) if o.get("output_type") == "error"]
    assert not errors, errors
    shown = [data for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
             for data in viewer_data(o.get("data", {}).get("text/html", ""))]
    assert len(shown) == VIEWERS.get(path.name, 0), path.name
    for data in shown:  # the reset state, then a frame per step
        assert len(data["frames"]) == len(data["rewards"]) + 1 > 1 and all(data["frames"])
    live = [html for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if LIVE_MARKER in (html := o.get("data", {}).get("text/html", ""))]
    assert len(live) == LIVE.get(path.name, 0), path.name
    for html in live:  # the display as it was last redrawn: the whole run, with its curves
        total = re.search(r"\[(\d+)/(\d+)\]", html)
        assert total and total[1] == total[2] and "data:image/png;base64," in html, html[:300]


def test_the_notebooks_showing_viewers_exist():
    assert set(VIEWERS) | set(LIVE) <= {p.name for p in NOTEBOOKS}
