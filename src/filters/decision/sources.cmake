# The policy decision (rules: host, port, method, path, upgrade, inspection) as the chain's
# first control after the placeholder guard.
list(APPEND AIRLOCK_FILTER_SOURCES ${CMAKE_CURRENT_LIST_DIR}/decision_filter.cpp)
