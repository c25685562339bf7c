# Helpers shared by every hetu target: warning flags and include roots.
# hetu_target_defaults(t): -Wall -Wextra (and -Werror with HETU_WERROR) on C++ sources,
# repository root on the include path so includes read "lib/util/error.h".
function(hetu_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${HETU_WERROR}>>:-Werror>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${HETU_WERROR}>>:-Werror=all-warnings>)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/generated)
  target_compile_definitions(${target} PUBLIC OMPI_SKIP_MPICXX=1)
endfunction()
