# FindRdmaCore: rdma-core's libibverbs (Debian: libibverbs-dev).
# Defines the imported target RdmaCore::ibverbs.
find_path(RDMACORE_INCLUDE_DIR infiniband/verbs.h)
find_library(RDMACORE_IBVERBS_LIBRARY NAMES ibverbs)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(RdmaCore
  REQUIRED_VARS RDMACORE_INCLUDE_DIR RDMACORE_IBVERBS_LIBRARY)
if(RdmaCore_FOUND AND NOT TARGET RdmaCore::ibverbs)
  add_library(RdmaCore::ibverbs UNKNOWN IMPORTED)
  set_target_properties(RdmaCore::ibverbs PROPERTIES
    IMPORTED_LOCATION "${RDMACORE_IBVERBS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${RDMACORE_INCLUDE_DIR}")
endif()
mark_as_advanced(RDMACORE_INCLUDE_DIR RDMACORE_IBVERBS_LIBRARY)
