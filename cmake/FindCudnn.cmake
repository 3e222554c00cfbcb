# Finds cuDNN under CUDNN_ROOT, next to the CUDA toolkit, or in the Python environment's
# nvidia-cudnn wheel (which has only libcudnn.so.9, no plain libcudnn.so), and defines the
# imported target Ember::cudnn. Needs cmake/NvidiaLibs.cmake.
if(NOT CUDNN_ROOT AND DEFINED ENV{CUDNN_ROOT})
  set(CUDNN_ROOT $ENV{CUDNN_ROOT})
endif()
ember_find_nvidia_lib(CUDNN NAME cudnn HEADER cudnn.h
  HINTS ${CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_INCLUDE_DIRS})
if(CUDNN_LIBRARY AND CUDNN_INCLUDE_DIR)
  ember_nvidia_target(Ember::cudnn ${CUDNN_LIBRARY} ${CUDNN_INCLUDE_DIR})
  set(EMBER_HAVE_CUDNN ON)
  message(STATUS "Ember: cuDNN ${CUDNN_LIBRARY}")
else()
  message(STATUS "Ember: cuDNN not found; the cuDNN backend is off")
endif()
