# Ember in a container: built on NVIDIA's CUDA image with cuDNN through the same
# scripts/setup.sh the README's commands use, run on NVIDIA's CUDA runtime image with cuDNN.
#
#   docker build -t ember .
#   docker run --rm --gpus all ember ember doctor
#   docker run --rm --gpus all -v "$PWD/runs:/runs" ember ember train --device cuda --save /runs/digits.safetensors
#   docker run --rm --gpus all -v "$PWD/models:/models" ember ember run /models/resnet.onnx --device cuda --repeat 100
#
# docs/onnx.md, "The container image", says more (what is inside, the health check).
ARG CUDA_IMAGE_VERSION=13.0.0
ARG UBUNTU=ubuntu24.04

FROM nvidia/cuda:${CUDA_IMAGE_VERSION}-cudnn-devel-${UBUNTU} AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src/ember
COPY . .
# The build's packages only (no test oracles); no tests or benchmarks in the image.
RUN EMBER_SETUP_PACKAGES=build \
    EMBER_CMAKE_ARGS="-DEMBER_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3 -DEMBER_TESTS=OFF -DEMBER_BENCH=OFF -DEMBER_NATIVE=OFF" \
    scripts/setup.sh /src/ember/build \
 && cmake --install build --prefix /opt/ember \
 && cmake --install build --component python --prefix /opt/ember \
      -DEMBER_PYTHON_INSTALL_DIR=/opt/ember/python
# The shared libraries Ember's binaries need beyond the C library and the CUDA runtime image's
# (CUDA, cuDNN, NCCL come with the runtime base): protobuf, ONNX, Open MPI, OpenMP, Boost.
RUN mkdir -p /opt/ember/deps \
 && find /opt/ember -name '*.so*' -o -path '*/bin/ember' | xargs ldd 2>/dev/null \
    | awk '/=> \// {print $3}' | sort -u \
    | grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libcuda|libcudart|libcublas[^/]*|libcurand|libcudnn[^/]*|libnccl|libpython[^/]*)\.so' \
    | xargs -r -I{} cp -L {} /opt/ember/deps/

FROM nvidia/cuda:${CUDA_IMAGE_VERSION}-cudnn-runtime-${UBUNTU}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 python3-numpy openmpi-bin \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/ember /opt/ember
ENV PATH=/opt/ember/bin:${PATH} \
    LD_LIBRARY_PATH=/opt/ember/lib:/opt/ember/deps:${LD_LIBRARY_PATH} \
    PYTHONPATH=/opt/ember/python
WORKDIR /work
# Healthy when Ember loads and can say what it runs on (a GPU, or why there is none).
HEALTHCHECK --interval=5m --timeout=60s CMD ember doctor > /dev/null || exit 1
CMD ["ember", "doctor"]
