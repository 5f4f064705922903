"""tern: topology-aware collective communication with built-in gradient compression.

``import tern.torch`` registers the ``tern`` backend of torch.distributed::

    import torch.distributed as dist
    import tern.torch
    dist.init_process_group("tern")          # or "cpu:tern,cuda:nccl"

The C library itself (``tern/tern.h``, ``libtern``) ships inside this package too: see ``include_dir()`` and
``library_dir()`` for building C or C++ code against the copy pip installed.
"""

from pathlib import Path

__version__ = "0.1.0"

_HERE = Path(__file__).resolve().parent


def include_dir() -> str:
    """The folder holding tern/tern.h (and tern_ext.h, train.h) of this installation."""
    return str(_HERE / "include")


def library_dir() -> str:
    """The folder holding libtern.so of this installation."""
    return str(_HERE / "lib")
