// The kernel tables that record every call (Note [Op trace] in runtime/trace.h); kernels_for()
// hands them out while a trace is on.
#pragma once

#include "kernels/kernel_table.h"

namespace ember::kernels {

// The recording table of d's device type; calls made through it are recorded as running on d.
// requires: d's device is current (kernels_for made it so) and its kernels compiled in.
const KernelTable& traced_kernels(Device d);

}  // namespace ember::kernels
