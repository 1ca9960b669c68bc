"""The output folder's lock: :func:`claim` holds ``.NAME.lock`` beside the folder while a
job runs (a kernel lock, released however the process ends), so a second job aiming at
the same folder stops at once instead of racing the first; once it holds the lock it
removes what a killed write of that folder left (:func:`leftovers`: ``.NAME.tmp-*``,
``.NAME.old-*``), and nothing else. Every name here is also
:mod:`socialjax.train.store`'s.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import socket
from pathlib import Path

from socialjax.train.store_paths import RESUME_DIR, OutputError, check_text_path, resolved

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
    and ``.NAME.old-*`` beside it (``store.write_folder`` and its swap; ``*`` the 8 hex
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
