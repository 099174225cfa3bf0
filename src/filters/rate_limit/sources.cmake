# The rate_limit family: buckets (GCRA), concurrency gates, circuit breakers, and the per-process
# registry that binds them to each policy snapshot.
list(APPEND AIRLOCK_FILTER_SOURCES
     ${CMAKE_CURRENT_LIST_DIR}/agent_gate.cpp
     ${CMAKE_CURRENT_LIST_DIR}/breaker.cpp
     ${CMAKE_CURRENT_LIST_DIR}/concurrency_gate.cpp
     ${CMAKE_CURRENT_LIST_DIR}/control_outbox.cpp
     ${CMAKE_CURRENT_LIST_DIR}/fleet_control.cpp
     ${CMAKE_CURRENT_LIST_DIR}/gcra.cpp
     ${CMAKE_CURRENT_LIST_DIR}/lease_wait.cpp
     ${CMAKE_CURRENT_LIST_DIR}/plan.cpp
     ${CMAKE_CURRENT_LIST_DIR}/rate_limit_filter.cpp
     ${CMAKE_CURRENT_LIST_DIR}/rate_limits.cpp
     ${CMAKE_CURRENT_LIST_DIR}/registry.cpp
     ${CMAKE_CURRENT_LIST_DIR}/shared_store.cpp
     ${CMAKE_CURRENT_LIST_DIR}/tool_limits.cpp)
