# Uses ccache for C, C++ and CUDA when it is installed. Set CCACHE_BASEDIR to the
# repository root (scripts/test.sh does) so clones in other folders share hits.
find_program(HETU_CCACHE ccache)
if(HETU_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER ${HETU_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${HETU_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${HETU_CCACHE})
endif()
