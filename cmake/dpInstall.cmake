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
