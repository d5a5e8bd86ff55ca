# CUDA detection for libm40.
#
# M40_CUDA=OFF   -> CPU reference only.
# M40_CUDA=AUTO  -> CUDA if a compiler is found.
# M40_CUDA=ON    -> CUDA or a configure error.
#
# Architectures: default 52 (sm_52 SASS + compute_52 PTX, the Tesla M40).
# CUDA 13 dropped Maxwell, so with CUDA >= 13 and no explicit
# CMAKE_CUDA_ARCHITECTURES we stop and explain rather than silently build
# a library that cannot run on an M40.
set(M40_HAVE_CUDA OFF)
set(M40_HAVE_CUDNN OFF)
set(M40_CUDA_ARCHS_STRING "none")

string(TOUPPER "${M40_CUDA}" _m40_cuda)
if(_m40_cuda STREQUAL "OFF")
  return()
elseif(NOT _m40_cuda MATCHES "^(AUTO|ON)$")
  message(FATAL_ERROR "M40_CUDA must be AUTO, ON or OFF (got '${M40_CUDA}')")
endif()

include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  if(_m40_cuda STREQUAL "ON")
    message(FATAL_ERROR "M40_CUDA=ON but no CUDA compiler was found. Install CUDA 11.8-12.9 "
      "(Debian: nvidia-cuda-toolkit from non-free) and pass -DCMAKE_CUDA_COMPILER=/path/to/nvcc.")
  endif()
  message(STATUS "libm40: no CUDA compiler found; building the CPU reference only")
  return()
endif()

# The compiler's version, read before enable_language() so the default
# architectures can depend on it.
execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --version OUTPUT_VARIABLE _m40_nvcc_out
                RESULT_VARIABLE _m40_nvcc_rc ERROR_QUIET)
string(REGEX MATCH "release ([0-9]+)\\.([0-9]+)" _m40_rel "${_m40_nvcc_out}")
set(_m40_nvcc_major "${CMAKE_MATCH_1}")
set(_m40_nvcc_minor "${CMAKE_MATCH_2}")

set(_m40_explicit_archs OFF)
if(DEFINED CMAKE_CUDA_ARCHITECTURES OR DEFINED ENV{CUDAARCHS})
  set(_m40_explicit_archs ON)
endif()

if(NOT _m40_explicit_archs)
  if(_m40_nvcc_major AND _m40_nvcc_major GREATER_EQUAL 13)
    message(FATAL_ERROR
      "libm40: ${CMAKE_CUDA_COMPILER} is CUDA ${_m40_nvcc_major}.${_m40_nvcc_minor}, which cannot "
      "target Maxwell (sm_52): CUDA 13 removed sm_5x. An M40 build needs CUDA 11.8-12.9 "
      "(e.g. Debian's nvidia-cuda-toolkit 11.8: -DCMAKE_CUDA_COMPILER=/usr/bin/nvcc "
      "-DCMAKE_CUDA_HOST_COMPILER=g++-11). To build for the GPU you actually have with this "
      "toolkit, name its architecture, e.g. -DCMAKE_CUDA_ARCHITECTURES=90 for a Hopper test GPU. "
      "Or configure with -DM40_CUDA=OFF for the CPU reference only.")
  endif()
  set(CMAKE_CUDA_ARCHITECTURES 52 CACHE STRING "CUDA architectures (52 = Tesla M40)")
endif()

# CUDA 11.x rejects gcc >= 12 as its host compiler; pick g++-11 if the user
# did not choose one and it is installed.
if(NOT CMAKE_CUDA_HOST_COMPILER AND _m40_nvcc_major AND _m40_nvcc_major LESS 12)
  find_program(_m40_gxx11 NAMES g++-11 g++-10)
  if(_m40_gxx11)
    set(CMAKE_CUDA_HOST_COMPILER ${_m40_gxx11} CACHE FILEPATH "CUDA host compiler")
  endif()
endif()

enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
if(_m40_nvcc_major EQUAL 12)
  string(APPEND CMAKE_CUDA_FLAGS " -Wno-deprecated-gpu-targets")
endif()
# Debian's toolkit lives in /usr; help FindCUDAToolkit find it from nvcc.
if(NOT CUDAToolkit_ROOT)
  get_filename_component(_m40_nvcc_dir "${CMAKE_CUDA_COMPILER}" DIRECTORY)
  get_filename_component(CUDAToolkit_ROOT "${_m40_nvcc_dir}" DIRECTORY)
endif()
find_package(CUDAToolkit REQUIRED)
set(M40_HAVE_CUDA ON)
string(REPLACE ";" "," M40_CUDA_ARCHS_STRING "${CMAKE_CUDA_ARCHITECTURES}")

# cuDNN is optional: the alternative conv engine (lib/conv_engine/). 9.10 is
# the last release with Maxwell code, so a newer one is only used when the
# build does not target sm_5x. Hints: -DM40_CUDNN_ROOT=DIR or CUDNN_ROOT (a
# CMake or environment variable), DIR holding include/cudnn_version.h and
# lib/libcudnn.so* (PyPI's nvidia-cudnn-cu1x wheels: site-packages/nvidia/cudnn).
# NAMES_PER_DIR: a hinted directory's libcudnn.so.9 wins over a system
# libcudnn.so, so header and library come from the same cuDNN.
if(M40_CUDNN)
find_path(M40_CUDNN_INCLUDE_DIR cudnn_version.h
  HINTS ${M40_CUDNN_ROOT} ${CUDNN_ROOT} ENV CUDNN_ROOT ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include)
find_library(M40_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 libcudnn.so.8 NAMES_PER_DIR
  HINTS ${M40_CUDNN_ROOT} ${CUDNN_ROOT} ENV CUDNN_ROOT ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib lib64)
if(NOT M40_CUDNN_INCLUDE_DIR OR NOT M40_CUDNN_LIBRARY)
  message(STATUS "libm40: cuDNN: not built in (not found; -DM40_CUDNN_ROOT=DIR points at one)")
endif()
if(M40_CUDNN_INCLUDE_DIR AND M40_CUDNN_LIBRARY)
  file(STRINGS ${M40_CUDNN_INCLUDE_DIR}/cudnn_version.h _m40_cudnn_v REGEX "define CUDNN_(MAJOR|MINOR) ")
  string(REGEX MATCH "MAJOR ([0-9]+)" _ "${_m40_cudnn_v}")
  set(_m40_cudnn_major ${CMAKE_MATCH_1})
  string(REGEX MATCH "MINOR ([0-9]+)" _ "${_m40_cudnn_v}")
  set(_m40_cudnn_minor ${CMAKE_MATCH_1})
  set(M40_CUDNN_VERSION "${_m40_cudnn_major}.${_m40_cudnn_minor}")
  if("${CMAKE_CUDA_ARCHITECTURES}" MATCHES "(^|;)5[0-9]" AND M40_CUDNN_VERSION VERSION_GREATER 9.10)
    message(WARNING "libm40: found cuDNN ${M40_CUDNN_VERSION}, which has no Maxwell code; "
      "not using it for this sm_5x build (cuDNN <= 9.10 supports Maxwell, e.g. PyPI's "
      "nvidia-cudnn-cu11==9.10.2.21; point M40_CUDNN_ROOT at it)")
  else()
    set(M40_HAVE_CUDNN ON)
    message(STATUS "libm40: using cuDNN ${M40_CUDNN_VERSION} (${M40_CUDNN_LIBRARY})")
  endif()
endif()
else()
  message(STATUS "libm40: cuDNN: not built in (M40_CUDNN=OFF)")
endif()

# Some machines (ours among them) link a newer toolkit's headers into
# /usr/local/include, which the host compilers search before /usr/include:
# Debian's CUDA 11.8 then compiles against CUDA 13 headers and fails. Shadow
# them with an overlay of links to this toolkit's own headers, put first on
# the include path of the library's sources.
set(M40_CUDA_OVERLAY_DIR "")
foreach(_m40_inc ${CUDAToolkit_INCLUDE_DIRS})
  if(NOT _m40_inc STREQUAL "/usr/local/include" AND EXISTS /usr/local/include/cuda_runtime_api.h
     AND EXISTS ${_m40_inc}/cuda_runtime_api.h)
    file(STRINGS /usr/local/include/cuda_runtime_api.h _m40_a REGEX "define CUDART_VERSION")
    file(STRINGS ${_m40_inc}/cuda_runtime_api.h _m40_b REGEX "define CUDART_VERSION")
    if(NOT _m40_a STREQUAL _m40_b)
      set(M40_CUDA_OVERLAY_DIR ${PROJECT_BINARY_DIR}/cuda-include-overlay)
      file(REMOVE_RECURSE ${M40_CUDA_OVERLAY_DIR})
      file(MAKE_DIRECTORY ${M40_CUDA_OVERLAY_DIR})
      file(GLOB _m40_entries RELATIVE /usr/local/include /usr/local/include/*)
      foreach(_e ${_m40_entries})
        if(EXISTS ${_m40_inc}/${_e})
          file(CREATE_LINK ${_m40_inc}/${_e} ${M40_CUDA_OVERLAY_DIR}/${_e} SYMBOLIC)
        endif()
      endforeach()
      message(STATUS "libm40: /usr/local/include holds other CUDA headers (${_m40_a}); "
                     "using ${_m40_inc} through ${M40_CUDA_OVERLAY_DIR}")
    endif()
  endif()
endforeach()
