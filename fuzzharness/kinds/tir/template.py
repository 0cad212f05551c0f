"""The fixed parts of a TIR repro script: compiling and running the scheduled PrimFunc, and the
parameter re-layout of ``transform_layout`` (the runner itself is
:data:`fuzzharness.repro.template.RUNNER`)."""

COMPILE = r'''
def compile_and_run(x, scheduled=True):
    _stage("schedule")
    sch = s_tir.Schedule(main)
    if scheduled:
        schedule(sch)
    _stage("compile")
    with tvm.transform.PassContext(opt_level=3, config=PASS_CONFIG):
        lib = tvm.compile(sch.mod, target=TARGET)
    _stage("build")
    kernel = lib["main"]  # the LLVM JIT compiles here
    _stage("run")
    # every buffer between guard zones: an out-of-bounds write is named, not left to a signal
    args = [_Guarded(to_kernel(name, x[name])) for name in INPUTS]
    outs = [_Guarded(_poison(kernel_shape(name, shape), dtype))
            for name, (shape, dtype) in OUTPUTS.items()]
    kernel(*[g.tensor() for g in args + outs])
    for name, g in zip(list(INPUTS) + list(OUTPUTS), args + outs):
        g.check(name)
    return {name: from_kernel(name, out.array.copy()) for name, out in zip(OUTPUTS, outs)}
'''


IDENTITY_LAYOUTS = r'''
# every parameter keeps its layout (no transform_layout of a parameter in the schedule)
def to_kernel(name, array):
    return array


def from_kernel(name, array):
    return array


def kernel_shape(name, shape):
    return shape
'''

RELAYOUT = r'''
# transform_layout re-laid out some parameters: the kernel takes and returns them in the new
# layout.  POSITION[name][i] is where element i (C order) of the original array lives in the
# kernel's flattened array; the rest is padding, filled with PAD[name].
def to_kernel(name, array):
    if name not in POSITION:
        return array
    out = np.full(KERNEL_SHAPE[name], PAD[name], dtype=array.dtype)
    out.reshape(-1)[np.asarray(POSITION[name])] = array.reshape(-1)
    return out


#: output name -> how many padding elements do not hold PAD[name] after the run: TVM
#: promises that a producer of a padded buffer writes the pad value there
UNFILLED = {}


def from_kernel(name, array):
    if name not in POSITION:
        return array
    flat = array.reshape(-1)
    padding = np.ones(flat.size, dtype=bool)
    padding[np.asarray(POSITION[name], dtype=np.int64)] = False
    UNFILLED[name] = int(np.count_nonzero(flat[padding] != np.asarray(PAD[name], dtype=array.dtype)))
    return flat[np.asarray(POSITION[name], dtype=np.int64)].reshape(ORIGINAL_SHAPE[name])


def kernel_shape(name, shape):
    return KERNEL_SHAPE.get(name, shape)
'''
