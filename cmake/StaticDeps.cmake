# Links Debian's static archives of the C and C++ libraries airlock uses (OpenSSL, zlib,
# nghttp2, hiredis, libseccomp, re2, yaml-cpp) instead of their shared objects.
#
# Why: every `airlock run` and every proxy start loads the binary anew. With the shared
# objects the dynamic loader spends about 2 ms on each start binding symbols and relocating
# libcrypto (4.6 MB, BIND_NOW) and the others: `airlock --version` took 4.4 ms against 2.7 ms
# linked this way, `airlock run -- true` 12.4 against 10.1 ms (issue 18: start-up within 2×
# bubblewrap). Calls into OpenSSL on the hot path also stop going through the PLT.
#
# The price: a Debian security update of one of these libraries reaches airlock when airlock
# is built again (`scripts/build.sh`), not by `apt upgrade` alone, as with any statically linked
# TLS stack (Envoy, Go programs). `airlock --version` names the OpenSSL it carries.
# -DAIRLOCK_STATIC_DEPS=OFF links the shared objects. libstdc++, libgcc_s and prometheus-cpp
# (Debian has no static archive of it) stay shared either way: a second copy of libstdc++
# beside a shared C++ library that uses it is not safe.
#
# Include before the find_package calls (airlock_static_deps_prepare) and call
# airlock_static_deps_apply after them.

option(AIRLOCK_STATIC_DEPS "Link the static archives of OpenSSL, zlib, nghttp2, hiredis, libseccomp, re2 and yaml-cpp" ON)

macro(airlock_static_deps_prepare)
  # FindOpenSSL and FindZLIB cache the files they found: forget them when the choice changed
  # (or in a build tree configured before this option existed), so that they look again.
  if(NOT "${AIRLOCK_STATIC_DEPS}" STREQUAL "${airlock_static_deps_found_for}")
    foreach(var OPENSSL_CRYPTO_LIBRARY OPENSSL_SSL_LIBRARY ZLIB_LIBRARY ZLIB_LIBRARY_RELEASE
                ZLIB_LIBRARY_DEBUG)
      unset(${var} CACHE)
    endforeach()
    set(airlock_static_deps_found_for "${AIRLOCK_STATIC_DEPS}" CACHE INTERNAL "")
  endif()
  if(AIRLOCK_STATIC_DEPS)
    # FindOpenSSL and FindZLIB pick the .a and add what the archives need (libdl, threads).
    set(OPENSSL_USE_STATIC_LIBS TRUE)
    set(ZLIB_USE_STATIC_LIBS ON)
  endif()
endmacro()

# Points the imported target TARGET at lib<NAME>.a (found in DIRS or the usual places), with
# EXTRA appended to what links after it.
function(airlock_use_static_archive target name)
  cmake_parse_arguments(arg "" "" "DIRS;EXTRA" ${ARGN})
  find_library(airlock_static_${name} NAMES lib${name}.a HINTS ${arg_DIRS} NO_CACHE)
  if(NOT airlock_static_${name})
    message(FATAL_ERROR "AIRLOCK_STATIC_DEPS: lib${name}.a not found (Debian: its -dev package "
                        "ships it); configure with -DAIRLOCK_STATIC_DEPS=OFF to link the shared object")
  endif()
  get_target_property(kind ${target} TYPE)
  if(kind STREQUAL "INTERFACE_LIBRARY")
    # pkg-config's imported targets name the library files in their link interface.
    set_property(TARGET ${target} PROPERTY INTERFACE_LINK_LIBRARIES
                 ${airlock_static_${name}} ${arg_EXTRA})
  else()
    # A package's exported target (yaml-cpp): one location for every configuration.
    get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
    foreach(config IN LISTS configs ITEMS "")
      if(config)
        set(suffix _${config})
      else()
        set(suffix "")
      endif()
      set_target_properties(${target} PROPERTIES IMPORTED_LOCATION${suffix} ${airlock_static_${name}}
                                                 IMPORTED_SONAME${suffix} "")
    endforeach()
    set_property(TARGET ${target} APPEND PROPERTY INTERFACE_LINK_LIBRARIES ${arg_EXTRA})
  endif()
endfunction()

function(airlock_static_deps_apply)
  if(NOT AIRLOCK_STATIC_DEPS)
    return()
  endif()
  airlock_use_static_archive(PkgConfig::RE2 re2 DIRS ${RE2_LIBRARY_DIRS} EXTRA Threads::Threads)
  airlock_use_static_archive(PkgConfig::SECCOMP seccomp DIRS ${SECCOMP_LIBRARY_DIRS})
  airlock_use_static_archive(PkgConfig::HIREDIS hiredis DIRS ${HIREDIS_LIBRARY_DIRS})
  airlock_use_static_archive(PkgConfig::NGHTTP2 nghttp2 DIRS ${NGHTTP2_LIBRARY_DIRS})
  airlock_use_static_archive(yaml-cpp yaml-cpp)
  if(NOT OPENSSL_CRYPTO_LIBRARY MATCHES "\\.a$")
    message(FATAL_ERROR "AIRLOCK_STATIC_DEPS: FindOpenSSL found ${OPENSSL_CRYPTO_LIBRARY}, not "
                        "libcrypto.a (Debian's libssl-dev ships it)")
  endif()
endfunction()
