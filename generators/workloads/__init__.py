"""The workload catalog.  Importing this package registers every workload module below."""

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
    row_reduce,
    softmax,
)
from fuzzharness.generators.workloads.base import GenOptions, TensorSpec, Workload, workloads

__all__ = ["GenOptions", "TensorSpec", "Workload", "workloads"]

# The Relax graph family, registered last: its operators build on the workload modules above.
import fuzzharness.generators.graphs.workload  # noqa: E402, F401
