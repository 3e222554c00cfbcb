// The cpu's strided copy with dtype conversion: the runtime's copy engine (Tensor::copy_ on the
// cpu), reached through the kernel table like the GPU copy kernel.
#include <vector>

#include "kernels/kernel_table.h"
#include "runtime/tensor.h"

namespace ember::kernels::cpu {

void copy_strided(DType dst_t, DType src_t, const StridedIndex<2>& index, void* dst,
                  const void* src, Stream) {
  const Shape sizes(index.sizes, index.sizes + index.ndim);
  const Shape dst_strides(index.strides[0], index.strides[0] + index.ndim);
  const Shape src_strides(index.strides[1], index.strides[1] + index.ndim);
  strided_copy_cpu(dst, dst_t, dst_strides, src, src_t, src_strides, sizes);
}

}  // namespace ember::kernels::cpu
