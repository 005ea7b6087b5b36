# The build's version, in one generated header that every program's --version and the node's
# matchmesh_build_info metric read: <matchmesh/version.hpp> (target matchmesh::version), from
# cmake/version.hpp.in. It holds the project's VERSION and the commit the build was configured
# from; outside a git checkout of this repository, or without git, the commit is "unknown".
# A new commit re-runs the configure step, so the header never names a commit the build is not.
set(MATCHMESH_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
    # Only this repository's own checkout counts, not one that happens to contain the sources.
    execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --show-toplevel
        WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
        RESULT_VARIABLE matchmesh_git_result
        OUTPUT_VARIABLE matchmesh_git_top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(matchmesh_git_result EQUAL 0)
        file(REAL_PATH "${matchmesh_git_top}" matchmesh_git_top)
        file(REAL_PATH "${PROJECT_SOURCE_DIR}" matchmesh_source_dir)
    endif()
    if(matchmesh_git_result EQUAL 0 AND matchmesh_git_top STREQUAL matchmesh_source_dir)
        execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --short=12 HEAD
            WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
            RESULT_VARIABLE matchmesh_git_result
            OUTPUT_VARIABLE matchmesh_git_commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
        if(matchmesh_git_result EQUAL 0 AND matchmesh_git_commit MATCHES "^[0-9a-f]+$")
            set(MATCHMESH_COMMIT "${matchmesh_git_commit}")
        endif()
        # HEAD, the branch it names and the packed refs: whichever moves on a commit.
        execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --symbolic-full-name HEAD
            WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
            OUTPUT_VARIABLE matchmesh_git_branch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
        foreach(ref HEAD ${matchmesh_git_branch} packed-refs)
            execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --git-path "${ref}"
                WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
                OUTPUT_VARIABLE matchmesh_git_file OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
            if(matchmesh_git_file)
                get_filename_component(matchmesh_git_file "${matchmesh_git_file}" ABSOLUTE
                    BASE_DIR "${PROJECT_SOURCE_DIR}")
                if(EXISTS "${matchmesh_git_file}")
                    set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY
                        CMAKE_CONFIGURE_DEPENDS "${matchmesh_git_file}")
                endif()
            endif()
        endforeach()
    endif()
endif()

set(MATCHMESH_VERSION_DIR "${PROJECT_BINARY_DIR}/version")
configure_file("${CMAKE_CURRENT_LIST_DIR}/version.hpp.in"
    "${MATCHMESH_VERSION_DIR}/matchmesh/version.hpp" @ONLY)
add_library(matchmesh_version INTERFACE)
add_library(matchmesh::version ALIAS matchmesh_version)
target_include_directories(matchmesh_version INTERFACE
    "$<BUILD_INTERFACE:${MATCHMESH_VERSION_DIR}>")
