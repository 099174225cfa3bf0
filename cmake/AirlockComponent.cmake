# airlock_add_component(NAME SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
#
# One folder under src/ is one static library `airlock_<NAME>` with the alias `airlock::<NAME>`.
# Spelling out PUBLIC_DEPS / PRIVATE_DEPS keeps the dependency direction visible
# (core <- net <- policy <- proxy <- app; tls and telemetry need only core).
function(airlock_add_component name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(airlock_${name} STATIC ${ARG_SOURCES})
  add_library(airlock::${name} ALIAS airlock_${name})
  target_include_directories(airlock_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(airlock_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()

# airlock_add_unit_test(NAME SOURCES ... DEPS ...): one gtest executable per component,
# registered with ctest under the `unit` label.
function(airlock_add_unit_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)
endfunction()
