# Compiler flags shared by every matchmesh target: warnings, sanitizers.
add_library(matchmesh_build_flags INTERFACE)
add_library(matchmesh::build_flags ALIAS matchmesh_build_flags)
target_compile_options(matchmesh_build_flags INTERFACE -Wall -Wextra -Wpedantic)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # GCC 12 reports a false -Wrestrict inside std::string for `"literal" + std::string` at -O2
    # (GCC bug 105329, fixed in GCC 13).
    # It also flags Asio's coroutine frames (operator new/delete of awaitable_frame_base) as
    # mismatched allocations when optimizing with sanitizers: a false positive of GCC 12.
    target_compile_options(matchmesh_build_flags INTERFACE -Wno-restrict -Wno-mismatched-new-delete)
endif()
if(MATCHMESH_WERROR)
    target_compile_options(matchmesh_build_flags INTERFACE -Werror)
endif()
if(MATCHMESH_SANITIZE)
    set(matchmesh_sanitizer_flags -fsanitize=address,undefined -fno-omit-frame-pointer
        -fno-sanitize-recover=undefined)
    target_compile_options(matchmesh_build_flags INTERFACE ${matchmesh_sanitizer_flags})
    target_link_options(matchmesh_build_flags INTERFACE ${matchmesh_sanitizer_flags})
endif()
