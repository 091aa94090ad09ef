# SPDX-License-Identifier: BSD-3-Clause
"""libllmp as Python sees it: the one module that loads the library and mirrors its headers.

Everything the package takes from include/llmp/*.h is here and nowhere else: the status
names, the dtype and op numbers, the constants, the three structs passed by pointer, and
the signature of every function called through ctypes. tests/surface/check_python.py
compares each of them with the C headers (sizes, offsets, enum values, argument counts,
as a C compiler sees them) in `make check`, so a header that changes without this module
fails there, not in a user's job.

Only the standard library is imported, so that check runs without PyTorch.
"""

import ctypes
import ctypes.util
import os
import threading

#: The environment variable naming the libllmp.so to load, tried first.
LIBRARY_ENV = "LLMP_LIBRARY"

#: llmp_status (llmp_status.h), by value.
STATUS_NAMES = ("LLMP_OK", "LLMP_ERR_SPEC", "LLMP_ERR_LAYOUT", "LLMP_ERR_RANGE", "LLMP_ERR_ARG",
                "LLMP_ERR_NOMEM", "LLMP_ERR_IO", "LLMP_ERR_WIREUP", "LLMP_ERR_MISMATCH",
                "LLMP_ERR_TRANSPORT", "LLMP_ERR_TIMEOUT", "LLMP_ERR_PEER", "LLMP_ERR_UNSUPPORTED",
                "LLMP_ERR_STATE", "LLMP_ERR_DEVICE")

#: llmp_dtype (llmp_dtype.h): the values are its ABI.
DTYPE = {"LLMP_FLOAT32": 0, "LLMP_FLOAT64": 1, "LLMP_BFLOAT16": 2, "LLMP_FLOAT16": 3,
         "LLMP_INT32": 4, "LLMP_INT64": 5, "LLMP_UINT8": 6}

#: llmp_op (llmp_dtype.h).
OP = {"LLMP_SUM": 0, "LLMP_PROD": 1, "LLMP_MIN": 2, "LLMP_MAX": 3, "LLMP_AVG": 4}

#: Constants of the headers the package relies on, by their C names.
CONSTANTS = {
    "LLMP_CKPT_MAX_DIMS": 8,
    "LLMP_CKPT_MAX_NAME": 127,
    "LLMP_CKPT_NEWEST": 2**64 - 1,
    "LLMP_CKPT_FILES_RANK": 0,
    "LLMP_CKPT_FILES_NODE": 1,
    "LLMP_JOB_CONTINUE": 0,
    "LLMP_JOB_STOP": 1,
    "LLMP_EXIT_DONE": 0,
    "LLMP_EXIT_REQUEUE": 75,
    "LLMP_EXIT_NO_REQUEUE": 76,
}

#: The llmp.h this module mirrors (LLMP_VERSION: major * 10000 + minor * 100 + patch).
VERSION = 100


class CheckpointError(RuntimeError):
    """A libllmp call failed (status: its llmp_status name), or libllmp was not found."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def status_name(status):
    """The llmp_status name of a value, or "status N" for one this module does not know."""
    return STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else "status %d" % status


# ------------------------------------------------------------------ structs
# Field for field as in the headers; `size` is set to ctypes.sizeof by the
# constructor, as the C _default() functions do (doc/abi.md).

class _Sized(ctypes.Structure):
    def __init__(self, **fields):
        super().__init__(size=ctypes.sizeof(self), **fields)


class InitOpts(_Sized):
    """llmp_init_opts (llmp.h)."""
    _fields_ = [("size", ctypes.c_size_t), ("spec", ctypes.c_char_p), ("timeout_s", ctypes.c_double),
                ("ring_threshold", ctypes.c_size_t), ("shm_threshold", ctypes.c_size_t)]


class CkptOpts(_Sized):
    """llmp_ckpt_opts (llmp_ckpt.h)."""
    _fields_ = [("size", ctypes.c_size_t), ("root", ctypes.c_char_p), ("keep", ctypes.c_uint),
                ("alignment", ctypes.c_size_t), ("staging_max", ctypes.c_size_t),
                ("files", ctypes.c_uint),  # LLMP_CKPT_FILES_RANK or _NODE
                # Lustre layout of each step directory (0: left alone; doc/checkpoint.md)
                ("stripe_count", ctypes.c_int), ("stripe_size", ctypes.c_size_t),
                ("stripe_pool", ctypes.c_char_p)]


class CkptStats(_Sized):
    """llmp_ckpt_stats (llmp_ckpt.h): the library writes at most `size` bytes of it."""
    _fields_ = [("size", ctypes.c_size_t), ("step", ctypes.c_uint64), ("staged_bytes", ctypes.c_size_t),
                ("staging_max", ctypes.c_size_t), ("stall_seconds", ctypes.c_double),
                ("total_seconds", ctypes.c_double), ("alignment", ctypes.c_size_t),
                # Slices saved from device memory (runtime/ckpt/ckpt_device.c).
                ("device_bytes", ctypes.c_size_t), ("device_copy_seconds", ctypes.c_double),
                ("device_staging_bytes", ctypes.c_size_t)]


#: Python mirror -> C struct name, for the surface check.
STRUCTS = {"llmp_init_opts": InitOpts, "llmp_ckpt_opts": CkptOpts, "llmp_ckpt_stats": CkptStats}

# ---------------------------------------------------------------- functions

_p, _i, _u32, _u64, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
_pp = ctypes.POINTER(ctypes.c_void_p)
_u64p = ctypes.POINTER(ctypes.c_uint64)
_szp = ctypes.POINTER(ctypes.c_size_t)

#: Every function the package calls: name -> (restype, argtypes), as llmp*.h declare them.
SIGNATURES = {
    # llmp.h, llmp_status.h
    "llmp_version": (ctypes.c_uint, []),
    "llmp_init": (_i, [ctypes.POINTER(InitOpts), _pp]),
    "llmp_finalize": (_i, [_p]),
    "llmp_errmsg": (ctypes.c_char_p, [_p]),
    "llmp_strerror": (ctypes.c_char_p, [_i]),
    "llmp_rank": (_u32, [_p]),
    "llmp_world_size": (_u32, [_p]),
    "llmp_comm_world": (_i, [_p, _pp]),
    "llmp_allreduce": (_i, [_p, _p, _p, _sz, _i, _i]),
    # llmp_ckpt.h
    "llmp_ckpt_open": (_i, [_p, ctypes.POINTER(CkptOpts), _pp]),
    "llmp_ckpt_close": (None, [_p]),
    "llmp_ckpt_register": (_i, [_p, ctypes.c_char_p, _i, ctypes.c_uint, _u64p, _u64p, _u64p, _p]),
    "llmp_ckpt_save": (_i, [_p, _u64, _p, _sz]),
    "llmp_ckpt_save_async": (_i, [_p, _u64, _p, _sz]),
    "llmp_ckpt_prepare_async": (_i, [_p]),
    "llmp_ckpt_wait": (_i, [_p]),
    "llmp_ckpt_get_stats": (_i, [_p, ctypes.POINTER(CkptStats)]),
    "llmp_ckpt_load": (_i, [_p, _u64, _u64p, _p, _sz, _szp]),
    # llmp_job.h
    "llmp_job_open": (_i, [_p, _p, _pp]),
    "llmp_job_ckpt": (_p, [_p]),
    "llmp_job_resume": (_i, [_p, _u64p, _p, _sz, _szp]),
    "llmp_job_step_end": (_i, [_p, _u64, _p, _sz, ctypes.POINTER(_i)]),
    "llmp_job_note_memory": (_i, [_p, _u64]),
    "llmp_job_finish": (_i, [_p, _i]),
    "llmp_job_give_up": (_i, [_p, ctypes.c_char_p]),
    "llmp_job_errmsg": (ctypes.c_char_p, [_p]),
}

# ------------------------------------------------------------------ loading


def library_candidates():
    """Where libllmp is looked for, in order: $LLMP_LIBRARY, beside the package, the loader's path."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        return [env]  # asked for by name: nothing else is tried
    here = os.path.dirname(os.path.abspath(__file__))
    # Beside the package, or in PREFIX/lib when `make install` put the package in
    # PREFIX/lib/python3.N/{site,dist}-packages/llmp.
    out = [os.path.join(d, "libllmp.so.0") for d in
           (here, os.path.normpath(os.path.join(here, "..", "..", "..")))]
    out = [p for p in out if os.path.exists(p)]
    out.append("libllmp.so.0")  # the dynamic loader's search path
    found = ctypes.util.find_library("llmp")
    if found and found not in out:
        out.append(found)
    return out


_lib_lock = threading.Lock()
_lib = None


def declare(lib):
    """Give every function of SIGNATURES its restype and argtypes on lib."""
    for name, (res, args) in SIGNATURES.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args


def library():
    """The loaded libllmp (ctypes.CDLL) with SIGNATURES declared, found as library_candidates() says."""
    global _lib
    with _lib_lock:
        if _lib is None:
            tried = []
            for path in library_candidates():
                try:
                    lib = ctypes.CDLL(path)
                    declare(lib)  # a libllmp with every function the package calls
                except (OSError, AttributeError) as e:
                    tried.append("%s (%s)" % (path, e))
                    continue
                _lib = lib
                break
            else:
                raise CheckpointError("llmp.checkpoint: libllmp not found; tried %s. Set %s to the "
                                      "path of libllmp.so.0 (BUILD/runtime/.libs/libllmp.so.0 in a "
                                      "build tree)" % ("; ".join(tried), LIBRARY_ENV))
        return _lib
