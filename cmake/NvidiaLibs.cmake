# Locating NVIDIA's libraries (cuBLAS, cuRAND, cuDNN) in the CUDA toolkit or, where the toolkit
# lacks them, in a Python environment's `nvidia/*` wheels (nvidia-cublas, nvidia-cudnn-cu13, ...).
#
# Wheels ship only versioned files (libcudnn.so.9, no libcudnn.so), which find_library does not
# see, so the libraries are globbed and wrapped in imported targets that name the file itself; the
# linker then records its SONAME and CMake puts its folder on the build tree's RPATH.

# EMBER_NVIDIA_WHEEL_DIRS: the `nvidia` package folders of the Python environment (empty when
# there is none). Set it on the command line to point at such folders directly.
if(NOT DEFINED EMBER_NVIDIA_WHEEL_DIRS)
  set(_ember_wheel_dirs "")
  find_program(EMBER_NVIDIA_PYTHON NAMES python3 python)
  if(EMBER_NVIDIA_PYTHON)
    execute_process(
      COMMAND ${EMBER_NVIDIA_PYTHON} -c
        "import nvidia, os; print(';'.join(sorted({os.path.realpath(p) for p in nvidia.__path__})))"
      OUTPUT_VARIABLE _ember_wheel_dirs OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _ember_rc ERROR_QUIET)
    if(NOT _ember_rc EQUAL 0)
      set(_ember_wheel_dirs "")
    endif()
  endif()
  set(EMBER_NVIDIA_WHEEL_DIRS "${_ember_wheel_dirs}" CACHE STRING
    "Python nvidia/* wheel folders searched for cuBLAS, cuRAND and cuDNN")
endif()

# ember_find_nvidia_lib(<prefix> NAME <lib> HEADER <header> [HINTS dirs...])
# Looks in HINTS (their lib/, lib64/ and include/), then in every wheel folder (nvidia/<pkg>/lib
# and include). Sets <prefix>_LIBRARY (a file, the plain .so or the shortest versioned name) and
# <prefix>_INCLUDE_DIR in the cache, or leaves them -NOTFOUND.
function(ember_find_nvidia_lib prefix)
  cmake_parse_arguments(ARG "" "NAME;HEADER" "HINTS" ${ARGN})
  if(${prefix}_LIBRARY AND ${prefix}_INCLUDE_DIR)
    return()
  endif()
  set(lib_dirs "")
  set(inc_dirs "")
  foreach(h ${ARG_HINTS})
    list(APPEND lib_dirs ${h} ${h}/lib ${h}/lib64 ${h}/lib/x86_64-linux-gnu)
    list(APPEND inc_dirs ${h} ${h}/include)
  endforeach()
  foreach(w ${EMBER_NVIDIA_WHEEL_DIRS})
    file(GLOB pkg_dirs LIST_DIRECTORIES true ${w}/*)
    foreach(p ${pkg_dirs})
      if(IS_DIRECTORY ${p}/lib OR IS_DIRECTORY ${p}/include)
        list(APPEND lib_dirs ${p}/lib ${p}/lib64)
        list(APPEND inc_dirs ${p}/include)
      endif()
    endforeach()
  endforeach()
  set(found_lib "")
  foreach(d ${lib_dirs})
    if(EXISTS ${d}/lib${ARG_NAME}.so)
      set(found_lib ${d}/lib${ARG_NAME}.so)
    else()
      file(GLOB versioned ${d}/lib${ARG_NAME}.so.*)
      if(versioned)
        # libcudnn.so.9 before libcudnn.so.9.1.0: the shortest name is the SONAME.
        list(SORT versioned COMPARE NATURAL)
        list(GET versioned 0 found_lib)
      endif()
    endif()
    if(found_lib)
      break()
    endif()
  endforeach()
  set(found_inc "")
  foreach(d ${inc_dirs})
    if(EXISTS ${d}/${ARG_HEADER})
      set(found_inc ${d})
      break()
    endif()
  endforeach()
  if(found_lib AND found_inc)
    set(${prefix}_LIBRARY ${found_lib} CACHE FILEPATH "lib${ARG_NAME}" FORCE)
    set(${prefix}_INCLUDE_DIR ${found_inc} CACHE PATH "${ARG_HEADER}'s folder" FORCE)
  else()
    set(${prefix}_LIBRARY ${prefix}_LIBRARY-NOTFOUND CACHE FILEPATH "lib${ARG_NAME}" FORCE)
    set(${prefix}_INCLUDE_DIR ${prefix}_INCLUDE_DIR-NOTFOUND CACHE PATH "${ARG_HEADER}'s folder" FORCE)
  endif()
endfunction()

# ember_nvidia_target(<target> <library file> <include dir> [<more library files>...]): an
# imported shared library naming the file itself.
function(ember_nvidia_target target lib inc)
  add_library(${target} SHARED IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES IMPORTED_LOCATION ${lib} INTERFACE_INCLUDE_DIRECTORIES ${inc})
  if(ARGN)
    set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${ARGN}")
  endif()
endfunction()
