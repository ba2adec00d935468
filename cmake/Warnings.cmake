# Warning flags for the project's own targets: vramtrace_set_warnings(target)
function(vramtrace_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
                                           -Wno-missing-field-initializers)
  # GCC 12 at -O3 (the release preset, the quick start's) warns -Wrestrict inside libstdc++'s
  # std::string concatenation: a known false positive of that compiler, gone in GCC 13.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
  endif()
  if(VRAMTRACE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
