# Note [cuBLAS loaded on first use] (runtime/cublas_api.h): libember must not depend on cuBLAS or
# cuBLASLt at load time, or every process that loads Ember pays their ~150 MB of resident memory.
#   cmake -DOBJDUMP=<objdump> -DLIB=<libember.so> -P cublas_not_linked.cmake
execute_process(COMMAND ${OBJDUMP} -p ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OBJDUMP} -p ${LIB} failed (${rc})")
endif()
string(REGEX MATCHALL "NEEDED +[^\n]+" needed "${out}")
if(NOT needed)
  message(FATAL_ERROR "no NEEDED entries read from ${LIB}: is it a shared library?")
endif()
foreach(entry IN LISTS needed)
  if(entry MATCHES "libcublas")
    message(FATAL_ERROR "${LIB} links cuBLAS (${entry}); it must load it on first use")
  endif()
endforeach()
message(STATUS "${LIB}: no cuBLAS among ${needed}")
