"""openat2(2) through ctypes: the kernel resolves a path beneath a directory fd, or refuses (Linux >= 5.6)."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from typing import Any, Final

# include/uapi/linux/openat2.h
RESOLVE_NO_XDEV: Final = 0x01
RESOLVE_NO_MAGICLINKS: Final = 0x02
RESOLVE_NO_SYMLINKS: Final = 0x04
RESOLVE_BENEATH: Final = 0x08
RESOLVE_IN_ROOT: Final = 0x10

# The syscall number is 437 on every architecture that has openat2 (it was added after the unified table).
_SYS_OPENAT2: Final = 437


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


def _libc_syscall() -> Any:
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64", "riscv64", "ppc64le", "s390x"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    fn = libc.syscall
    fn.restype = ctypes.c_long
    return fn


_SYSCALL = _libc_syscall()


def openat2(dir_fd: int, path: bytes, flags: int, mode: int = 0, resolve: int = 0) -> int:
    """A new fd for ``path`` resolved by the kernel under ``resolve`` rules; OSError like os.open."""
    if _SYSCALL is None:
        raise OSError(errno.ENOSYS, "openat2 is not available on this platform")
    how = _OpenHow(flags | os.O_CLOEXEC, mode, resolve)
    fd = int(
        _SYSCALL(
            ctypes.c_long(_SYS_OPENAT2),
            ctypes.c_int(dir_fd),
            ctypes.c_char_p(path),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), os.fsdecode(path))
    return fd


def openat2_works() -> bool:
    """True when the kernel has openat2 and honours RESOLVE_BENEATH (probed once per call site)."""
    top = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.close(openat2(top, b".", os.O_PATH, 0, RESOLVE_BENEATH))
        return True
    except OSError:
        return False
    finally:
        os.close(top)
