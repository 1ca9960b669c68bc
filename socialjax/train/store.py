"""Result folders as transactions.

A result folder is written whole or not at all: its files go into a hidden temporary
sibling (``.NAME.tmp-...``), then a ``manifest.json`` listing every file with its size
and SHA-256, then the folder is renamed into place. Loading checks the manifest, so a
folder that a crash, a full disk or a second writer left half-written is refused with a
message naming the file, never read as a mix of two runs.

- :func:`check_out_dir` validates an output folder before any work starts (a file
  there, an earlier result without ``overwrite``, an unfinished run, a folder that is
  not ours, a parent that cannot be written, a path that is not valid UTF-8);
- :func:`claim` holds ``.NAME.lock`` beside the folder while a job runs (a kernel lock,
  released however the process ends), so a second job aiming at the same folder stops
  at once instead of racing the first; once it holds the lock it removes what a killed
  write of that folder left (:func:`leftovers`: ``.NAME.tmp-*``, ``.NAME.old-*``), and
  nothing else;
- :func:`write_folder` writes a folder atomically (replacing an earlier result only
  with ``overwrite``); :func:`write_subfolder` does the same for a folder inside one
  (a run's ``resume/`` checkpoint);
- :func:`verify` checks a folder against its manifest and returns the manifest.

Paths. A symbolic link given as an output path is followed: the result is written where
it points and the link stays a link (:func:`resolved`). A mount point (a ``docker -v``
folder, a tmpfs) cannot be renamed: its temporary folder goes inside it, and the new
files are moved in file by file, the old manifest removed first and the new one moved
in last, so a crash in between leaves a folder the loaders refuse, never a mix. Files a
job did not write (a user's notes beside a checkpoint or a result) are never deleted:
a result that replaces their folder takes a copy of them (``NAME.kept`` where the new
result uses the name).

The manifest also names the job ``kind`` (``population``, ``donor-evolution``, ``model``), so a
loader refuses a folder written by another job.

Where it lives: the folder's names, states and the checks of an output path in
:mod:`socialjax.train.store_paths`, the lock in :mod:`socialjax.train.store_locks`, the
writing and reading here; every name of the three is used as ``store.NAME``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from socialjax.train.store_locks import claim, clear_leftovers, leftovers, lock_path, release_claims
from socialjax.train.store_paths import (
    MANIFEST,
    RESUME_DIR,
    OutputError,
    ResultError,
    check_out_dir,
    check_out_file,
    check_text_path,
    check_writable,
    folder_state,
    is_leftover,
    job_names,
    make_writable_folder,
    os_error_line,
    resolved,
    result_holding,
    unrelated_files,
)

MANIFEST_VERSION = 1
KINDS = ("population", "donor-evolution", "model", "checkpoint", "reproduction")

__all__ = ["KINDS", "MANIFEST", "MANIFEST_VERSION", "RESUME_DIR", "OutputError", "ResultError", "check_out_dir",
           "check_out_file", "check_text_path", "check_writable", "claim", "clear_leftovers", "folder_state",
           "leftovers", "lock_path", "make_writable_folder", "os_error_line", "release_claims", "replacing",
           "resolved", "result_holding", "seal", "sha256", "verify", "write_folder", "write_subfolder"]


# ------------------------------------------------------------------------------- write
def write_folder(path: str | os.PathLike, write: Callable[[Path], None], *, kind: str | None,
                 overwrite: bool = False, info: dict | None = None) -> Path:
    """Write a folder atomically: ``write(tmp)`` fills a temporary sibling, a manifest
    of its files is added (none with ``kind=None``: a folder that only wraps manifested
    subfolders), and the folder is renamed into place. An existing result (or
    unfinished run) there is replaced only with ``overwrite``; an existing empty folder
    is replaced. Nothing is left behind when ``write`` raises."""
    out = resolved(path)
    in_place = os.path.ismount(out)  # a mount point cannot be renamed: its temporary goes inside it
    home = out if in_place else out.parent
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / f".{'socialjax' if in_place else out.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        write(tmp)
        if kind is not None:
            seal(tmp, kind, info)
        _fsync_dir(tmp)
        (_move_in if in_place else _swap_in)(tmp, out, overwrite)
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(err, OSError):
            raise _naming(err, out) from None
        raise
    return out


def _naming(err: OSError, path: Path) -> OSError:
    """``err`` naming ``path`` when it names no file (a write to an open file does not)."""
    if err.filename is not None:
        return err
    return type(err)(err.errno, err.strerror or str(err), str(path))


def write_subfolder(path: str | os.PathLike, write: Callable[[Path], None], *, kind: str,
                    info: dict | None = None) -> Path:
    """Like :func:`write_folder`, for a folder that is always replaced (a checkpoint):
    the new one is complete before the old one goes. Leftovers of an earlier killed
    write of the same folder are removed (the caller holds the job's lock)."""
    out = resolved(path)
    if out.parent.is_dir():
        for p in out.parent.glob(f".{out.name}.*-*"):
            if is_leftover(p.name):
                shutil.rmtree(p, ignore_errors=True)
    return write_folder(out, write, kind=kind, overwrite=True, info=info)


def _check_replace(out: Path, overwrite: bool) -> str:
    """The state of ``out`` before a new folder replaces it, refusing what must not be
    replaced: a result (or unfinished run) without ``overwrite``. A folder that holds
    only files the job did not write (notes put there while it ran) is written into."""
    state = folder_state(out)
    if state in ("result", "replacing", "unfinished") and not overwrite:
        raise OutputError(f"{out} was written by another job while this one ran; pass --overwrite to replace it "
                          "(the new result is not written)")
    return state


def _swap_in(tmp: Path, out: Path, overwrite: bool) -> None:
    state = _check_replace(out, overwrite)
    if state in ("missing", "empty"):
        if state == "empty":
            shutil.rmtree(out)  # at most leftovers and a lost+found
        os.rename(tmp, out)
        return
    _carry(unrelated_files(out) if out.name != RESUME_DIR else [], tmp)
    if _exchange(tmp, out):  # one atomic step: tmp now holds the old folder
        shutil.rmtree(tmp, ignore_errors=True)
        return
    old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
    os.rename(out, old)  # a crash between these two renames leaves no folder at `out`
    os.rename(tmp, out)
    shutil.rmtree(old, ignore_errors=True)


def _carry(paths: list[Path], folder: Path) -> None:
    """Copy ``paths`` (files or folders) into ``folder``, the new version of their
    folder; one whose name the new folder uses is kept as ``NAME.kept``."""
    for p in paths:
        target = folder / p.name
        if target.exists():
            target = folder / f"{p.name}.kept"
        if p.is_dir() and not p.is_symlink():
            shutil.copytree(p, target, symlinks=True)
        else:
            shutil.copy2(p, target, follow_symlinks=False)


def _move_in(tmp: Path, out: Path, overwrite: bool) -> None:
    """Put the folder written in ``tmp`` (inside ``out``, a mount point) in place of
    ``out``'s own files: the old manifest goes first (from then on the folder is refused
    as incomplete, never read as a mix), then the old job's files, then the new files,
    the new manifest last. Unrelated files stay."""
    _check_replace(out, overwrite)
    ours = job_names(out)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(out / MANIFEST)
    for name in sorted(ours - {MANIFEST}):
        p = out / name
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()
    for p in sorted(tmp.iterdir(), key=lambda p: p.name == MANIFEST):  # the manifest last
        target = out / p.name
        if target.exists() or target.is_symlink():
            os.rename(target, out / f"{p.name}.kept")
        os.rename(p, target)
    tmp.rmdir()
    _fsync_dir(out)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2`` with ``RENAME_EXCHANGE``); False
    where the system cannot."""

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def seal(folder: Path, kind: str, info: dict | None = None) -> None:
    """Write ``folder``'s manifest: every file in it (subfolders included) with its size
    and SHA-256, the job ``kind`` and ``info``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    files = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            _fsync_file(p)
            files[p.relative_to(folder).as_posix()] = {"bytes": p.stat().st_size, "sha256": sha256(p)}
    manifest = {"manifest_version": MANIFEST_VERSION, "kind": kind, "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "files": files, **(info or {})}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    _fsync_file(folder / MANIFEST)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def replacing(path: str | os.PathLike):
    """Write a single file atomically: yields a temporary path beside ``path`` (same
    extension, so writers that choose a format by it still work), which replaces
    ``path`` only when the block completes (a symbolic link at ``path`` is followed)."""
    out = resolved(path)
    tmp = out.parent / f".{out.stem}.tmp-{uuid.uuid4().hex[:8]}{out.suffix}"
    try:
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, out)
    except OSError as err:
        raise _naming(err, out) from None
    finally:
        tmp.unlink(missing_ok=True)


# -------------------------------------------------------------------------------- read
def verify(path: str | os.PathLike, kind: str | None = None) -> dict:
    """Check a folder against its manifest: every listed file present with its size and
    checksum, and (when given) the job ``kind``. Returns the
    manifest; raises :class:`ResultError` naming the folder or file otherwise."""
    folder = Path(path)
    if not folder.is_dir():
        raise ResultError(f"{folder} does not exist" if not folder.exists()
                          else f"{folder} is a file, not a results folder")
    state = folder_state(folder)
    if state == "empty":
        raise ResultError(f"{folder} is empty: not a results folder")
    if state == "unfinished":
        raise ResultError(f"{folder} holds an unfinished run (no results yet); continue it with "
                          f"`socialjax train --resume {folder}` (a reproduction: the same `socialjax reproduce` "
                          "command again)")
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise ResultError(f"{folder} is not a results folder: it has no {MANIFEST} (not written by socialjax, "
                          "or by a version before results had manifests)")
    try:
        manifest = json.loads(manifest_path.read_text())
        files = manifest["files"]
        if not isinstance(files, dict):
            raise TypeError
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise ResultError(f"{manifest_path} is damaged: not a socialjax manifest") from None
    if kind is not None and manifest.get("kind") != kind:
        raise ResultError(f"{folder} holds a {manifest.get('kind', 'unknown')} result, not a {kind} result")
    for name, entry in files.items():
        p = folder / name
        if not p.is_file():
            raise ResultError(f"{p} is missing: {folder} is incomplete")
        size = p.stat().st_size
        if size != entry.get("bytes"):
            raise ResultError(f"{p} is damaged: {size} bytes, the manifest says {entry.get('bytes')} "
                              "(truncated or replaced since it was written)")
        if sha256(p) != entry.get("sha256"):
            raise ResultError(f"{p} is damaged: its checksum does not match {MANIFEST} (changed since it was written)")
    return manifest
