"""Output paths: the names and states of a result folder, and the checks an output path
passes before a job writes it (:mod:`socialjax.train.store` writes and reads the folders,
:mod:`socialjax.train.store_locks` holds them while a job runs; every name here is also
``store``'s).

- :func:`folder_state`: what a folder holds (nothing, a result, an unfinished run, a
  result being replaced, someone else's files);
- :func:`check_out_dir` and :func:`check_out_file` validate an output folder or file
  before any work starts (a file there, an earlier result without ``overwrite``, an
  unfinished run, a folder that is not ours, a parent that cannot be written, a path
  that is not valid UTF-8);
- :func:`resolved`: a symbolic link given as an output path is followed, the result
  written where it points;
- :func:`os_error_line`: an operating-system failure as one line with what to do.
"""

from __future__ import annotations

import errno
import json
import os
import uuid
from collections.abc import Iterable
from pathlib import Path

MANIFEST = "manifest.json"
RESUME_DIR = "resume"  # an unfinished run's checkpoint, inside its output folder


class ResultError(ValueError):
    """A results folder that cannot be used as asked: missing, partial, damaged, foreign."""


class OutputError(ValueError):
    """An output path that cannot be written as asked."""


# ------------------------------------------------------------------------------ errors
_ADVICE = {
    errno.ENOSPC: "the disk is full: free space there (df -h shows how much) or write elsewhere",
    errno.EDQUOT: "your disk quota is used up: free space or write elsewhere",
    errno.EACCES: "permission denied: write to a folder you own",
    errno.EPERM: "not permitted: write to a folder you own",
    errno.EROFS: "the filesystem is read-only: write elsewhere",
    errno.EBUSY: "the path is busy (in use, or a mount point): write elsewhere",
    errno.EFBIG: "the file is larger than this filesystem or limit allows: write elsewhere",
    errno.ENAMETOOLONG: "the name is too long for this filesystem: choose a shorter path",
    errno.EIO: "the device reported an input/output error: check the disk, or write elsewhere",
}


def os_error_line(err: OSError, doing: str) -> str:
    """One line for an operating-system failure while ``doing`` something: the path, the
    system's words and what to do (``cannot write ... : No space left on device: the
    disk is full: ...``)."""
    where = err.filename if err.filename is not None else ""
    what = err.strerror or str(err)
    advice = _ADVICE.get(err.errno)
    return f"cannot {doing}{f' ({where})' if where else ''}: {what}" + (f"; {advice}" if advice else "")


# ------------------------------------------------------------------------------ checks
def check_out_dir(path: str | os.PathLike, *, overwrite: bool = False, resume: bool = False) -> Path:
    """Validate the output folder of a job before anything runs; returns it as a Path.

    Refused: a path that is a file; a folder that holds a result (without ``overwrite``)
    or an unfinished run (without ``overwrite``, unless ``resume``); a non-empty folder
    that is not a socialjax result (never deleted, even with ``overwrite``); a parent
    that cannot be created or written; a path that is not valid UTF-8
    (:func:`check_text_path`). A symbolic link is followed (:func:`resolved`): the
    result goes where it points. Returns the path the job will write."""
    check_text_path(path)
    out = resolved(path)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} is a file; the output must be a folder (choose another path)")
    if out.is_dir():
        state = folder_state(out)
        if state == "result" and not overwrite:
            kind = _kind(out)
            raise OutputError(f"{out} already holds a {kind} result; pass --overwrite to replace it, "
                              "or choose another output folder")
        if state in ("unfinished", "replacing") and not (overwrite or resume):
            kept = " (and the result it is replacing)" if state == "replacing" else ""
            raise OutputError(f"{out} holds an unfinished run{kept}; continue it with `socialjax train --resume "
                              f"{out}` (a reproduction: the same `socialjax reproduce` command again), or pass "
                              "--overwrite to start again")
        if state == "foreign":
            raise OutputError(f"{out} is not empty and is not a socialjax result folder; it is left alone: "
                              "choose another output folder")
    make_writable_folder(out if os.path.ismount(out) else out.parent)
    return out


def check_text_path(path: str | os.PathLike) -> None:
    """Refuse an output path that is not valid UTF-8 (a byte such as ``0xff`` in a name,
    which Python holds as a surrogate escape, ``'res\\udcff'``): a job writes its path
    into text files (``summary.txt``, the manifests, the messages), which could not hold
    it, so it is refused with an :class:`OutputError` before anything runs."""
    raw = os.fsencode(path)
    try:
        raw.decode("utf-8")
        os.fsdecode(raw).encode("utf-8")
    except UnicodeError:
        raise OutputError(f"the path {raw!r} is not valid UTF-8: use a UTF-8 name (a job writes its path into "
                          "text files, which cannot hold it)") from None


def make_writable_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) if missing and check a file can be made in
    it; :class:`OutputError` otherwise."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"cannot create {folder}: {err.strerror or err}") from None
    check_writable(folder)


def check_writable(folder: Path) -> None:
    """Raise :class:`OutputError` unless a file can be created in ``folder``."""
    probe = folder / f".socialjax-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        raise OutputError(f"cannot write in {folder}: {err.strerror or err}") from None


def check_out_file(path: str | os.PathLike, *, overwrite: bool = False, suffixes: Iterable[str] = ()) -> Path:
    """Validate an output file before any work starts: not a folder, its folder
    writable (created when missing), not an existing file unless ``overwrite``, and
    one of ``suffixes`` when given, its path valid UTF-8 (:func:`check_text_path`)."""
    check_text_path(path)
    out = Path(path)
    suffixes = tuple(suffixes)
    if out.is_dir():
        ending = f" ending in {'/'.join(suffixes)}" if suffixes else ""
        raise OutputError(f"{out} is a folder; give a file path{ending}")
    if suffixes and out.suffix.lower() not in suffixes:
        raise OutputError(f"{out}: unsupported extension {out.suffix or '(none)'!r}; use one of {', '.join(suffixes)}")
    if out.exists() and not overwrite:
        raise OutputError(f"{out} exists; pass --overwrite to replace it, or choose another path")
    if out.parent.exists() and not out.parent.is_dir():
        raise OutputError(f"{out.parent} is a file, not a folder")
    holder = result_holding(out)
    if holder is not None:
        raise OutputError(f"{out} is inside the socialjax result {holder}: its files are the job's own and "
                          "listed in its manifest; write this file elsewhere")
    make_writable_folder(out.parent)
    return out


def result_holding(path: Path) -> Path | None:
    """The socialjax output folder (a result, a run being replaced or an unfinished run)
    that ``path`` lies inside, if any: no job writes a file into another job's folder."""
    for folder in Path(os.path.abspath(path)).parents:
        state = folder_state(folder)
        if state == "unfinished" or (state in ("result", "replacing") and _is_ours(folder / MANIFEST)):
            return folder
    return None


def _is_ours(manifest: Path) -> bool:
    """Whether ``manifest`` is a socialjax manifest (another tool's ``manifest.json`` is not)."""
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and isinstance(data.get("files"), dict) and "kind" in data


def resolved(path: str | os.PathLike) -> Path:
    """The output path a job writes: symbolic links followed (the result goes where the
    link points, and the link stays a link), as an absolute path."""
    return Path(os.path.realpath(path))


# ------------------------------------------------------------------------------ states
def folder_state(path: Path) -> str:
    """``missing``, ``empty``, ``result`` (has a manifest), ``replacing`` (a result with
    a ``resume/`` checkpoint beside it: an ``--overwrite`` run that has not finished, the
    old result kept until the new one is complete), ``unfinished`` (has only a
    ``resume/`` checkpoint) or ``foreign`` (anything else)."""
    if not path.is_dir():
        return "missing"
    names = {p.name for p in path.iterdir() if not _ignored(p.name)}
    if not names:
        return "empty"
    if MANIFEST in names:
        return "replacing" if (path / RESUME_DIR).is_dir() else "result"
    if RESUME_DIR in names and (path / RESUME_DIR).is_dir():
        return "unfinished"  # other files beside the checkpoint are the user's (notes ...): kept
    return "foreign"


def is_leftover(name: str) -> bool:
    """A hidden temporary that an interrupted write left (``.NAME.tmp-*``, ``.NAME.old-*``)."""
    return name.startswith(".") and (".tmp-" in name or ".old-" in name)


def _ignored(name: str) -> bool:
    """Names that say nothing about a folder's state: leftovers, the lock of a mount
    point, a filesystem's ``lost+found``."""
    return is_leftover(name) or name in (".socialjax.lock", "lost+found")


def job_names(folder: Path) -> set[str]:
    """The top-level names of ``folder`` that a socialjax job wrote: the manifest, the
    files it lists (a subfolder by its first component) and ``resume/``."""
    names = {MANIFEST, RESUME_DIR}
    try:
        files = json.loads((folder / MANIFEST).read_text()).get("files", {})
        names.update(str(name).split("/")[0] for name in files)
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        pass
    return names


def unrelated_files(folder: Path) -> list[Path]:
    """What else is in ``folder`` (a user's notes, another tool's files): never deleted."""
    if not folder.is_dir():
        return []
    ours = job_names(folder)
    return [p for p in folder.iterdir() if p.name not in ours and not _ignored(p.name)]


def _kind(path: Path) -> str:
    try:
        return json.loads((path / MANIFEST).read_text()).get("kind", "socialjax")
    except (OSError, ValueError, AttributeError):
        return "socialjax"
