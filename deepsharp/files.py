"""Files in and out, the safe way: regular files only, read without blocking; written whole or not
at all, with the umask's permissions, and no temporary left behind.

- `read_regular(path)`: the bytes of a regular file. A FIFO, a device, a socket or a directory is
  refused at once (opened without blocking, checked with fstat before a byte is read), so a path
  naming a pipe cannot hang the caller.
- `write_atomic(path, data)`: the bytes go to an unnamed file in the target's folder (Linux
  O_TMPFILE: a save killed mid-write leaves nothing), are flushed to disk, and replace the target
  in one rename, so a failed save leaves the old file whole. Where unnamed files are not
  available, a named temporary (`.{name}.{pid}-{random}.tmp`) is used and removed on failure;
  one left by a killed process is removed by the next save to the same target. The file gets the
  permissions a new file gets under the process's umask. A write error is a `SaveError` naming
  the target.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from typing import Any, Callable

from deepsharp.errors import SaveError

_KINDS = {stat.S_ISFIFO: "a FIFO (named pipe)", stat.S_ISCHR: "a character device",
          stat.S_ISBLK: "a block device", stat.S_ISSOCK: "a socket", stat.S_ISDIR: "a directory"}


def read_regular(path: Any, refuse: Callable[[str], Exception]) -> bytes:
    """The bytes of the regular file at `path`; `refuse(reason)` makes the error for anything else
    (a missing file stays FileNotFoundError)."""
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except (OSError, TypeError, ValueError) as error:
        raise refuse(f"cannot be opened ({getattr(error, 'strerror', None) or error})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS.items() if test(info.st_mode)), "not a regular file")
            raise refuse(f"is {kind}, not a regular file")
        chunks, left = [], info.st_size
        while True:  # up to the size fstat gave, and whatever a growing file added since
            chunk = os.read(fd, max(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left = max(left - len(chunk), 0)
        return b"".join(chunks)
    except OSError as error:
        raise refuse(f"cannot be read ({error.strerror or error})") from None
    finally:
        os.close(fd)


def write_atomic(path: Any, data: bytes) -> None:
    """Write `data` to `path` whole or not at all (see the module docstring)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_temporaries(target)
        if not _write_unnamed(target, data):
            _write_named(target, data)
    except SaveError:
        raise
    except OSError as error:
        raise SaveError(f"cannot save {target}: {error.strerror or error}") from error


_UNNAMED: dict[int, bool] = {}  # device -> whether an unnamed file can be linked in there


def _write_unnamed(target: Path, data: bytes) -> bool:
    """Write through an O_TMPFILE file, linked in only once it is whole (a process killed while
    writing leaves nothing); False where the system cannot."""
    if not _unnamed_works(target.parent):
        return False
    fd = _open_unnamed(target.parent)
    try:
        _write_all(fd, data)
        temporary = _temporary_name(target)
        os.link(f"/proc/self/fd/{fd}", temporary, follow_symlinks=True)
    finally:
        os.close(fd)
    _replace(temporary, target)
    return True


def _open_unnamed(folder: Path) -> int:
    return os.open(folder, os.O_TMPFILE | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o666)


def _unnamed_works(folder: Path) -> bool:
    """Probed once per device with an empty file: some systems make unnamed files but cannot
    link them in (EXDEV through /proc), and the data must not be written twice."""
    if not hasattr(os, "O_TMPFILE") or not os.path.isdir("/proc/self/fd"):
        return False
    device = os.stat(folder).st_dev
    if device not in _UNNAMED:
        probe = folder / f".deepsharp-probe.{os.getpid()}-{secrets.token_hex(4)}.tmp"
        try:
            fd = _open_unnamed(folder)
            try:
                os.link(f"/proc/self/fd/{fd}", probe, follow_symlinks=True)
                _UNNAMED[device] = True
            finally:
                os.close(fd)
                _unlink_quietly(probe)
        except OSError:
            _UNNAMED[device] = False
    return _UNNAMED[device]


def _write_named(target: Path, data: bytes) -> None:
    temporary = _temporary_name(target)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
    except BaseException:
        _unlink_quietly(temporary)
        raise
    _replace(temporary, target)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _replace(temporary: Path, target: Path) -> None:
    try:
        os.replace(temporary, target)
    except BaseException:
        _unlink_quietly(temporary)
        raise


def _temporary_name(target: Path) -> Path:
    return target.parent / f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"


def _remove_stale_temporaries(target: Path) -> None:
    """Remove temporaries of `target` left by a process that no longer runs (a killed save)."""
    prefix = f".{target.name}."
    try:
        names = [n for n in os.listdir(target.parent) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):-len(".tmp")].partition("-")[0]
        if pid.isdigit() and not _running(int(pid)):
            _unlink_quietly(target.parent / name)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
