# The embedding API as an installable CMake package: `cmake --install` puts the node library and
# every matchmesh library it needs, their headers (under include/matchmesh/, by the same paths as
# in the repository: "ticket/service.hpp", "mesh/network.hpp", the generated "*.capnp.h"), the
# umbrella header <matchmesh/matchmesh.hpp> and the package files in place, so that another
# project can write
#     find_package(matchmesh REQUIRED)
#     target_link_libraries(game PRIVATE matchmesh::node)
# Included by the top-level CMakeLists.txt after every module's targets exist.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The umbrella header lives in node/include/; in-tree users of matchmesh::node see it too.
target_include_directories(matchmesh_node PUBLIC
    "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/node/include>")

if(NOT MATCHMESH_INSTALL)
    return()
endif()

set(matchmesh_include_root "${CMAKE_INSTALL_INCLUDEDIR}/matchmesh")
set(matchmesh_package_dir "${CMAKE_INSTALL_LIBDIR}/cmake/matchmesh")

# In-tree names stay matchmesh_<module> (with matchmesh::<module> aliases); the exported ones are
# matchmesh::<module> as well.
set(matchmesh_exported_targets
    matchmesh_asio matchmesh_base matchmesh_mesh matchmesh_mesh_asio matchmesh_config
    matchmesh_matching matchmesh_ticket matchmesh_node_core matchmesh_node)
foreach(target ${matchmesh_exported_targets})
    string(REPLACE "matchmesh_" "" export_name "${target}")
    set_target_properties(${target} PROPERTIES EXPORT_NAME "${export_name}")
endforeach()

# Users of the installed headers need C++23 too (std::expected).
target_compile_features(matchmesh_base INTERFACE cxx_std_23)

# A sanitized build's libraries need the sanitizer runtimes wherever they are linked.
if(MATCHMESH_SANITIZE)
    target_link_options(matchmesh_base INTERFACE
        "$<INSTALL_INTERFACE:-fsanitize=address,undefined>")
endif()

install(TARGETS ${matchmesh_exported_targets}
    EXPORT matchmeshTargets
    ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    INCLUDES DESTINATION "${matchmesh_include_root}" "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS matchmesh matchmesh-cli RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
if(TARGET matchmesh-gateway)
    install(TARGETS matchmesh-gateway RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()

# Headers keep their repository paths below include/matchmesh/. The simulation, the examples and
# the tools are not part of the package.
foreach(module mesh config matching ticket node)
    install(DIRECTORY "${PROJECT_SOURCE_DIR}/${module}/"
        DESTINATION "${matchmesh_include_root}/${module}"
        FILES_MATCHING PATTERN "*.hpp"
        PATTERN "sim" EXCLUDE
        PATTERN "include" EXCLUDE
        PATTERN "examples" EXCLUDE
        PATTERN "clients" EXCLUDE
        PATTERN "bench" EXCLUDE
        PATTERN "tools" EXCLUDE)
endforeach()
install(DIRECTORY "${PROJECT_SOURCE_DIR}/node/include/matchmesh"
    DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
    FILES_MATCHING PATTERN "*.hpp")
# <matchmesh/version.hpp>: the version and commit the library was built from.
install(FILES "${MATCHMESH_VERSION_DIR}/matchmesh/version.hpp"
    DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/matchmesh")
# Headers generated from the modules' Cap'n Proto schemas (matching/wire.hpp includes one).
install(DIRECTORY "${MATCHMESH_GENERATED_DIR}/"
    DESTINATION "${matchmesh_include_root}"
    FILES_MATCHING PATTERN "*.capnp.h"
    PATTERN "tests" EXCLUDE)

install(EXPORT matchmeshTargets
    NAMESPACE matchmesh::
    DESTINATION "${matchmesh_package_dir}")
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/matchmeshConfig.cmake.in"
    "${PROJECT_BINARY_DIR}/matchmeshConfig.cmake"
    INSTALL_DESTINATION "${matchmesh_package_dir}")
# 0.x: a minor version may break the API.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/matchmeshConfigVersion.cmake"
    VERSION "${PROJECT_VERSION}"
    COMPATIBILITY SameMinorVersion)
install(FILES
    "${PROJECT_BINARY_DIR}/matchmeshConfig.cmake"
    "${PROJECT_BINARY_DIR}/matchmeshConfigVersion.cmake"
    DESTINATION "${matchmesh_package_dir}")
