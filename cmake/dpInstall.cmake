# Installing dp: the dp-opt driver and a CMake package, so that a user's
# project can say find_package(dp) and add placement steps to its build
# with dp_add_placement() (cmake/package/dpPlacement.cmake,
# docs/build-systems.md). Everything is in the install component "dp":
#
#   cmake --install build --component dp --prefix /opt/dp
include(CMakePackageConfigHelpers)

set(DP_INSTALL_CMAKEDIR lib/cmake/dp CACHE STRING
    "Where dp's CMake package is installed, relative to the prefix")

install(TARGETS dp-opt EXPORT dpTargets
        RUNTIME DESTINATION bin COMPONENT dp)
# The learned placers' plugin, where dp-opt looks for it: ../lib/dp from
# its bin/ (dp/Learn/Plugin.h).
install(TARGETS dpLearnPlugin
        LIBRARY DESTINATION lib/dp COMPONENT dp)
install(EXPORT dpTargets NAMESPACE dp::
        DESTINATION ${DP_INSTALL_CMAKEDIR} COMPONENT dp)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/package/dpConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/dpConfig.cmake
  INSTALL_DESTINATION ${DP_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/dpConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/dpConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/dpConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/package/dpPlacement.cmake
        DESTINATION ${DP_INSTALL_CMAKEDIR} COMPONENT dp)

# The PyTorch runtime (python/dp_torch, docs/runtime.md), where Debian's
# python3 finds packages under a prefix: PYTHONPATH=<prefix>/lib/python3/
# dist-packages, or nothing to add for the prefix /usr. In the build tree
# it is build/python/dp_torch, a link to the sources.
set(DP_INSTALL_PYTHONDIR lib/python3/dist-packages CACHE STRING
    "Where the dp_torch package is installed, relative to the prefix")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/dp_torch
        DESTINATION ${DP_INSTALL_PYTHONDIR} COMPONENT dp
        PATTERN __pycache__ EXCLUDE)
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/python)
file(CREATE_LINK ${PROJECT_SOURCE_DIR}/python/dp_torch
     ${PROJECT_BINARY_DIR}/python/dp_torch SYMBOLIC)
