# Finds every required dependency (all Debian 12 packages; see scripts/setup.sh).
# Targets: tomlplusplus::tomlplusplus CLI11::CLI11 spdlog::spdlog fmt::fmt
#          hdf5::hdf5 hdf5::hdf5_cpp MPI::MPI_C BLAS::BLAS OpenMP::OpenMP_CXX hetu::cblas
#          PkgConfig::PCRE2
find_package(tomlplusplus 3 CONFIG REQUIRED)
find_package(CLI11 2 CONFIG REQUIRED)
find_package(spdlog 1.10 CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C CXX)
find_package(MPI REQUIRED COMPONENTS C)
find_package(OpenMP REQUIRED COMPONENTS CXX)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_path(HETU_CBLAS_INCLUDE_DIR cblas.h
          PATH_SUFFIXES x86_64-linux-gnu/openblas-pthread aarch64-linux-gnu/openblas-pthread openblas
          REQUIRED)
# Note [One thread pool]: OpenBLAS built on OpenMP shares libgomp's threads with our kernels.
# The pthread build keeps its own pool, and its threads and ours spin against each other
# between calls (measured: a tiny GPT-2 step ran 4x slower on 2 threads). Link the OpenMP
# build by path when installed (the build RPATH makes the loader pick it over the system
# alternative); fall back to whatever BLAS::BLAS is.
find_library(HETU_OPENBLAS_OPENMP NAMES openblas NO_DEFAULT_PATH
             PATHS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/aarch64-linux-gnu/openblas-openmp)
add_library(hetu_cblas INTERFACE)
add_library(hetu::cblas ALIAS hetu_cblas)
target_include_directories(hetu_cblas SYSTEM INTERFACE ${HETU_CBLAS_INCLUDE_DIR})
if(HETU_OPENBLAS_OPENMP)
  target_link_libraries(hetu_cblas INTERFACE ${HETU_OPENBLAS_OPENMP})
  message(STATUS "BLAS: OpenBLAS (OpenMP build) ${HETU_OPENBLAS_OPENMP}")
else()
  target_link_libraries(hetu_cblas INTERFACE BLAS::BLAS)
  message(WARNING "BLAS: OpenBLAS OpenMP build not found (apt-get install libopenblas-openmp-dev); "
                  "the pthread build competes with hetu's OpenMP threads")
endif()
if(HETU_BUILD_TESTS)
  find_package(Catch2 2 CONFIG REQUIRED)
  include(Catch)
endif()
# PCRE2 (Unicode-aware regex for GPT-2's pre-tokenisation pattern): pkg-config only in Debian.
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
# JSON (tokenizer vocabularies, safetensors headers, metrics): header-only nlohmann/json.
find_package(nlohmann_json 3 CONFIG REQUIRED)
