# FindScotch: libscotch-dev has no CMake package; its header is under
# scotch/. Defines Scotch::scotch (libscotch + libscotcherr).
find_path(SCOTCH_INCLUDE_DIR scotch.h PATH_SUFFIXES scotch)
find_library(SCOTCH_LIBRARY scotch)
find_library(SCOTCHERR_LIBRARY scotcherr)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Scotch DEFAULT_MSG SCOTCH_LIBRARY
                                  SCOTCHERR_LIBRARY SCOTCH_INCLUDE_DIR)
if(Scotch_FOUND AND NOT TARGET Scotch::scotch)
  add_library(Scotch::scotch UNKNOWN IMPORTED)
  set_target_properties(Scotch::scotch PROPERTIES
    IMPORTED_LOCATION "${SCOTCH_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SCOTCH_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${SCOTCHERR_LIBRARY};m;pthread")
endif()
mark_as_advanced(SCOTCH_INCLUDE_DIR SCOTCH_LIBRARY SCOTCHERR_LIBRARY)
