# The SIMT emulator and the two builds of every CUDA kernel source.
#
# Every kernels/cuda/*.cu is compiled twice into `ember`: by g++ against runtime/simt, through a
# generated one-line .cpp that includes it (namespace ember::kernels::emu), and, when CUDA is
# enabled, by nvcc (namespace ember::kernels::cuda). See kernels/cuda/compat.h.
file(GLOB EMBER_SIMT_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/runtime/simt/*.cpp)
target_sources(ember PRIVATE ${EMBER_SIMT_SOURCES})
if(EMBER_SIMT_UCONTEXT)
  # Only the fiber sources look at it (runtime/simt/fiber.h is internal to the emulator).
  set_source_files_properties(${EMBER_SIMT_SOURCES} PROPERTIES COMPILE_DEFINITIONS EMBER_SIMT_UCONTEXT=1)
else()
  target_link_libraries(ember PRIVATE Boost::context)
endif()

file(GLOB EMBER_CUDA_KERNELS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/cuda/*.cu)
foreach(cu ${EMBER_CUDA_KERNELS})
  get_filename_component(name ${cu} NAME_WE)
  # Relative to the source root (an include directory of `ember`), so that ccache's base dir
  # makes the generated file identical in every clone.
  file(RELATIVE_PATH cu_rel ${CMAKE_CURRENT_SOURCE_DIR} ${cu})
  set(emu_cpp ${CMAKE_CURRENT_BINARY_DIR}/generated/simt/${name}_emu.cpp)
  # file(CONFIGURE) rewrites the file only when its content changes: no needless rebuilds.
  file(CONFIGURE OUTPUT ${emu_cpp} CONTENT "#include \"${cu_rel}\"\n" @ONLY)
  target_sources(ember PRIVATE ${emu_cpp})
  if(EMBER_HAVE_CUDA AND name STREQUAL "gemm_wgmma")
    # wgmma exists only in sm_90a code, which runs on sm_90 devices only: this one kernel file is
    # built for sm_90a alone, when the build targets sm_90 (kernels/cuda/gemm_wgmma.cu), and
    # like the others otherwise (its kernel then empty, its plan refusing with the reason).
    set(wgmma_archs ${CMAKE_CUDA_ARCHITECTURES})
    list(FILTER wgmma_archs INCLUDE REGEX "^90")
    if(wgmma_archs)
      add_library(ember_wgmma OBJECT ${cu})
      set_target_properties(ember_wgmma PROPERTIES CUDA_ARCHITECTURES 90a
                                                   POSITION_INDEPENDENT_CODE ON)
      target_compile_definitions(ember_wgmma PRIVATE EMBER_WGMMA_SM90A=1)
      target_include_directories(ember_wgmma PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
                                                     ${CMAKE_CURRENT_BINARY_DIR}/generated)
      target_link_libraries(ember_wgmma PRIVATE CUDA::cudart $<BUILD_INTERFACE:ember_warnings>)
      target_sources(ember PRIVATE $<TARGET_OBJECTS:ember_wgmma>)
    else()
      target_sources(ember PRIVATE ${cu})
    endif()
  elseif(EMBER_HAVE_CUDA)
    target_sources(ember PRIVATE ${cu})
  endif()
endforeach()
