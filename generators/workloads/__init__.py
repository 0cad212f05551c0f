"""The workload catalog.  Importing this package registers every workload module below."""

from fuzzharness.core.kinds import RELAX_WORKLOAD
from fuzzharness.generators.workloads import (  # noqa: F401
    argmax,
    batch_matmul,
    conv2d,
    dense,
    depthwise_conv2d,
    elementwise,
    fused,
    gpu_matmul,
    layer_norm,
    matmul,
    pad,
    pooling,
    reduce,
    reduce_epilogue,
    row_reduce,
    softmax,
)
from fuzzharness.generators.workloads.base import GenOptions, TensorSpec, Workload, workloads

__all__ = ["GenOptions", "TensorSpec", "Workload", "workloads"]

# The Relax graph family, by dotted name: its operators build on the workload modules above,
# so it is imported when first used rather than by this package.
workloads.add_lazy(RELAX_WORKLOAD, "fuzzharness.generators.graphs.workload:WORKLOAD")
