"""The README's first Python example runs as printed, and its sweep is the checked way:
the same lines with an out-of-range or NaN value raise before anything is traced."""

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def first_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    return next(b for b in blocks if "noisy = " in b)


def test_the_quick_start_example_runs():
    scope: dict = {}
    exec(compile(first_example(), "README.md", "exec"), scope)
    assert scope["obs"].shape[0] == 10_000
    np.testing.assert_allclose(np.asarray(scope["states5"].history).shape[0], 5)
    np.testing.assert_allclose(scope["noisy"].noise, np.linspace(0, 0.2, 5), rtol=1e-6)


@pytest.mark.parametrize("values, problem", [("[0.1, 5.0, 0.2]", "above its maximum"), ("[0.1, float('nan')]", "NaN")])
def test_the_quick_start_sweep_refuses_bad_values(values, problem):
    code = first_example().replace("jnp.linspace(0, 0.2, 5)", f"jnp.array({values})")
    code = code.replace("keys[:5]", "keys[:len(noisy.noise)]")
    with pytest.raises(ValueError, match=rf"MatrixParams\.noise.*{problem}"):
        exec(compile(code, "README.md", "exec"), {})
