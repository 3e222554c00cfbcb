// The three kernel tables, each filled from EMBER_KERNEL_LIST (kernels/kernel_table.h).
#include "kernels/kernel_table.h"

#include "ember/build_config.h"
#include "kernels/kernel_trace.h"
#include "runtime/error.h"
#include "runtime/trace.h"

namespace ember {

namespace {

#define EMBER_KERNEL_ENTRY(name, ret, params) &kernels::EMBER_TABLE_NS::name,

#define EMBER_TABLE_NS cpu
constexpr kernels::KernelTable kCpuKernels{EMBER_KERNEL_LIST(EMBER_KERNEL_ENTRY)};
#undef EMBER_TABLE_NS
#define EMBER_TABLE_NS emu
constexpr kernels::KernelTable kEmuKernels{EMBER_KERNEL_LIST(EMBER_KERNEL_ENTRY)};
#undef EMBER_TABLE_NS
#if EMBER_HAVE_CUDA
#define EMBER_TABLE_NS cuda
constexpr kernels::KernelTable kCudaKernels{EMBER_KERNEL_LIST(EMBER_KERNEL_ENTRY)};
#undef EMBER_TABLE_NS
#endif

#undef EMBER_KERNEL_ENTRY

}  // namespace

const kernels::KernelTable& kernels_for(Device d) {
  const bool traced = trace::enabled();  // Note [Op trace]
  switch (d.type) {
    case DeviceType::CPU:
      return traced ? kernels::traced_kernels(d) : kCpuKernels;
    case DeviceType::EMU:
      gpu::backend(d).set_device(d.index);
      return traced ? kernels::traced_kernels(d) : kEmuKernels;
    case DeviceType::CUDA:
#if EMBER_HAVE_CUDA
      gpu::require_device(d);  // a DeviceError saying why, where there is no usable GPU
      gpu::backend(d).set_device(d.index);
      return traced ? kernels::traced_kernels(d) : kCudaKernels;
#else
      break;
#endif
  }
  EMBER_THROW(DeviceError,
              "cuda: this build of Ember has no CUDA kernels (it was built without nvcc); use "
              "the cpu or emu device");
}

}  // namespace ember
