// simt::launch: the emulator's side of EMBER_LAUNCH. Copies the kernel's arguments once, then
// hands run_launch a closure that every CUDA thread calls.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>

#include "runtime/gpu.h"
#include "runtime/simt/simt.h"

namespace ember::simt {

// requires: `args` convert to the kernel's parameter types, which are trivially copyable.
// ensures: the kernel has run for every thread of every block (the emulator's streams are
// synchronous), or CudaError was thrown (see run_launch).
template <typename... P, typename... A>
void launch(const char* name, const char* file, int line, void (*kernel)(P...), dim3 grid,
            dim3 block, size_t shared_bytes, gpu::Stream /*stream*/, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "wrong number of kernel arguments");
  static_assert((std::is_trivially_copyable_v<std::decay_t<P>> && ...),
                "kernel parameters must be trivially copyable");
  using Args = std::tuple<std::decay_t<P>...>;
  struct Closure {
    void (*kernel)(P...);
    Args args;
  };
  const Closure closure{kernel, Args(static_cast<std::decay_t<P>>(args)...)};
  LaunchSpec spec;
  spec.kernel = name;
  spec.file = file;
  spec.line = line;
  spec.grid = grid;
  spec.block = block;
  spec.shared_bytes = shared_bytes;
  spec.func = reinterpret_cast<const void*>(kernel);
  spec.body = [](const void* c) {
    const Closure& cl = *static_cast<const Closure*>(c);
    std::apply(cl.kernel, cl.args);
  };
  spec.closure = &closure;
  run_launch(spec);
}

}  // namespace ember::simt
