// The GPU facade over the real CUDA runtime (cudart). Built only when CUDA is enabled; it links
// the runtime library alone (never libcuda), so it loads and reports cleanly on machines
// without a driver.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <mutex>

#include "runtime/cuda_check.h"
#include "runtime/gpu_backends.h"

namespace ember {
namespace detail {
void throw_cuda_error(cudaError_t err, const char* stmt, const char* file, int line) {
  int dev = -1;
  cudaGetDevice(&dev);
  (void)cudaGetLastError();  // clear a sticky non-fatal error so the process stays usable
  throw CudaError(str_cat("CUDA error ", cudaGetErrorName(err), " (", cudaGetErrorString(err),
                          ") in `", stmt, "` at ", file, ":", line, " on cuda:", dev));
}
}  // namespace detail

namespace gpu {
namespace {

cudaMemcpyKind to_cuda(CopyKind k) {
  switch (k) {
    case CopyKind::HostToHost:
      return cudaMemcpyHostToHost;
    case CopyKind::HostToDevice:
      return cudaMemcpyHostToDevice;
    case CopyKind::DeviceToHost:
      return cudaMemcpyDeviceToHost;
    case CopyKind::DeviceToDevice:
      return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

class CudaBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::CUDA; }

  Availability availability() override {
    std::call_once(probed_, [this] { probe(); });
    return avail_;
  }

  int device_count() override {
    availability();
    return count_;
  }

  DeviceProps properties(int device) override {
    cudaDeviceProp p{};
    EMBER_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    DeviceProps d;
    d.name = p.name;
    d.major = p.major;
    d.minor = p.minor;
    d.total_memory = p.totalGlobalMem;
    d.multiprocessors = p.multiProcessorCount;
    d.warp_size = p.warpSize;
    d.max_threads_per_block = p.maxThreadsPerBlock;
    d.max_grid_y = p.maxGridSize[1];
    d.max_grid_z = p.maxGridSize[2];
    d.shared_mem_per_block = p.sharedMemPerBlock;
    d.shared_mem_per_block_optin = p.sharedMemPerBlockOptin;
    int clock = 0, bus = 0;
    cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, device);
    cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, device);
    d.clock_khz = clock;
    d.memory_bus_bits = bus;
    return d;
  }

  MemInfo mem_info(int device) override {
    ::ember::detail::DeviceScope g(device);
    MemInfo m;
    EMBER_CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
    return m;
  }

  void set_device(int device) override {
    int current = -1;
    EMBER_CUDA_CHECK(cudaGetDevice(&current));
    if (current != device) EMBER_CUDA_CHECK(cudaSetDevice(device));
  }

  void* malloc(int device, size_t bytes) override {
    ::ember::detail::DeviceScope g(device);
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    EMBER_CUDA_CHECK(err);
    return p;
  }
  void free(int device, void* ptr) noexcept override {
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess) return;
    if (prev != device) cudaSetDevice(device);
    EMBER_CUDA_CHECK_NOTHROW(cudaFree(ptr));
    if (prev != device) cudaSetDevice(prev);
  }

  void memcpy(void* dst, const void* src, size_t bytes, CopyKind kind) override {
    if (kind == CopyKind::DeviceToHost) note_device_to_host_copy();
    if (kind == CopyKind::HostToDevice) note_host_to_device_copy();
    EMBER_CUDA_CHECK(cudaMemcpy(dst, src, bytes, to_cuda(kind)));
  }
  void memcpy_async(void* dst, const void* src, size_t bytes, CopyKind kind,
                    Stream stream) override {
    if (kind == CopyKind::DeviceToHost) note_device_to_host_copy();
    EMBER_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, bytes, to_cuda(kind), static_cast<cudaStream_t>(stream)));
  }
  void memset(void* ptr, int value, size_t bytes) override {
    EMBER_CUDA_CHECK(cudaMemset(ptr, value, bytes));
  }
  void memset_async(void* ptr, int value, size_t bytes, Stream stream) override {
    EMBER_CUDA_CHECK(cudaMemsetAsync(ptr, value, bytes, static_cast<cudaStream_t>(stream)));
  }

  Stream stream_create(int device) override {
    ::ember::detail::DeviceScope g(device);
    cudaStream_t s = nullptr;
    EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }
  void stream_destroy(Stream s) noexcept override {
    if (s) EMBER_CUDA_CHECK_NOTHROW(cudaStreamDestroy(static_cast<cudaStream_t>(s)));
  }
  void stream_synchronize(Stream s) override {
    note_synchronization();
    EMBER_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
  }
  void stream_wait_event(Stream s, Event e) override {
    EMBER_CUDA_CHECK(
        cudaStreamWaitEvent(static_cast<cudaStream_t>(s), static_cast<cudaEvent_t>(e), 0));
  }
  void device_synchronize(int device) override {
    note_synchronization();
    ::ember::detail::DeviceScope g(device);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  }

  Event event_create(int device, bool timing) override {
    ::ember::detail::DeviceScope g(device);
    cudaEvent_t e = nullptr;
    EMBER_CUDA_CHECK(
        cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
    return e;
  }
  void event_destroy(Event e) noexcept override {
    if (e) EMBER_CUDA_CHECK_NOTHROW(cudaEventDestroy(static_cast<cudaEvent_t>(e)));
  }
  void event_record(Event e, Stream s) override {
    EMBER_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)));
  }
  void event_synchronize(Event e) override {
    note_synchronization();
    EMBER_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(e)));
  }
  bool event_query(Event e) override {
    cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(e));
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();  // "not ready" is an answer, not an error to keep
      return false;
    }
    EMBER_CUDA_CHECK(err);
    return true;
  }
  float event_elapsed_ms(Event a, Event b) override {
    float ms = 0;
    EMBER_CUDA_CHECK(
        cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(a), static_cast<cudaEvent_t>(b)));
    return ms;
  }
  void check_last_error(const char* what) override {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) detail::throw_cuda_error(err, what, __FILE__, __LINE__);
  }

 private:
  // Note [Probing CUDA without a driver]: cudaGetDeviceCount's return code, not the count, says
  // what is wrong. With no driver it fails (cudaErrorNoDevice / InsufficientDriver /
  // initialization errors depending on the toolkit); cudaDriverGetVersion reports 0 then.
  void probe() {
    avail_.runtime_version = cuda_runtime_version();
    avail_.driver_version = cuda_driver_version();
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    (void)cudaGetLastError();
    const std::string rt = cuda_version_string(avail_.runtime_version);
    const std::string drv = cuda_version_string(avail_.driver_version);
    if (err == cudaSuccess && n > 0) {
      count_ = n;
      avail_.usable = true;
      avail_.reason = std::to_string(n) + " device" + (n == 1 ? "" : "s");
    } else if (avail_.driver_version == 0) {
      avail_.reason = "no NVIDIA driver found";
    } else if (err == cudaErrorInsufficientDriver ||
               avail_.driver_version < avail_.runtime_version) {
      avail_.reason = "the NVIDIA driver supports CUDA " + drv + " but Ember was built with CUDA " +
                      rt + "; update the driver";
    } else if (err == cudaErrorNoDevice || (err == cudaSuccess && n == 0)) {
      avail_.reason = "the driver (CUDA " + drv + ") found no CUDA device";
    } else {
      avail_.reason = std::string("CUDA initialisation failed: ") + cudaGetErrorName(err) + " (" +
                      cudaGetErrorString(err) + ")";
    }
  }

  std::once_flag probed_;
  Availability avail_;
  int count_ = 0;
};

}  // namespace

Backend& cuda_backend() {
  static CudaBackend b;
  return b;
}

int cuda_runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) (void)cudaGetLastError();
  return v;
}
int cuda_driver_version() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return v;
}

}  // namespace gpu
}  // namespace ember
