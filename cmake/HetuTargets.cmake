# Helpers shared by every hetu target: warning flags and include roots; embedded text files.
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

# hetu_embedded_text(VAR FILE): FILE's text in VAR, for a generated .cpp that returns it as the
# raw string R"HETU_TOML(...)HETU_TOML"; reconfigures when FILE changes and refuses a FILE that
# holds the delimiter.
function(hetu_embedded_text var file)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  file(READ ${file} text)
  if(text MATCHES "\\)HETU_TOML")
    message(FATAL_ERROR "${file} contains the raw-string delimiter )HETU_TOML")
  endif()
  set(${var} "${text}" PARENT_SCOPE)
endfunction()
