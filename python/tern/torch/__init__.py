"""The ``tern`` backend of torch.distributed.

Importing this module registers the backend (``torch.distributed.Backend.register_backend``) for CPU tensors, and
for CUDA tensors where torch sees a GPU (``init_process_group("tern")`` then serves both; ``"cpu:tern,cuda:nccl"``
still picks NCCL for the GPU). On CUDA tensors the collectives are stream-ordered as NCCL's: enqueued on the
caller's current stream before the call returns (tern's NCCL or staged device engine, see docs/PYTORCH.md). It is
not registered on ``import torch`` (no entry point), so a script says ``import tern.torch`` once, before
``init_process_group``. The process group's store bootstraps tern (rank 0 publishes a tern unique id), so every
``init_method`` torch offers (env://, tcp://, file://, torchrun's rendezvous) works, as do ``new_group`` and several
process groups at once. Compression for unmodified DDP models: :mod:`tern.torch.hooks`.
"""

import torch  # noqa: F401  (loads libtorch before the extension that links it)
import torch.distributed as dist

from .. import _C

__all__ = ["BACKEND_NAME", "backend_of"]

BACKEND_NAME = "tern"


def _create_backend(dist_options, _backend_options):
    # extended_api factory: dist_options carries the group's store, rank, size, timeout and id.
    return _C.Backend(
        dist_options.store,
        dist_options.group_rank,
        dist_options.group_size,
        dist_options.timeout,
        str(dist_options.group_id),
    )


def backend_of(group=None) -> "_C.Backend":
    """The tern backend object of a process group (the default group when None), e.g. for its compressed allreduce."""
    group = group if group is not None else dist.distributed_c10d._get_default_group()
    backend = group._get_backend(torch.device("cpu"))
    if not isinstance(backend, _C.Backend):
        raise RuntimeError(f"the process group's CPU backend is {type(backend).__name__}, not tern")
    return backend


def _devices():
    # CUDA only where a GPU is visible: on a CPU-only machine a "cuda" entry would only make torch look for one.
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


if not hasattr(dist.Backend, BACKEND_NAME.upper()):
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, extended_api=True, devices=_devices())
