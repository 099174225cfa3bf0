# Credential injection (issue 5): the secrets a rule adds to requests, and the placeholders an
# agent may carry instead of a secret.
list(APPEND AIRLOCK_FILTER_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/credential_filters.cpp
  ${CMAKE_CURRENT_LIST_DIR}/injection.cpp
  ${CMAKE_CURRENT_LIST_DIR}/placeholder_scanner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/placement.cpp
  ${CMAKE_CURRENT_LIST_DIR}/placeholders.cpp
  ${CMAKE_CURRENT_LIST_DIR}/query_params.cpp)
