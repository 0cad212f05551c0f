"""Execution backends, one per target kind.  Importing this package registers them all."""

from fuzzharness.backends import cuda, llvm, opencl  # noqa: F401  (registration)
from fuzzharness.backends.base import Backend, backends

__all__ = ["Backend", "backends"]
