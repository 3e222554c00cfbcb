# Finds cuDNN next to the CUDA toolkit (or under CUDNN_ROOT / the Python nvidia-cudnn package)
# and defines the imported target Ember::cudnn.
find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY cudnn
  HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib lib64)
if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
  add_library(Ember::cudnn SHARED IMPORTED)
  set_target_properties(Ember::cudnn PROPERTIES
    IMPORTED_LOCATION ${CUDNN_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${CUDNN_INCLUDE_DIR})
  set(EMBER_HAVE_CUDNN ON)
  message(STATUS "Ember: cuDNN ${CUDNN_LIBRARY}")
else()
  message(STATUS "Ember: cuDNN not found; the cuDNN backend is off")
endif()
