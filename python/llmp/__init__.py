# SPDX-License-Identifier: BSD-3-Clause
"""llmp - the Python side of llmp (the --llm-parallel Slurm plugin and libllmp).

    import llmp
    lay = llmp.layout()            # this task's layout, from LLMP_LAYOUT_FILE
    lay.group("tp"), lay.coords()

    import llmp.torch
    groups = llmp.torch.init()     # torch.distributed and the layout's groups
    groups["tp"]

    import llmp.checkpoint
    llmp.checkpoint.save(model.state_dict(), root, step)   # llmp's HDF5 checkpoints

    job = llmp.Job(state_dict)     # stop on a signal, checkpoint, requeue, resume (llmp.job)

llmp.layout needs nothing but Python; llmp.torch needs PyTorch; llmp.checkpoint
PyTorch and libllmp (ctypes). See README.md beside this package's pyproject.toml.
"""

from .layout import COORD_DIMS, GROUP_KINDS, Layout, LayoutError, layout, load

__version__ = "0.1.0"

__all__ = ["COORD_DIMS", "GROUP_KINDS", "Job", "Layout", "LayoutError", "layout", "load", "__version__"]


def __getattr__(name):
    # llmp.Job needs PyTorch and libllmp: imported on first use, so llmp.layout() needs neither.
    if name == "Job":
        from .job import Job
        return Job
    raise AttributeError("module 'llmp' has no attribute '%s'" % name)
