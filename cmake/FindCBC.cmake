# FindCBC: coinor-libcbc-dev has no CMake package. Defines CBC::cbc (the C
# interface, coin/Cbc_C_Interface.h, in libCbcSolver) when found; dp builds
# without it (place{algo=mip} then says it is unavailable).
find_path(CBC_INCLUDE_DIR coin/Cbc_C_Interface.h)
find_library(CBC_SOLVER_LIBRARY CbcSolver)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CBC DEFAULT_MSG CBC_SOLVER_LIBRARY
                                  CBC_INCLUDE_DIR)
if(CBC_FOUND AND NOT TARGET CBC::cbc)
  add_library(CBC::cbc UNKNOWN IMPORTED)
  set_target_properties(CBC::cbc PROPERTIES
    IMPORTED_LOCATION "${CBC_SOLVER_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CBC_INCLUDE_DIR}/coin")
endif()
mark_as_advanced(CBC_INCLUDE_DIR CBC_SOLVER_LIBRARY)
