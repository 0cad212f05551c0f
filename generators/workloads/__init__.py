"""The workload catalog.  Importing this package registers every workload module below."""

from generators.workloads import gpu_matmul, matmul, row_reduce  # noqa: F401  (registration)
from generators.workloads.base import GenOptions, TensorSpec, Workload, workloads

__all__ = ["GenOptions", "TensorSpec", "Workload", "workloads"]
