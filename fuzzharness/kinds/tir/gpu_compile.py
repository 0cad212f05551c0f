"""The TIR program's ``compile_and_run`` in GPU repro scripts (OpenCL, CUDA).

What runs before it — TVM's lowering and codegen, the GPU runtime — is shared by every kind's
script (:mod:`fuzzharness.repro.gpu_runtime`); this is the TIR part: schedule the PrimFunc,
generate, build, launch by the embedded plan, hand the outputs to the runner.
"""

#: a TIR program on OpenCL (before template.RUNNER)
OPENCL_COMPILE = r'''
def compile_and_run(x, scheduled=True):
    _stage("schedule")
    sch = s_tir.Schedule(main)
    if scheduled:
        schedule(sch)
    _stage("compile")
    source = device_source(sch.mod)
    _stage("build")
    device = OpenCL([source])
    _stage("run")
    arrays = [to_kernel(name, x[name]) for name in INPUTS]
    arrays += [_poison(kernel_shape(name, shape), dtype) for name, (shape, dtype) in OUTPUTS.items()]
    got = device.run(source, LAUNCH, arrays, list(INPUTS) + list(OUTPUTS))
    return {name: from_kernel(name, out) for name, out in zip(OUTPUTS, got[len(INPUTS):])}
'''

#: a TIR program on CUDA (before template.RUNNER)
CUDA_COMPILE = r'''
def compile_and_run(x, scheduled=True):
    _stage("schedule")
    sch = s_tir.Schedule(main)
    if scheduled:
        schedule(sch)
    _stage("compile")
    source = device_source(sch.mod)
    _stage("build")
    cubin = nvcc(source, TARGET["arch"])
    _stage("run")
    device = CUDA(cubin)
    arrays = [to_kernel(name, x[name]) for name in INPUTS]
    arrays += [_poison(kernel_shape(name, shape), dtype) for name, (shape, dtype) in OUTPUTS.items()]
    got = device.run(source, LAUNCH, arrays, list(INPUTS) + list(OUTPUTS))
    return {name: from_kernel(name, out) for name, out in zip(OUTPUTS, got[len(INPUTS):])}
'''
