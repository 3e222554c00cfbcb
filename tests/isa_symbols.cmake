# Note [Instruction-set files] (kernels/cpu/conv2d_implicit_gemm_ukernels.h): the objects compiled
# with -mavx2 or -mavx512f must define nothing the rest of the library could also define (an
# inline function or template emitted there, then kept by the linker for every caller, would run
# wide instructions before the CPU check). So each defines exactly one global symbol, its table
# of micro-kernels, and no weak or unique symbols at all.
#   cmake -DNM=<nm> -DOBJECTS="a.o|b.o" -P isa_symbols.cmake
string(REPLACE "|" ";" objects "${OBJECTS}")
set(bad "")
foreach(obj IN LISTS objects)
  execute_process(COMMAND ${NM} -C --defined-only ${obj} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} ${obj} failed (${rc})")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  set(tables 0)
  foreach(line IN LISTS lines)
    # Local symbols (b d n r s t: bss, data, debug, read-only, small, text) cannot be shared;
    # anything else (global, weak: W V w v, unique: u) must be the table.
    if(line MATCHES "^[0-9a-f]* [bdnrst] " OR line STREQUAL "")
      continue()
    endif()
    # The compilers' own bookkeeping, data rather than code: AddressSanitizer's ODR indicator of
    # each global, and the reference to the C++ personality routine (exception tables).
    if(line MATCHES " __odr_asan\\.[^ ]*$" OR line MATCHES " DW\\.ref\\.__gxx_personality_v0$")
      continue()
    endif()
    if(line MATCHES "^[0-9a-f]+ [DR] ember::kernels::cpu::implicit_gemm::kAvx(2|512)Ukernels$")
      math(EXPR tables "${tables} + 1")
    else()
      string(APPEND bad "${obj}: ${line}\n")
    endif()
  endforeach()
  if(NOT tables EQUAL 1)
    string(APPEND bad "${obj}: expected exactly one micro-kernel table, found ${tables}\n")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "instruction-set objects define shared symbols:\n${bad}")
endif()
list(LENGTH objects n)
message(STATUS "${n} instruction-set objects: one table each, nothing else shared")
