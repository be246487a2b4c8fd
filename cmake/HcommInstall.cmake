# What `cmake --install` puts under the prefix, and the Debian package CPack makes of it:
#   include/hcomm/            the public headers (C++ and C) and the generated version.h
#   lib/libhcomm.so.*, .a     the libraries
#   lib/cmake/hcomm/          find_package(hcomm CONFIG): hcomm::hcomm (shared) and
#                             hcomm::hcomm_static (static; its dependencies found too)
#   lib/pkgconfig/hcomm.pc    pkg-config hcomm (the shared library)
#   bin/                      hcomm-run, hcomm-bench, hcomm-info, hcomm-chaos
#   share/doc/hcomm/examples  the C examples
# (lib is CMAKE_INSTALL_LIBDIR: lib/x86_64-linux-gnu under /usr on Debian.)
include(CMakePackageConfigHelpers)

set(HCOMM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hcomm)
set_target_properties(hcomm_shared PROPERTIES EXPORT_NAME hcomm)
set_target_properties(hcomm PROPERTIES EXPORT_NAME hcomm_static)

install(TARGETS hcomm_shared EXPORT hcommTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT runtime)
install(TARGETS hcomm EXPORT hcommStaticTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
install(TARGETS hcomm-run hcomm-bench hcomm-info hcomm-chaos hcomm-perf-mon
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# The seeds' name of hcomm-perf-mon.
install(CODE "execute_process(COMMAND \${CMAKE_COMMAND} -E create_symlink hcomm-perf-mon
  \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/hcomm_perf_mon)" COMPONENT runtime)
# hcomm-visualize and hcomm-diagnose (Python, standard library only) and what they share.
install(PROGRAMS tools/trace/hcomm-visualize tools/trace/hcomm-diagnose
  DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(FILES tools/trace/hcomm_traces.py tools/trace/report_template.html
  DESTINATION ${CMAKE_INSTALL_DATADIR}/hcomm/tools COMPONENT runtime)
install(DIRECTORY include/hcomm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT runtime)
install(FILES ${PROJECT_BINARY_DIR}/include/hcomm/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hcomm COMPONENT runtime)
install(DIRECTORY examples/c DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT runtime)

install(EXPORT hcommTargets NAMESPACE hcomm:: DESTINATION ${HCOMM_CMAKE_DIR} COMPONENT runtime)
install(EXPORT hcommStaticTargets NAMESPACE hcomm:: DESTINATION ${HCOMM_CMAKE_DIR}
  COMPONENT runtime)
configure_package_config_file(cmake/templates/hcommConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hcommConfig.cmake INSTALL_DESTINATION ${HCOMM_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hcommConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hcommConfig.cmake ${PROJECT_BINARY_DIR}/hcommConfigVersion.cmake
  cmake/FindCAF.cmake cmake/FindRdmaCore.cmake
  DESTINATION ${HCOMM_CMAKE_DIR} COMPONENT runtime)

# pkg-config: the prefix is found from the .pc file's own place, so an installed tree may move.
file(RELATIVE_PATH HCOMM_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" HCOMM_PC_TO_PREFIX "${HCOMM_PC_TO_PREFIX}")
configure_file(cmake/templates/hcomm.pc.in ${PROJECT_BINARY_DIR}/hcomm.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hcomm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT runtime)

# cpack -G DEB (run in the build folder): hcomm_<version>_amd64.deb, its dependencies Debian's
# runtime packages as dpkg-shlibdeps finds them (dpkg-dev).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hcomm)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "hcomm")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "communication runtime for distributed training and inference (RDMA, TCP, shared memory)")
set(CPACK_PACKAGE_DESCRIPTION
    "hcomm runs collectives and point-to-point operations between the ranks of a job over RDMA \
(RoCEv2), TCP and shared memory, and survives link faults. The package has the shared and static \
libraries, the C and C++ headers, the CMake and pkg-config files, and the tools hcomm-run, \
hcomm-bench, hcomm-info and hcomm-chaos.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "hcomm maintainers <maintainers@hcomm.invalid>")
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nftables, iproute2, libcaf-dev, libibverbs-dev, libhwloc-dev, libzstd-dev, libssl-dev")
set(CPACK_DEB_COMPONENT_INSTALL OFF)
include(CPack)
