#include "runtime/error.h"

#include <cstdio>

#include "runtime/autocast_state.h"

namespace ember {

std::string format_bytes(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

DTypeError::DTypeError(const std::string& what) : Error(what + autocast_note()) {}

OutOfMemory::OutOfMemory(const std::string& device, size_t requested, size_t allocated,
                         size_t reserved, size_t capacity)
    : Error(detail::str_cat("out of memory on ", device, ": tried to allocate ",
                            format_bytes(requested), "; ", format_bytes(allocated),
                            " allocated, ", format_bytes(reserved), " reserved by Ember, ",
                            format_bytes(capacity),
                            " total capacity. Free tensors, call empty_cache(), or use a "
                            "smaller batch.")),
      requested_(requested),
      allocated_(allocated),
      reserved_(reserved),
      capacity_(capacity) {}

}  // namespace ember
