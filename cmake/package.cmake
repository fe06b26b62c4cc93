# The Debian packages (`cpack -G DEB` in the build folder; docs/python.md#debian-package):
#   trainledger_<version>_<arch>.deb          the program, its man page, shell completions,
#                                             docs, example plans and the presets' files
#   python3-trainledger_<version>_<arch>.deb  the Python module (when it is built), in
#                                             /usr/lib/python3/dist-packages
# The scripts/dev test command builds them with the package preset, unpacks them into a scratch
# root (dpkg -x) and runs the program and the module from there.
set(CPACK_PACKAGE_NAME "trainledger")
set(CPACK_PACKAGE_VENDOR "trainledger")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Planner for distributed LLM training: memory, step time, communication")
set(CPACK_PACKAGE_DESCRIPTION
    "Before a cluster is booked, trainledger answers whether a training run fits in GPU memory, "
    "where the peak is and why, how long a step takes and where the time goes, what each "
    "collective costs and how often to checkpoint. It reads plan files (TOML), config.json and "
    "DeepSpeed, Megatron, torchtitan and RL framework configs.")
set(CPACK_PACKAGE_CONTACT "trainledger maintainers <trainledger@localhost>")
set(CPACK_PACKAGE_INSTALL_DIRECTORY "trainledger")
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL program)
set(CPACK_DEBIAN_PROGRAM_PACKAGE_NAME "trainledger")
set(CPACK_DEBIAN_PROGRAM_FILE_NAME "DEB-DEFAULT")
if(trainledger_python_build)
  # The python_deb component (cmake/python.cmake): the module in /usr/lib/python3/dist-packages.
  list(APPEND CPACK_COMPONENTS_ALL python_deb)
  set(CPACK_DEBIAN_PYTHON_DEB_PACKAGE_NAME "python3-trainledger")
  set(CPACK_DEBIAN_PYTHON_DEB_FILE_NAME "DEB-DEFAULT")
  set(CPACK_DEBIAN_PYTHON_DEB_PACKAGE_SECTION "python")
  # The extension is built for one minor version of Python (its ABI tag names it).
  math(EXPR trainledger_python_next "${Python3_VERSION_MINOR} + 1")
  set(CPACK_DEBIAN_PYTHON_DEB_PACKAGE_DEPENDS
      "python3 (>= ${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}~), python3 (<< ${Python3_VERSION_MAJOR}.${trainledger_python_next})")
  set(CPACK_COMPONENT_PYTHON_DEB_DESCRIPTION "trainledger's Python module (import trainledger)")
endif()
set(CPACK_COMPONENT_PROGRAM_DESCRIPTION "the trainledger program")
# The shared libraries' packages from dpkg-shlibdeps (dpkg-dev), when it is there.
find_program(TRAINLEDGER_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(TRAINLEDGER_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
include(CPack)
