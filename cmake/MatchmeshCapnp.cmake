# matchmesh_capnp(<target> <schema.capnp>...): compiles Cap'n Proto schemas that live next to the
# module owning them, and adds the generated sources to <target>. Generated headers are included by
# their path from the repository root, e.g. "mesh/envelope.capnp.h".
set(MATCHMESH_GENERATED_DIR "${PROJECT_BINARY_DIR}/generated")
file(MAKE_DIRECTORY "${MATCHMESH_GENERATED_DIR}")

function(matchmesh_capnp target)
    set(CAPNPC_SRC_PREFIX "${PROJECT_SOURCE_DIR}")
    set(CAPNPC_OUTPUT_DIR "${MATCHMESH_GENERATED_DIR}")
    set(schemas "")
    foreach(schema ${ARGN})
        get_filename_component(absolute "${schema}" ABSOLUTE)
        list(APPEND schemas "${absolute}")
    endforeach()
    capnp_generate_cpp(generated_sources generated_headers ${schemas})
    target_sources(${target} PRIVATE ${generated_sources} ${generated_headers})
    target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${MATCHMESH_GENERATED_DIR}>")
    target_link_libraries(${target} PUBLIC CapnProto::capnp)
endfunction()
