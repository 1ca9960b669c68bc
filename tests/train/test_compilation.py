"""The persistent compilation cache (socialjax.train.compilation): where it goes, how it
is turned off, that a second process reads the first one's programs back, that
``socialjax cache --clear`` removes it and nothing else; and the training programs'
compiler options per backend."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from socialjax import cli
from socialjax.train import compilation

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env_vars(monkeypatch):
    """The variables unset, and restored afterwards whatever the test (or the CLI) set."""
    for name in (compilation.CACHE_VARIABLE, "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, "")  # recorded, so that teardown restores the original
        monkeypatch.delenv(name)
    return monkeypatch


def test_the_variable_chooses_the_folder_or_turns_the_cache_off(env_vars, tmp_path):
    env_vars.setenv("HOME", str(tmp_path))
    default = compilation.default_cache_dir()
    assert default.parts[-2:] == ("socialjax", "jax-cache") and str(default).startswith(str(tmp_path))
    assert compilation.chosen_cache_dir() == default
    env_vars.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compilation.chosen_cache_dir() == tmp_path / "xdg" / "socialjax" / "jax-cache"
    env_vars.setenv(compilation.CACHE_VARIABLE, str(tmp_path / "mine"))
    assert compilation.chosen_cache_dir() == tmp_path / "mine"
    for off in ("0", "off", "False", "no", ""):
        env_vars.setenv(compilation.CACHE_VARIABLE, off)
        assert compilation.chosen_cache_dir() is None


def test_a_folder_jax_already_uses_is_kept(env_vars, tmp_path):
    # the suite's conftest points JAX at a temporary cache: enable_cache leaves it there
    here = compilation.active_cache_dir()
    assert here == os.environ["JAX_COMPILATION_CACHE_DIR"]
    assert compilation.enable_cache(tmp_path / "elsewhere") == here
    assert not (tmp_path / "elsewhere").exists()


def test_clearing_removes_cache_entries_and_refuses_other_folders(tmp_path):
    cache = tmp_path / "cache"
    (cache / "xla_gpu_per_fusion_autotune_cache_dir").mkdir(parents=True)
    (cache / "jit_train-0123abcd-cache").write_bytes(b"x" * 10)
    (cache / "jit_train-0123abcd-atime").write_bytes(b"t")
    assert compilation.cache_contents(cache) == (2, 11)
    assert compilation.clear_cache(cache) == (2, 11) and not cache.exists()
    assert compilation.clear_cache(cache) == (0, 0)
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    with pytest.raises(ValueError, match="not JAX cache entries"):
        compilation.clear_cache(home)
    assert (home / "thesis.tex").exists()


def test_socialjax_cache_shows_and_clears_the_folder(env_vars, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(compilation, "active_cache_dir", lambda: None)  # as outside the suite
    env_vars.setenv(compilation.CACHE_VARIABLE, str(tmp_path / "cache"))
    assert cli.main(["cache"]) == 0
    assert "0 file(s)" in capsys.readouterr().out
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "jit_call-ff-cache").write_bytes(b"x" * 2**20)
    assert cli.main(["cache"]) == 0
    assert "1 file(s), 1.0 MiB" in capsys.readouterr().out
    assert cli.main(["cache", "--clear"]) == 0
    assert "cleared" in capsys.readouterr().out and not (tmp_path / "cache").exists()
    env_vars.setenv(compilation.CACHE_VARIABLE, "0")
    assert cli.main(["cache"]) == 0
    assert "turns it off" in capsys.readouterr().out


def test_no_compile_cache_turns_it_off_for_the_whole_process(env_vars, capsys):
    # (conftest turns the cache back on for this worker's later tests)
    with pytest.raises(SystemExit):  # a bad override stops the command before anything compiles
        cli.main(["train", "ipd-ppo", "--no-compile-cache", "--set", "lr=-1"])
    assert os.environ[compilation.CACHE_VARIABLE] == "0"
    assert not jax.config.values["jax_enable_compilation_cache"]


def test_turned_off_means_off_even_where_jax_was_given_a_folder(tmp_path):
    """``--no-compile-cache`` and ``SOCIALJAX_COMPILATION_CACHE=0`` write nothing into the
    folder ``JAX_COMPILATION_CACHE_DIR`` names (JAX would fill it by itself)."""
    argv = [sys.executable, "-m", "socialjax.cli", "train", "ipd-tft", "--updates", "1", "--seeds", "1", "--quiet",
            "--set", "evaluate=False"]
    base = {k: v for k, v in os.environ.items() if k != compilation.CACHE_VARIABLE}
    for name, extra, variable in (("flag", ["--no-compile-cache"], {}),
                                  ("variable", [], {compilation.CACHE_VARIABLE: "0"})):
        folder = tmp_path / f"jax-{name}"
        env = {**base, **variable, "JAX_COMPILATION_CACHE_DIR": str(folder)}
        done = subprocess.run(argv + extra + ["--out", str(tmp_path / name)], env=env, capture_output=True,
                              text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        assert compilation.cache_contents(folder) == (0, 0), name


def test_a_second_process_reads_the_first_ones_programs_back(tmp_path):
    """Outside the suite's own cache: the default folder under XDG_CACHE_HOME fills on
    the first run, and the second run of the same command loads its training programs
    from it (JAX logs each hit) instead of compiling them."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_COMPILATION_CACHE_DIR", compilation.CACHE_VARIABLE)}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), JAX_LOG_COMPILES="1")
    argv = [sys.executable, "-m", "socialjax.cli", "train", "ipd-tft", "--updates", "1", "--seeds", "2", "--quiet",
            "--set", "evaluate=False"]
    first = subprocess.run(argv + ["--out", str(tmp_path / "a")], env=env, capture_output=True, text=True, cwd=ROOT)
    assert first.returncode == 0, first.stderr[-2000:]
    folder = tmp_path / "xdg" / "socialjax" / "jax-cache"
    files, size = compilation.cache_contents(folder)
    assert files >= 2 and size > 0
    second = subprocess.run(argv + ["--out", str(tmp_path / "b")], env=env, capture_output=True, text=True, cwd=ROOT)
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stderr.count("cache hit for 'jit_call'") >= 2  # the init and the updates program
    assert compilation.cache_contents(folder)[0] == files  # nothing compiled anew


def test_training_programs_compile_at_llvm_level_1_on_the_cpu_unless_the_user_chose(monkeypatch):
    cpu = jax.devices("cpu")[0]
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    before = jax.config.values["jax_disable_most_optimizations"]
    try:
        jax.config.update("jax_disable_most_optimizations", False)
        assert compilation.compiler_options(cpu) == {"xla_backend_optimization_level": 1}
        monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=3")
        assert compilation.compiler_options(cpu) == {}
        monkeypatch.delenv("XLA_FLAGS")
        jax.config.update("jax_disable_most_optimizations", True)
        assert compilation.compiler_options(cpu) == {}
    finally:
        jax.config.update("jax_disable_most_optimizations", before)
    if jax.default_backend() != "cpu":
        assert compilation.compiler_options(jax.devices()[0]) == {}


def test_building_the_command_line_compiles_nothing():
    """Every command's parser is built (and every reproduction entry imported) before
    ``--no-compile-cache`` is read: a program compiled then would start JAX's cache in
    the folder ``JAX_COMPILATION_CACHE_DIR`` names, which the flag could no longer turn
    off (partner-punishment's DQN conditions once built their game at import)."""
    done = subprocess.run([sys.executable, "-c", "import socialjax.cli; socialjax.cli.build_parser()"],
                          env={**os.environ, "JAX_LOG_COMPILES": "1"}, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Compiling" not in done.stderr, done.stderr[-2000:]


def test_the_compile_clock_counts_compiling_and_not_running():
    """A program compiled inside the clock counts; calling it again compiles nothing;
    the clock stops listening when closed."""
    fn = jax.jit(lambda x: jax.numpy.tanh(x) * 3.0 + x)
    x = jax.numpy.arange(6.0)
    with compilation.CompileClock() as first:
        fn(x).block_until_ready()
    with compilation.CompileClock() as second:
        for _ in range(20):
            fn(x).block_until_ready()
    assert first.seconds > 0.0 and second.seconds == 0.0
    jax.jit(lambda x: x - 1.0)(x).block_until_ready()  # after closing: not heard
    assert second.seconds == 0.0
