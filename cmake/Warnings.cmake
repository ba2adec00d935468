# Warning flags for the project's own targets: vramtrace_set_warnings(target)
function(vramtrace_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
                                           -Wno-missing-field-initializers)
  if(VRAMTRACE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
