# FindRdmaCore: rdma-core's libibverbs and librdmacm (Debian: libibverbs-dev, librdmacm-dev).
# Defines the imported targets RdmaCore::ibverbs and RdmaCore::rdmacm.
find_path(RDMACORE_INCLUDE_DIR infiniband/verbs.h)
find_path(RDMACORE_CM_INCLUDE_DIR rdma/rdma_cma.h)
find_library(RDMACORE_IBVERBS_LIBRARY NAMES ibverbs)
find_library(RDMACORE_RDMACM_LIBRARY NAMES rdmacm)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(RdmaCore
  REQUIRED_VARS RDMACORE_INCLUDE_DIR RDMACORE_CM_INCLUDE_DIR RDMACORE_IBVERBS_LIBRARY
                RDMACORE_RDMACM_LIBRARY)
if(RdmaCore_FOUND AND NOT TARGET RdmaCore::ibverbs)
  add_library(RdmaCore::ibverbs UNKNOWN IMPORTED)
  set_target_properties(RdmaCore::ibverbs PROPERTIES
    IMPORTED_LOCATION "${RDMACORE_IBVERBS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${RDMACORE_INCLUDE_DIR}")
  add_library(RdmaCore::rdmacm UNKNOWN IMPORTED)
  set_target_properties(RdmaCore::rdmacm PROPERTIES
    IMPORTED_LOCATION "${RDMACORE_RDMACM_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${RDMACORE_CM_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES RdmaCore::ibverbs)
endif()
mark_as_advanced(RDMACORE_INCLUDE_DIR RDMACORE_CM_INCLUDE_DIR RDMACORE_IBVERBS_LIBRARY
                 RDMACORE_RDMACM_LIBRARY)
