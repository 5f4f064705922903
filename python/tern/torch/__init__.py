"""The ``tern`` backend of torch.distributed.

Importing this module registers the backend (``torch.distributed.Backend.register_backend``) for CPU tensors, and
for CUDA tensors where torch sees a GPU (``init_process_group("tern")`` then serves both; ``"cpu:tern,cuda:nccl"``
still picks NCCL for the GPU). On CUDA tensors the collectives are stream-ordered as NCCL's: enqueued on the
caller's current stream before the call returns (tern's NCCL or staged device engine, see docs/PYTORCH.md). It is
not registered on ``import torch`` (no entry point), so a script says ``import tern.torch`` once, before
``init_process_group``. The process group's store bootstraps tern (rank 0 publishes a tern unique id), so every
``init_method`` torch offers (env://, tcp://, file://, torchrun's rendezvous) works, as do ``new_group`` and several
process groups at once. Compression for unmodified DDP models: :mod:`tern.torch.hooks`, or for code that only
chooses its process group's options, :class:`Options` (``pg_options=`` of ``init_process_group`` / ``new_group``).
"""

import torch  # noqa: F401  (loads libtorch before the extension that links it)
import torch.distributed as dist

from .. import _C

__all__ = ["BACKEND_NAME", "Options", "backend_of"]

BACKEND_NAME = "tern"


class Options:
    """Options of a tern process group, passed as ``pg_options`` to ``init_process_group("tern", ...)`` or
    ``new_group(backend="tern", ...)``.

    compress: the codec (TERN_COMPRESS syntax: ``"bf16"``, ``"fp16"``, ``"sign"``, ``"qsgd:4"``, ``"topk:0.01"``)
    that the group's SUM and AVG all_reduce calls of floating-point tensors may compress with, where tern's cost
    model finds that it pays (``TERN_COMPRESS_WHEN=always``: every such call of at least
    ``TERN_COMPRESS_MIN_BYTES``); error feedback is kept per output buffer. ``None`` (the default) leaves
    ``TERN_COMPRESS`` in charge. A codec that does not parse fails the group's creation.
    """

    def __init__(self, compress=None):
        if compress is not None and not isinstance(compress, str):
            raise TypeError(f"tern.torch.Options: compress must be a codec string or None, not {type(compress)}")
        self.compress = compress

    def __repr__(self):
        return f"tern.torch.Options(compress={self.compress!r})"


def _create_backend(dist_options, backend_options):
    # extended_api factory: dist_options carries the group's store, rank, size, timeout and id; backend_options is
    # the pg_options the caller gave.
    if backend_options is not None and not isinstance(backend_options, Options):
        raise TypeError(f"the tern backend takes tern.torch.Options as pg_options, not {type(backend_options)}")
    compress = backend_options.compress if backend_options is not None and backend_options.compress else ""
    return _C.Backend(
        dist_options.store,
        dist_options.group_rank,
        dist_options.group_size,
        dist_options.timeout,
        str(dist_options.group_id),
        compress,
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
