# Held requests: the approvals registry (one per proxy) and the filter that holds a request
# for an operator's decision (issue 20).
list(APPEND AIRLOCK_FILTER_SOURCES
     ${CMAKE_CURRENT_LIST_DIR}/access_filter.cpp
     ${CMAKE_CURRENT_LIST_DIR}/admin_api.cpp
     ${CMAKE_CURRENT_LIST_DIR}/approval_filter.cpp
     ${CMAKE_CURRENT_LIST_DIR}/fleet.cpp
     ${CMAKE_CURRENT_LIST_DIR}/fleet_message.cpp
     ${CMAKE_CURRENT_LIST_DIR}/fleet_store.cpp
     ${CMAKE_CURRENT_LIST_DIR}/overlay.cpp
     ${CMAKE_CURRENT_LIST_DIR}/overlay_text.cpp
     ${CMAKE_CURRENT_LIST_DIR}/registry.cpp
     ${CMAKE_CURRENT_LIST_DIR}/registry_grants.cpp
     ${CMAKE_CURRENT_LIST_DIR}/registry_json.cpp
     ${CMAKE_CURRENT_LIST_DIR}/registry_stop.cpp)
