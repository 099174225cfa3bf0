list(APPEND AIRLOCK_FILTER_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/headers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/json_body.cpp
  ${CMAKE_CURRENT_LIST_DIR}/query.cpp
  ${CMAKE_CURRENT_LIST_DIR}/text.cpp
  ${CMAKE_CURRENT_LIST_DIR}/validation_filter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/violation.cpp)
