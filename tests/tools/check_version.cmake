# cmake -DPROGRAM=<path> -DEXPECTED=<line> -P check_version.cmake: runs `<program> --version` and
# fails unless it exits 0 having printed exactly that line.
execute_process(COMMAND "${PROGRAM}" --version
    RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} --version exited with ${result}: ${output}${errors}")
endif()
if(NOT output STREQUAL "${EXPECTED}\n")
    message(FATAL_ERROR "${PROGRAM} --version printed '${output}', expected '${EXPECTED}'")
endif()
