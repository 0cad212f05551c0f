"""The TIR program's ``compile_and_run`` in GPU repro scripts (OpenCL, CUDA).

What runs before it — TVM's lowering and codegen, the GPU runtime — is shared by every kind's
script (:mod:`fuzzharness.repro.gpu_runtime`); this is the TIR part: schedule the PrimFunc,
generate, build, launch by the embedded plan, hand the outputs to the runner.
"""

_COMPILE = r'''
def compile_and_run(x, scheduled=True):
    _stage("schedule")
    sch = s_tir.Schedule(main)
    if scheduled:
        schedule(sch)
    _stage("compile")
    source = device_source(sch.mod)
    _stage("build")
@DEVICE@
    arrays = [to_kernel(name, x[name]) for name in INPUTS]
    arrays += [_poison(kernel_shape(name, shape), dtype) for name, (shape, dtype) in OUTPUTS.items()]
    got = device.run(source, LAUNCH, arrays, list(INPUTS) + list(OUTPUTS))
    return {name: from_kernel(name, out) for name, out in zip(OUTPUTS, got[len(INPUTS):])}
'''

#: a TIR program on OpenCL (before template.RUNNER): pyopencl builds the program
OPENCL_COMPILE = _COMPILE.replace("@DEVICE@", '    device = OpenCL([source])\n    _stage("run")')
#: a TIR program on CUDA (before template.RUNNER): nvcc builds, the driver loads at run
CUDA_COMPILE = _COMPILE.replace(
    "@DEVICE@", '    cubin = nvcc(source, TARGET["arch"])\n    _stage("run")\n    device = CUDA(cubin)')
