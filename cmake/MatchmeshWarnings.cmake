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
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_UNITY_BUILD)
    # In a batch, GCC takes every file but the batch's own as a header and warns of a type from an
    # anonymous namespace used in another type of the same file, which is correct in a .cpp file.
    target_compile_options(matchmesh_build_flags INTERFACE -Wno-subobject-linkage)
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

# The files that parse a program's command line with CLI11 (header-only) spend most of their
# sanitizer build compiling it: about 40 s each at -O1 with UBSan, 15 s unoptimized. The
# sanitizer build compiles them unoptimized (the sanitizers check such code as well); they hold
# a program's options and reports, not the code it runs. Call from the directory of the target.
function(matchmesh_command_line_sources)
    if(MATCHMESH_SANITIZE)
        set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS -O0)
    endif()
endfunction()

if(MATCHMESH_FUZZ)
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR CMAKE_CXX_COMPILER_VERSION VERSION_LESS 16)
        message(FATAL_ERROR "MATCHMESH_FUZZ needs Clang 16 or newer; scripts/fuzz.sh sets it up")
    endif()
    # libFuzzer's coverage everywhere, with ASan and UBSan; the targets link libFuzzer's main.
    target_compile_options(matchmesh_build_flags INTERFACE
        -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
        -fno-sanitize-recover=undefined)
    target_link_options(matchmesh_build_flags INTERFACE -fsanitize=address,undefined)
    # Clang 16 with GCC 12's standard library and Debian's Cap'n Proto: <expected> wants a
    # concepts level Clang 16 implements but does not announce, and two comparisons in
    # capnp/blob.h are ambiguous under C++20's reversed operators in Clang. A copy of the Cap'n
    # Proto headers with those two lines turned around comes first on the include path.
    target_compile_options(matchmesh_build_flags INTERFACE
        -D__cpp_concepts=202002L -Wno-macro-redefined)
    find_path(matchmesh_capnp_include capnp/blob.h REQUIRED)
    set(matchmesh_fixed_include "${PROJECT_BINARY_DIR}/fuzz-include")
    file(REMOVE_RECURSE "${matchmesh_fixed_include}")
    file(COPY "${matchmesh_capnp_include}/capnp" DESTINATION "${matchmesh_fixed_include}")
    file(READ "${matchmesh_fixed_include}/capnp/blob.h" blob)
    string(REPLACE "return a == b.asString();" "return b.asString() == a;" blob "${blob}")
    string(REPLACE "return a != b.asString();" "return b.asString() != a;" blob "${blob}")
    file(WRITE "${matchmesh_fixed_include}/capnp/blob.h" "${blob}")
    target_compile_options(matchmesh_build_flags INTERFACE -isystem "${matchmesh_fixed_include}")
endif()
