"""The launch plan: what TVM's host function would do on a device, as plain data.

The PyPI TVM wheel has no CUDA or OpenCL runtime, so the host code TVM generates for a GPU
target cannot run here.  Device kernels can: through pyopencl (OpenCL, on a CPU runtime) or
the CUDA driver (on a GPU host).  This module reads, from TVM's *lowered host function*
(after the TIR pipeline and ``SplitHostDevice``/``MakePackedAPI``, before the host
finalisation passes), everything a launcher needs to do what that host function does:

* the kernels it launches, in order, each with its argument list — a parameter buffer
  (by position), a temporary buffer or texture the host allocates, or a scalar value — and
  its grid/block sizes and dynamic shared memory;
* the temporaries the host allocates (``alloc_buffer`` in global memory, or
  ``nd_mem_alloc_with_scope`` for textures, with the texture's width, height, depth and
  channel size as TVM computed them);
* per kernel, the argument *types* from the device PrimFunc's parameters (pointer with
  storage scope, or scalar dtype), which decide how an argument is marshalled (a buffer, an
  image, an ``int32``...).

The host function is interpreted, not pattern-matched: straight-line statements, ``for``
loops (kernels launched once per iteration, with the loop variable as a scalar argument),
``if``, bindings and buffer declarations are evaluated with the shapes fixed by the case.
Anything else in the compute scope (a packed call the launcher does not know, a ``while``)
raises :class:`UnsupportedHostCode` — a limitation of this harness, never blamed on TVM —
except a store: host code that computes on the kernels' buffers (blocks left outside every
thread binding, which lowering should refuse) raises :class:`HostComputesOnDevice`, blamed
on TVM (a GPU's host cannot address device memory).

The plan itself, plain data, is :mod:`fuzzharness.backends.launch_plan`.
"""

from __future__ import annotations

from typing import Any

from fuzzharness.backends.launch_plan import (
    KernelArgType,
    Launch,
    LaunchPlan,
    ParamSpec,
    TempSpec,
    Texture,
)

MAX_LAUNCHES = 4096  # a host loop launching more kernels than this is refused, not unrolled
THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")
DYN_SHMEM_TAG = "tirx.use_dyn_shared_memory"


class UnsupportedHostCode(Exception):
    """The host function does something the launcher cannot reproduce (a harness limit)."""


class HostComputesOnDevice(UnsupportedHostCode):
    """TVM's host function stores into a buffer of the compute scope — device memory on a
    GPU target: blocks bound to no thread were left to the host instead of being refused
    (seen with dlight's Adreno conv2d rule and a gelu epilogue).  A TVM bug, not ours."""

    blame_tvm = True


# -- reading TVM IR ------------------------------------------------------------------------


def kernel_arg_types(device_mods: dict) -> dict[str, list[KernelArgType]]:
    """Per kernel: the types of its parameters, from the device PrimFuncs.

    A pointer parameter (``PointerType``) is a buffer — an image when its storage scope is a
    texture scope; anything else is a scalar of the parameter's dtype.
    """
    from tvm import ir

    out: dict[str, list[KernelArgType]] = {}
    for mod in device_mods.values():
        for gv, func in mod.functions.items():
            types = []
            for p in func.params:
                ty = p.ty
                if isinstance(ty, ir.PointerType):
                    elem = ty.element_type
                    dtype = str(getattr(elem, "dtype", elem))
                    types.append(KernelArgType("buffer", dtype, str(ty.storage_scope or "global")))
                else:
                    types.append(KernelArgType("scalar", str(ty.dtype)))
            out[str(gv.name_hint)] = types
    return out


def param_specs(func) -> list[ParamSpec]:
    """The PrimFunc's parameters as the caller passes them (before lowering)."""
    from fuzzharness.core.tvm_compat import param_buffers

    return [ParamSpec(str(p.name), str(p.dtype), [int(s) for s in p.shape], str(p.scope()))
            for p in param_buffers(func)]


class _HostInterpreter:
    """Evaluates the compute scope of a lowered host function into a list of launches."""

    def __init__(self, kernels: dict[str, list[KernelArgType]], n_params: int):
        import tvm

        self.tvm = tvm
        self.kernels = kernels
        self.n_params = n_params
        self.env: dict[Any, int] = {}  # Var → int (host loop variables, integer bindings)
        self.handles: dict[Any, int] = {}  # Var → parameter index (``X_handle = args[i]``)
        self.buffers: dict[Any, dict[str, Any]] = {}  # buffer Var → {"param": i} | {"temp": n}
        self.temps: list[TempSpec] = []
        self.launches: list[Launch] = []

    # -- expressions ---------------------------------------------------------------------
    def op_name(self, expr) -> str:
        op = getattr(expr, "op", None)
        return str(getattr(op, "name", "")) if op is not None else ""

    def int_value(self, expr) -> int:
        """Evaluate an integer host expression (constants, loop variables, arithmetic)."""
        return int(_evaluate(expr, self.env))

    def param_of(self, expr) -> int | None:
        """The parameter index a handle/data expression derives from (``args[i]``), if any."""
        import tvm_ffi
        from tvm import ir

        found: list[int] = []

        def visit_call(c) -> None:
            if self.op_name(c) == "tirx.tvm_struct_get" and len(c.args) >= 2:
                base = c.args[0]
                if base in self.handles:
                    found.append(self.handles[base])
                elif str(getattr(base, "name", "")) == "args" and str(c.args[2]) in ("15",):
                    found.append(int(c.args[1]))

        def visit_var(v) -> None:
            if v in self.handles:
                found.append(self.handles[v])

        tvm_ffi.structural_walk(expr, [(ir.Call, visit_call), (ir.Var, visit_var)])
        return found[0] if found else None

    def buffer_ref(self, expr) -> dict[str, Any]:
        """A kernel's buffer argument: ``buffer_data(B)`` or a data var → param/temp."""
        if self.op_name(expr) == "tirx.buffer_data":
            buf = expr.args[0]
            if buf in self.buffers:
                return dict(self.buffers[buf])
        if expr in self.buffers:
            return dict(self.buffers[expr])
        p = self.param_of(expr)
        if p is not None:
            return {"param": p}
        raise UnsupportedHostCode(f"kernel argument {expr} is not a known buffer")

    # -- statements ----------------------------------------------------------------------
    def run(self, stmt) -> None:
        from tvm import tirx

        if isinstance(stmt, tirx.SeqStmt):
            for s in stmt.seq:
                self.run(s)
        elif isinstance(stmt, tirx.AttrStmt):
            self.run(stmt.body)
        elif isinstance(stmt, tirx.Bind | tirx.LetStmt):
            self.bind(stmt.var, stmt.value)
        elif isinstance(stmt, tirx.DeclBuffer):
            self.declare(stmt.buffer, stmt.data)
        elif isinstance(stmt, tirx.AllocBuffer):
            self.allocate(stmt.buffer)
        elif isinstance(stmt, tirx.For):
            lo, n = self.int_value(stmt.min), self.int_value(stmt.extent)
            step = self.int_value(stmt.step) if getattr(stmt, "step", None) is not None else 1
            for v in range(lo, lo + n, step):
                self.env[stmt.loop_var] = v
                self.run(stmt.body)
            self.env.pop(stmt.loop_var, None)
        elif isinstance(stmt, tirx.IfThenElse):
            if self.int_value(stmt.condition):
                self.run(stmt.then_case)
            elif stmt.else_case is not None:
                self.run(stmt.else_case)
        elif isinstance(stmt, tirx.Evaluate):
            self.evaluate(stmt.value)
        elif isinstance(stmt, tirx.AssertStmt):
            pass  # argument checks: the launcher passes exactly the declared shapes
        elif type(stmt).__name__ in ("BufferStore", "TensorStore"):
            dest = stmt.source if hasattr(stmt, "source") else stmt.buffer  # .source in 0.27
            raise HostComputesOnDevice(
                "TVM's host function computes on device memory: a store to "
                f"{getattr(dest, 'name', dest)} outside every kernel (blocks bound to no "
                "thread were not refused)")
        else:
            raise UnsupportedHostCode(f"host statement {type(stmt).__name__} in the compute scope")

    def bind(self, var, value) -> None:
        dtype = _var_dtype(var)
        p = self.param_of(value)
        if p is not None and dtype == "handle":
            self.handles[var] = p
            return
        if "int" in dtype or dtype == "bool":
            try:
                v = self.int_value(value)
            except UnsupportedHostCode:
                return  # a binding the kernels never see (e.g. a shape pointer)
            self.env[var] = v

    def declare(self, buffer, data) -> None:
        if data is None:
            return
        if self.op_name(data) == "tirx.nd_mem_alloc_with_scope":
            scope = str(data.args[0].value)
            shape = data.args[2]
            w, h, d = (self.int_value(x) for x in shape.args)
            bits = self.int_value(data.args[3])
            name = str(buffer.name)
            elements = w * h * d * 4
            self.temps.append(TempSpec(name, str(buffer.dtype), elements, scope, Texture(w, h, d, bits)))
            self.buffers[buffer] = {"temp": name}
            return
        if self.op_name(data) == "tirx.buffer_data" and data.args[0] in self.buffers:
            self.buffers[buffer] = dict(self.buffers[data.args[0]])
            return
        p = self.param_of(data)
        if p is not None:
            self.buffers[buffer] = {"param": p}

    def allocate(self, buffer) -> None:
        scope = str(buffer.scope())
        if scope not in ("global", ""):
            raise UnsupportedHostCode(f"host allocation of {buffer.name} in scope {scope}")
        n = 1
        for s in buffer.shape:
            n *= self.int_value(s)
        name = str(buffer.name)
        self.temps.append(TempSpec(name, str(buffer.dtype), n, "global"))
        self.buffers[buffer] = {"temp": name}

    def evaluate(self, call) -> None:
        name = self.op_name(call)
        if name == "tirx.call_ffi_kernel":
            self.launch(call)
        elif name == "tirx.tvm_call_packed" and str(call.args[0].value) == "__tvm_set_device":
            pass
        elif isinstance(call, self.tvm.tirx.IntImm):
            pass  # Evaluate(0): a no-op
        else:
            raise UnsupportedHostCode(f"host call {name or call} in the compute scope")

    def launch(self, call) -> None:
        kernel = str(call.args[0].value)
        if kernel not in self.kernels:
            raise UnsupportedHostCode(f"the host launches {kernel}, which no device module defines")
        types = self.kernels[kernel]
        rest = list(call.args[1:])
        dev_args, launch_vals = rest[: len(types)], rest[len(types):]
        tags = [str(t) for t in call.attrs.launch_params]
        if len(launch_vals) != len(tags):
            raise UnsupportedHostCode(
                f"{kernel}: {len(launch_vals)} launch values for launch params {tags}")
        args: list[dict[str, Any]] = []
        for ty, a in zip(types, dev_args, strict=True):
            if ty.kind == "buffer":
                args.append(self.buffer_ref(a))
            else:
                value = self.int_value(a) if "int" in ty.dtype or ty.dtype == "bool" else float(a.value)
                args.append({"scalar": value, "dtype": ty.dtype})
        grid, block, dyn = [1, 1, 1], [1, 1, 1], 0
        for tag, v in zip(tags, launch_vals, strict=True):
            value = self.int_value(v)
            if tag == DYN_SHMEM_TAG:
                dyn = value
            elif tag in THREAD_TAGS:
                (grid if tag.startswith("blockIdx") else block)["xyz".index(tag[-1])] = value
            else:
                raise UnsupportedHostCode(f"{kernel}: unknown launch parameter {tag}")
        if len(self.launches) >= MAX_LAUNCHES:
            raise UnsupportedHostCode(f"the host function launches more than {MAX_LAUNCHES} kernels")
        self.launches.append(Launch(kernel, args, grid, block, dyn))


def _var_dtype(var) -> str:
    """A scalar Var's dtype, or "handle" for pointers (Vars carry a PrimType/PointerType)."""
    from tvm import ir

    ty = var.ty
    return "handle" if isinstance(ty, ir.PointerType) else str(getattr(ty, "dtype", "handle"))


_BINARY = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "FloorDiv": lambda a, b: a // b, "FloorMod": lambda a, b: a % b,
    # truncated division (C semantics) for Div/Mod
    "Div": lambda a, b: int(a / b), "Mod": lambda a, b: a - b * int(a / b),
    "Min": min, "Max": max, "EQ": lambda a, b: a == b, "NE": lambda a, b: a != b,
    "LT": lambda a, b: a < b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b,
    "GE": lambda a, b: a >= b, "And": lambda a, b: bool(a and b), "Or": lambda a, b: bool(a or b),
}


def _evaluate(expr, env: dict) -> int | float | bool:
    """A small evaluator for the scalar expressions a host function computes."""
    from tvm import ir, tirx

    if isinstance(expr, bool | int | float):
        return expr
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tirx.FloatImm):
        return float(expr.value)
    if isinstance(expr, ir.Var):
        if expr in env:
            return env[expr]
        raise UnsupportedHostCode(f"host variable {expr} has no known value")
    kind = type(expr).__name__
    if kind in _BINARY:
        return _BINARY[kind](_evaluate(expr.a, env), _evaluate(expr.b, env))
    if kind == "Not":
        return not _evaluate(expr.a, env)
    if kind == "Cast":
        v = _evaluate(expr.value, env)
        return float(v) if "float" in str(expr.dtype) else int(v)
    if kind == "Select":
        c = _evaluate(expr.condition, env)
        return _evaluate(expr.true_value if c else expr.false_value, env)
    if isinstance(expr, ir.Call):
        name = str(getattr(expr.op, "name", ""))
        if name == "tirx.if_then_else":
            c = _evaluate(expr.args[0], env)
            return _evaluate(expr.args[1] if c else expr.args[2], env)
        if name == "tirx.likely":
            return _evaluate(expr.args[0], env)
    raise UnsupportedHostCode(f"cannot evaluate host expression {expr} ({kind})")


def _compute_scope(func):
    """The ``compute_scope`` AttrStmt body of a packed host function (where kernels launch)."""
    import tvm_ffi
    from tvm import tirx

    found: list = []

    def visit(s) -> None:
        if str(s.attr_key) == "compute_scope":
            found.append(s)

    tvm_ffi.structural_walk(func.body, [(tirx.AttrStmt, visit)])
    if not found:
        raise UnsupportedHostCode("the host function has no compute_scope")
    return found[0]


def extract(host_mod, device_mods: dict, func) -> LaunchPlan:
    """Read the launch plan of ``func`` (the scheduled PrimFunc) from its lowered host module.

    ``host_mod`` is the host IRModule after the TIR pipeline and before the host finalisation
    passes; ``device_mods`` maps each device target to its IRModule of kernels.
    """
    import tvm_ffi
    from tvm import tirx

    kernels = kernel_arg_types(device_mods)
    params = param_specs(func)
    entry = None
    for gv, f in host_mod.functions.items():
        if str(gv.name_hint) == "main":
            entry = f
    if entry is None:
        raise UnsupportedHostCode("the host module has no main function")
    interp = _HostInterpreter(kernels, len(params))
    # Handles and buffer declarations made before the compute scope (argument unpacking).
    prologue: list = []
    tvm_ffi.structural_walk(entry.body, [(tirx.Bind, prologue.append)])
    for b in prologue:
        interp.bind(b.var, b.value)
    decls: list = []
    tvm_ffi.structural_walk(entry.body, [(tirx.DeclBuffer, decls.append)])
    scope = _compute_scope(entry)
    inner: list = []
    tvm_ffi.structural_walk(scope.body, [(tirx.DeclBuffer, inner.append)])
    for d in decls:
        if not any(d.same_as(x) for x in inner):
            interp.declare(d.buffer, d.data)
    interp.run(scope.body)
    for x in interp.launches:
        for a in x.args:
            if "param" in a and not 0 <= a["param"] < len(params):
                raise UnsupportedHostCode(f"{x.kernel}: argument from unknown parameter {a['param']}")
    return LaunchPlan(params, interp.temps, interp.launches, kernels)
