// The Tensor Core instructions on the SIMT emulator (runtime/simt/tensor_core.h): mma.sync and
// ldmatrix as warp all-gathers whose results follow the PTX lane maps, cp.async as copies held
// back until their group is waited for, and the checks a GPU leaves undefined.
//
// Note [Static shared memory]: a `__shared__` array is a `static thread_local` under the
// emulator (kernels/cuda/compat.h), so it lives in the thread-local storage of the module that
// defines the kernel, in the instance of the OS thread that runs the block. Those instances are
// the calling thread's PT_TLS blocks, which dl_iterate_phdr reports (dlpi_tls_data); with the
// block's dynamic shared memory they are the whole shared space. A kernel's other thread_local
// variables would count too, but a kernel has none besides its __shared__ arrays.
#include "runtime/simt/tensor_core.h"

#include <link.h>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/half.h"
#include "runtime/simt/block.h"

namespace ember::simt {

namespace {

using detail::Worker;

constexpr uint32_t kFullWarp = 0xffffffffu;

Worker& running(const char* what) {
  Worker* w = Worker::active();
  if (!w) EMBER_THROW(CudaError, "SIMT emulator: ", what, " called outside a kernel");
  return *w;
}

int lane_of(const Worker& w) {
  return w.current_thread() % kWarpSize;
}

// --- The lane maps (runtime/simt/tensor_core.h) ----------------------------------------------
// Element i of a lane's fragment is half i & 1 of register i >> 1.
int a_row(int lane, int i) {
  return (lane >> 2) + 8 * ((i >> 1) & 1);
}
int a_col(int lane, int i) {
  return 2 * (lane & 3) + (i & 1) + 8 * (i >> 2);
}
int b_row(int lane, int i) {
  return 2 * (lane & 3) + (i & 1) + 8 * (i >> 1);
}
int b_col(int lane) {
  return lane >> 2;
}
int c_row(int lane, int i) {
  return (lane >> 2) + 8 * (i >> 1);
}
int c_col(int lane, int i) {
  return 2 * (lane & 3) + (i & 1);
}

float element(MmaInput in, uint32_t reg, int half) {
  const uint16_t bits = static_cast<uint16_t>(reg >> (16 * half));
  return in == MmaInput::F16 ? half_bits_to_float(bits) : bf16_bits_to_float(bits);
}

void require_full_warp(const Worker& w, uint32_t lanes, const char* what, const char* file,
                       int line) {
  if (lanes == kFullWarp) return;
  EMBER_THROW(CudaError, what, " at ", file, ":", line, ": warp ", w.current_thread() / kWarpSize,
              " of the block has ", __builtin_popcount(lanes), " threads; ", what,
              " needs a full warp of 32");
}

// The registers one lane deposits for an mma.sync.
struct MmaOperands {
  uint32_t a[4];
  uint32_t b[2];
};

void mma(int k, MmaInput in, float* d, const uint32_t* a, const uint32_t* b, const float* c,
         const char* file, int line) {
  Worker& w = running("mma.sync");
  const int a_elems = k / 2, b_elems = k / 4;  // per lane: 8 and 4 (k = 16), 4 and 2 (k = 8)
  MmaOperands mine{};
  std::memcpy(mine.a, a, sizeof(uint32_t) * a_elems / 2);
  std::memcpy(mine.b, b, sizeof(uint32_t) * b_elems / 2);
  const unsigned char* table = nullptr;
  const uint32_t lanes = w.all_gather(WarpOp::Mma, &mine, sizeof(mine), &table, file, line);
  require_full_warp(w, lanes, k == 16 ? "mma.sync.m16n8k16" : "mma.sync.m16n8k8", file, line);
  detail::TsanIgnore ignore;  // the gathered copies are the emulator's, not the kernel's
  // This lane's outputs need rows g and g + 8 of A and columns 2t and 2t + 1 of B: only the
  // fragments of the lanes that hold them (four lanes each) are decoded.
  const int lane = lane_of(w), g = lane >> 2, t = lane & 3;
  float a_rows[2][16] = {}, b_cols[2][16] = {};  // [row g / g + 8][k], [column 2t / 2t + 1][k]
  for (int l = 0; l < kWarpSize; ++l) {
    const int j = b_col(l) - 2 * t;
    if (a_row(l, 0) != g && j != 0 && j != 1) continue;
    MmaOperands o;
    std::memcpy(&o, table + l * sizeof(o), sizeof(o));
    if (a_row(l, 0) == g)
      for (int i = 0; i < a_elems; ++i)
        a_rows[a_row(l, i) != g][a_col(l, i)] = element(in, o.a[i >> 1], i & 1);
    if (j == 0 || j == 1)
      for (int i = 0; i < b_elems; ++i) b_cols[j][b_row(l, i)] = element(in, o.b[i >> 1], i & 1);
  }
  float out[4];
  for (int i = 0; i < 4; ++i) {
    // Row c_row(lane, i) is g + 8 (i >> 1), column c_col(lane, i) is 2t + (i & 1).
    const float* arow = a_rows[c_row(lane, i) != g];
    const float* bcol = b_cols[c_col(lane, i) - 2 * t];
    float s = c[i];
    for (int kk = 0; kk < k; ++kk) s += arow[kk] * bcol[kk];  // exact products, float sums
    out[i] = s;
  }
  std::memcpy(d, out, sizeof(out));
}

// --- Shared memory (Note [Static shared memory]) ---------------------------------------------
struct Range {
  uintptr_t lo, hi;
};

int add_tls_blocks(dl_phdr_info* info, size_t, void* out) {
  if (!info->dlpi_tls_data) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_TLS) {
      const uintptr_t lo = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
      static_cast<std::vector<Range>*>(out)->push_back({lo, lo + info->dlpi_phdr[i].p_memsz});
    }
  return 0;
}

bool in_static_shared(uintptr_t p, size_t bytes) {
  thread_local std::vector<Range> blocks;  // this OS thread's, learnt on first need
  auto inside = [&] {
    for (const Range& r : blocks)
      if (p >= r.lo && p + bytes <= r.hi) return true;
    return false;
  };
  if (inside()) return true;
  blocks.clear();  // a module loaded, or a TLS block allocated, since they were learnt
  dl_iterate_phdr(add_tls_blocks, &blocks);
  return inside();
}

bool in_shared(Worker& w, const void* ptr, size_t bytes) {
  detail::TsanIgnore ignore;
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t dyn = reinterpret_cast<uintptr_t>(w.dynamic_shared());
  if (p >= dyn && p + bytes <= dyn + w.dynamic_shared_bytes()) return true;
  return in_static_shared(p, bytes);
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// --- ldmatrix --------------------------------------------------------------------------------
// requires: matrices is 1, 2 or 4.
const char* ldmatrix_name(int matrices, bool trans) {
  static const char* const names[2][3] = {
      {"ldmatrix.x1", "ldmatrix.x2", "ldmatrix.x4"},
      {"ldmatrix.x1.trans", "ldmatrix.x2.trans", "ldmatrix.x4.trans"}};
  return names[trans][matrices / 2];
}

void check_row(Worker& w, const char* what, const void* row, bool read, const char* file,
               int line) {
  const int lane = lane_of(w);
  if (!aligned16(row))
    EMBER_THROW(CudaError, what, " at ", file, ":", line, ": lane ", lane, " passes row address ",
                row, ", which is not 16-byte aligned; every row address must be");
  if (!in_shared(w, row, 16))
    EMBER_THROW(CudaError, what, " at ", file, ":", line, ": lane ", lane, " passes row address ",
                row,
                ", which is not in the block's shared memory; ldmatrix reads shared memory only",
                read ? ""
                     : " (and on sm_75 every lane's address must be valid, also those "
                       ".x1 and .x2 do not read: copy a lower lane's)");
  detail::AsyncCopies::Issuer who;
  if (read && w.async_copies().pending_over(row, 16, &who))
    EMBER_THROW(CudaError, what, " at ", file, ":", line, ": lane ", lane, " reads the row at ",
                row, " while the cp.async that ", w.thread_name(who.thread), " issued at ",
                who.file, ":", who.line,
                " to it is still pending; wait for its group (cp_async_wait) and then "
                "__syncthreads() before reading it");
}

struct Row {
  uint16_t e[8];
};

}  // namespace

void mma_m16n8k16(MmaInput in, float* d, const uint32_t* a, const uint32_t* b, const float* c,
                  const char* file, int line) {
  mma(16, in, d, a, b, c, file, line);
}

void mma_m16n8k8(MmaInput in, float* d, const uint32_t* a, const uint32_t* b, const float* c,
                 const char* file, int line) {
  mma(8, in, d, a, b, c, file, line);
}

void ldmatrix(int matrices, bool trans, uint32_t* r, const void* row, const char* file, int line) {
  Worker& w = running("ldmatrix");
  const char* what = ldmatrix_name(matrices, trans);
  const int lane = lane_of(w);
  const bool read = lane < 8 * matrices;  // lanes 8m..8m+7 address matrix m
  check_row(w, what, row, read, file, line);
  Row mine{};
  if (read) std::memcpy(&mine, row, sizeof(mine));  // the kernel's read of its row
  const unsigned char* table = nullptr;
  const uint32_t lanes = w.all_gather(WarpOp::Ldmatrix, &mine, sizeof(mine), &table, file, line);
  require_full_warp(w, lanes, what, file, line);
  detail::TsanIgnore ignore;
  const int g = lane >> 2, t = lane & 3;
  for (int m = 0; m < matrices; ++m) {
    auto at = [&](int row_of_m, int col) {
      Row rw;
      std::memcpy(&rw, table + (8 * m + row_of_m) * sizeof(Row), sizeof(Row));
      return uint32_t(rw.e[col]);
    };
    // Low half first: row g, columns 2t and 2t + 1 (.trans: rows 2t and 2t + 1, column g).
    r[m] = trans ? at(2 * t, g) | at(2 * t + 1, g) << 16 : at(g, 2 * t) | at(g, 2 * t + 1) << 16;
  }
}

void cp_async_16(void* dst, const void* src, int src_bytes, const char* file, int line) {
  Worker& w = running("cp.async");
  if (src_bytes < 0 || src_bytes > 16)
    EMBER_THROW(CudaError, "cp.async at ", file, ":", line, ": src_bytes is ", src_bytes,
                "; it must be in [0, 16]");
  if (!aligned16(dst) || !in_shared(w, dst, 16))
    EMBER_THROW(
        CudaError, "cp.async at ", file, ":", line, ": the destination ", dst,
        !aligned16(dst) ? " is not 16-byte aligned" : " is not in the block's shared memory",
        "; cp.async.cg writes 16 aligned bytes of shared memory");
  if (src_bytes > 0 && (!aligned16(src) || in_shared(w, src, 16)))
    EMBER_THROW(CudaError, "cp.async at ", file, ":", line, ": the source ", src,
                !aligned16(src) ? " is not 16-byte aligned" : " is in shared memory",
                "; cp.async.cg reads 16 aligned bytes of global memory");
  w.async_copies().issue(w.current_thread(), static_cast<unsigned char*>(dst),
                         static_cast<const unsigned char*>(src), 16, src_bytes, file, line);
}

void cp_async_commit() {
  Worker& w = running("cp.async.commit_group");
  w.async_copies().commit(w.current_thread());
}

void cp_async_wait(int n) {
  Worker& w = running("cp.async.wait_group");
  w.async_copies().wait(w.current_thread(), n);
}

}  // namespace ember::simt
