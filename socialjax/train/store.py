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

The manifest also names the job ``kind`` (``population`` or ``donor-evolution``), so a
loader refuses a folder written by another job.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

MANIFEST = "manifest.json"
RESUME_DIR = "resume"  # an unfinished run's checkpoint, inside its output folder
MANIFEST_VERSION = 1
KINDS = ("population", "donor-evolution", "checkpoint", "reproduction")


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


def _leftover(name: str) -> bool:
    """A hidden temporary that an interrupted write left (``.NAME.tmp-*``, ``.NAME.old-*``)."""
    return name.startswith(".") and (".tmp-" in name or ".old-" in name)


def _ignored(name: str) -> bool:
    """Names that say nothing about a folder's state: leftovers, the lock of a mount
    point, a filesystem's ``lost+found``."""
    return _leftover(name) or name in (".socialjax.lock", "lost+found")


def _ours(folder: Path) -> set[str]:
    """The top-level names of ``folder`` that a socialjax job wrote: the manifest, the
    files it lists (a subfolder by its first component) and ``resume/``."""
    names = {MANIFEST, RESUME_DIR}
    try:
        files = json.loads((folder / MANIFEST).read_text()).get("files", {})
        names.update(str(name).split("/")[0] for name in files)
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        pass
    return names


def _unrelated(folder: Path) -> list[Path]:
    """What else is in ``folder`` (a user's notes, another tool's files): never deleted."""
    if not folder.is_dir():
        return []
    ours = _ours(folder)
    return [p for p in folder.iterdir() if p.name not in ours and not _ignored(p.name)]


def _kind(path: Path) -> str:
    try:
        return json.loads((path / MANIFEST).read_text()).get("kind", "socialjax")
    except (OSError, ValueError, AttributeError):
        return "socialjax"


# ------------------------------------------------------------------------------- lock
_HELD: dict[Path, int] = {}  # the locks this process holds: lock file -> its open descriptor


def lock_path(path: str | os.PathLike) -> Path:
    """Where the lock of output folder ``path`` lives: ``.NAME.lock`` beside it, or
    ``.socialjax.lock`` inside it when it is a mount point (its parent may not be ours)."""
    out = Path(path)
    return out / ".socialjax.lock" if os.path.ismount(out) else out.parent / f".{out.name}.lock"


@contextlib.contextmanager
def claim(path: str | os.PathLike):
    """Hold the output folder's lock (:func:`lock_path`) for the duration: a second job
    aiming at the same folder (a second ``--resume`` of it too) raises
    :class:`OutputError` at once. The lock is the kernel's (``flock``): it goes with the
    process however that ends, so a crash cannot leave it stuck; a lock file left behind
    is taken over. Once held, the leftovers of a killed write of this folder are removed
    (:func:`clear_leftovers`): the lock proves no live writer owns them."""
    check_text_path(path)
    out = resolved(path)
    lock = lock_path(out)
    fd = _take(lock, out)
    try:
        clear_leftovers(out)
        yield out
    finally:
        _release(lock, fd)


def leftovers(path: str | os.PathLike) -> list[Path]:
    """The temporaries a killed write of the output folder ``path`` left: ``.NAME.tmp-*``
    and ``.NAME.old-*`` beside it (:func:`write_folder`, :func:`_swap_in`; ``*`` the 8 hex
    digits they are made with), and inside it ``.socialjax.tmp-*`` (a mount point's
    temporary) and ``.resume.tmp-*`` / ``.resume.old-*`` (its checkpoint's). Nothing
    else: another folder's temporaries, a file's (``.NAME.tmp-*.csv``) and the user's files
    are not leftovers of this folder."""
    out = Path(path)
    found = []
    pattern = re.compile(rf"\.{re.escape(out.name)}\.(tmp|old)-[0-9a-f]{{8}}")
    if out.parent.is_dir():
        found += [p for p in out.parent.iterdir() if pattern.fullmatch(p.name)]
    inside = re.compile(rf"\.socialjax\.tmp-[0-9a-f]{{8}}|\.{RESUME_DIR}\.(tmp|old)-[0-9a-f]{{8}}")
    if out.is_dir() and not out.is_symlink():
        found += [p for p in out.iterdir() if inside.fullmatch(p.name)]
    return sorted(found)


def clear_leftovers(path: str | os.PathLike) -> None:
    """Remove :func:`leftovers` of the output folder ``path``; only while holding its
    lock (:func:`claim` does), so that no live writer owns them."""
    for p in leftovers(path):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                p.unlink()


def _take(lock: Path, out: Path) -> int:
    for _ in range(5):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
        except OSError as err:
            raise OutputError(f"cannot create the lock {lock}: {err.strerror or err}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read(lock) or "another process"
            os.close(fd)
            raise OutputError(f"{out} is being written by {holder} (lock {lock}); wait for it, or choose another "
                              "output folder") from None
        try:  # the previous holder may have removed the file between our open and our lock
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            with contextlib.suppress(OSError):  # who holds it, for the message of a refused job (a full disk: none)
                os.ftruncate(fd, 0)
                os.write(fd, f"{socket.gethostname()} {os.getpid()}".encode())
            _HELD[lock] = fd
            return fd
        os.close(fd)
    raise OutputError(f"cannot take the lock {lock}: other processes keep replacing it")


def _release(lock: Path, fd: int) -> None:
    if _HELD.pop(lock, None) is None:
        return
    with contextlib.suppress(OSError):
        lock.unlink()  # while still holding it: a process that opened the old file sees it gone and retries
    os.close(fd)


def release_claims() -> None:
    """Give up every lock this process holds (for a process that ends without
    unwinding, e.g. ``os._exit``: the kernel would release them, this removes the files)."""
    for lock, fd in list(_HELD.items()):
        _release(lock, fd)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


# ------------------------------------------------------------------------------ write
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


def resolved(path: str | os.PathLike) -> Path:
    """The output path a job writes: symbolic links followed (the result goes where the
    link points, and the link stays a link), as an absolute path."""
    return Path(os.path.realpath(path))


def write_subfolder(path: str | os.PathLike, write: Callable[[Path], None], *, kind: str,
                    info: dict | None = None) -> Path:
    """Like :func:`write_folder`, for a folder that is always replaced (a checkpoint):
    the new one is complete before the old one goes. Leftovers of an earlier killed
    write of the same folder are removed (the caller holds the job's lock)."""
    out = resolved(path)
    if out.parent.is_dir():
        for p in out.parent.glob(f".{out.name}.*-*"):
            if _leftover(p.name):
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
    _carry(_unrelated(out) if out.name != RESUME_DIR else [], tmp)
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
    ours = _ours(out)
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


# ------------------------------------------------------------------------------- read
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
