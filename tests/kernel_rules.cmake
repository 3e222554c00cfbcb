# Checks the cheap-to-check rules for kernel files (docs/emulator.md): kernels/cuda/*.cu{,h}
# launch only through EMBER_LAUNCH (no <<< >>>) and use no inline PTX or cooperative groups
# (inline PTX lives in kernels/cuda/tensor_core.cuh only, where every instruction has the
# emulator's version);
# kernel sources (.cu) include no Eigen and nothing from the layers above (ops/, autograd/, nn/),
# and reach the runtime only through kernels/cuda/compat.h. The headers they share with the CPU
# kernels (kernels/*.h: shapes, the kernel table, and the *_math.h formulas) follow the same rules
# and include only the C++ standard library, each other, and the runtime's plain headers that
# both compilers read: host-device helpers (runtime/host_device.h, runtime/philox.h), Ember's
# DType (runtime/dtype.h, runtime/half.h) and the facade's Stream and Device (runtime/gpu.h,
# runtime/device.h).
file(GLOB files ${SOURCE_DIR}/kernels/cuda/*.cu ${SOURCE_DIR}/kernels/cuda/*.cuh)
file(GLOB shared ${SOURCE_DIR}/kernels/*.h)
set(bad "")
foreach(f ${files} ${shared})
  file(RELATIVE_PATH name ${SOURCE_DIR} ${f})
  file(STRINGS ${f} lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "^[ \t]*//")
      continue()
    endif()
    if(line MATCHES "<<<")
      string(APPEND bad "${name}:${n}: launch with <<< >>>; use EMBER_LAUNCH\n")
    endif()
    if(line MATCHES "asm[ \t]*(volatile)?[ \t]*\\(" AND NOT name STREQUAL "kernels/cuda/tensor_core.cuh")
      string(APPEND bad "${name}:${n}: inline PTX has no emulator fallback\n")
    endif()
    if(line MATCHES "cooperative_groups")
      string(APPEND bad "${name}:${n}: cooperative groups are not emulated\n")
    endif()
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"]+)")
      continue()
    endif()
    set(quote "${CMAKE_MATCH_1}")
    set(inc "${CMAKE_MATCH_2}")
    if(name MATCHES "\\.cu$")
      if(inc MATCHES "^(Eigen|unsupported/Eigen|runtime/|ops/|autograd/|nn/|cli/)")
        string(APPEND bad "${name}:${n}: includes ${inc}; a kernel source includes kernels/cuda/compat.h, kernel headers and the C++ standard library only\n")
      endif()
    elseif(name MATCHES "^kernels/[^/]+\\.h$")
      if((quote STREQUAL "<" AND inc MATCHES "/") OR (quote STREQUAL "\"" AND
         NOT inc MATCHES "^(kernels/[A-Za-z0-9_]+\\.h|runtime/(host_device|philox|dtype|half|gpu|device)\\.h)$"))
        string(APPEND bad "${name}:${n}: includes ${inc}; a header shared with the kernels includes the C++ standard library, kernels/*.h and runtime/{host_device,philox,dtype,half,gpu,device}.h only\n")
      endif()
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "kernel file rules broken:\n${bad}")
endif()
list(LENGTH files count)
list(LENGTH shared shared_count)
message(STATUS "kernel file rules hold in ${count} files and ${shared_count} shared headers")
