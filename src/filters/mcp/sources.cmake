# MCP / JSON-RPC tool calls as policy (issue 22): the JSON-RPC reader, the per-message decision
# and the filter.
list(APPEND AIRLOCK_FILTER_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/jsonrpc.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decide.cpp
  ${CMAKE_CURRENT_LIST_DIR}/explain.cpp
  ${CMAKE_CURRENT_LIST_DIR}/answer_id.cpp
  ${CMAKE_CURRENT_LIST_DIR}/media_type.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sse.cpp
  ${CMAKE_CURRENT_LIST_DIR}/listing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mcp_filter.cpp)
