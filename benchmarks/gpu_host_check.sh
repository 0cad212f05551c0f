#!/bin/bash
# The CUDA path on a real GPU host that has nvcc, a driver, cuda-bindings, numpy and pandas but
# no TVM and no network: sets up TVM from pieces carried in .gpu/, runs the GPU tests and a
# short CUDA campaign; everything lands in $OUT (log.txt, camp.json, camp.tgz).
# The pieces (the TVM wheel is 100 MB; carried trees may be capped, e.g. at 64 MiB):
#   .gpu/so.xz          tvm/lib/libtvm_compiler.so of apache-tvm 0.27.0.post1:
#                       xz --x86 --lzma2=preset=9e,dict=192MiB (100 MB zipped -> 58 MB)
#   .gpu/tvmrest.tar.xz the rest of that wheel, without 3rdparty/, web/, src/, include/ and
#                       the onnx/tflite/torch/stablehlo frontends
#   .gpu/ffi.tar.xz     apache-tvm-ffi 0.1.14.post1 (cp312), without 3rdparty/include/src
#   .gpu/*.whl          hypothesis 6.155.2, tomli-w
# Used on an H200 on 2026-11-28: 396 CUDA cases in 150 s with 12 workers.
set -u
exec > >(tee "$OUT/log.txt") 2>&1
date; nvidia-smi -L; python3 --version; nvcc --version | tail -1
S=/tmp/site; mkdir -p $S
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $S .gpu/*.whl
tar xJf .gpu/ffi.tar.xz -C $S && tar xJf .gpu/tvmrest.tar.xz -C $S
xz -dc .gpu/so.xz > $S/tvm/lib/libtvm_compiler.so
# a .pth, not only PYTHONPATH: repro scripts run under python -I, which ignores PYTHONPATH
echo $S > "$(python3 -c 'import site; print(site.getsitepackages()[0])')/zz-fuzz-site.pth"
export PYTHONPATH=$S:$PWD PYTHONUNBUFFERED=1
python3 -c "import tvm, tvm_ffi, hypothesis, numpy, pandas; from cuda.bindings import driver; print('tvm', tvm.__version__, 'hyp', hypothesis.__version__, 'np', numpy.__version__, 'pd', pandas.__version__)" || exit 3
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -2
date
timeout 170 python3 -m pytest -q -p no:randomly -p no:cacheprovider tests/test_cuda_gpu.py tests/test_gpu.py -k "cuda or nvcc or tensor_core" 2>&1 | tail -40
date
timeout 300 python3 -m fuzzharness run $OUT/camp --target cuda --time-budget ${CAMP_S:-150} --workers 12 --seed 1 --minimize-budget 60 --json > $OUT/camp.json 2> $OUT/camp.err; echo "campaign rc=$?"
tail -30 $OUT/camp.err
date
tar czf $OUT/camp.tgz -C $OUT camp && rm -rf $OUT/camp; ls -la $OUT
