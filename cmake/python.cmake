# The Python module (docs/python.md): the package trainledger (python/trainledger) around the
# extension trainledger._core (python/module.cpp), which runs the program's commands in-process.
#
# In the build tree the package is assembled in ${CMAKE_BINARY_DIR}/python: PYTHONPATH set to
# it imports the module built here. `cmake --install` (component python) puts the package in
# TRAINLEDGER_PYTHON_INSTALL_DIR: by default the site-packages of the interpreter found
# (Python3_EXECUTABLE), so that `python3 -c "import trainledger"` finds it; a relative
# directory is under the install prefix (the Debian package: lib/python3/dist-packages).
execute_process(
  COMMAND "${Python3_EXECUTABLE}" -c "import sysconfig; print(sysconfig.get_paths()['platlib'])"
  OUTPUT_VARIABLE trainledger_python_platlib OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE trainledger_python_platlib_status)
if(NOT trainledger_python_platlib_status EQUAL 0 OR trainledger_python_platlib STREQUAL "")
  set(trainledger_python_platlib "lib/python3/dist-packages")
endif()
set(TRAINLEDGER_PYTHON_INSTALL_DIR "${trainledger_python_platlib}" CACHE STRING
    "Where cmake --install puts the trainledger package (relative: under the prefix)")

pybind11_add_module(trainledger_python MODULE python/module.cpp python/arguments.cpp
                    python/errors.cpp)
set_target_properties(trainledger_python PROPERTIES
  OUTPUT_NAME _core
  LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/python/trainledger")
target_include_directories(trainledger_python PRIVATE src/cli)
target_link_libraries(trainledger_python PRIVATE trainledger_cli trainledger_options
                      tomlplusplus::tomlplusplus)

set(trainledger_python_files __init__.py __init__.pyi py.typed)
foreach(f IN LISTS trainledger_python_files)
  configure_file("python/trainledger/${f}" "${CMAKE_BINARY_DIR}/python/trainledger/${f}" COPYONLY)
endforeach()

install(TARGETS trainledger_python
        LIBRARY DESTINATION "${TRAINLEDGER_PYTHON_INSTALL_DIR}/trainledger" COMPONENT python)
list(TRANSFORM trainledger_python_files PREPEND "python/trainledger/")
install(FILES ${trainledger_python_files}
        DESTINATION "${TRAINLEDGER_PYTHON_INSTALL_DIR}/trainledger" COMPONENT python)
# The Debian package's copy (cmake/package.cmake), whatever the interpreter's own folder:
# Debian's folder for Python 3 modules under the package's prefix. Installed only when asked
# for by name (cpack does), never by a plain cmake --install.
install(TARGETS trainledger_python
        LIBRARY DESTINATION lib/python3/dist-packages/trainledger
        COMPONENT python_deb EXCLUDE_FROM_ALL)
install(FILES ${trainledger_python_files} DESTINATION lib/python3/dist-packages/trainledger
        COMPONENT python_deb EXCLUDE_FROM_ALL)
message(STATUS "trainledger: the Python module for ${Python3_EXECUTABLE} "
               "(${Python3_VERSION}), installed to ${TRAINLEDGER_PYTHON_INSTALL_DIR}")
