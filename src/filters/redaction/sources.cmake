# Response redaction (issue 5): the redactor library, the compiled engine and its per-response
# stream, and the content helpers (media type, content coding, gzip/deflate codec).
list(APPEND AIRLOCK_FILTER_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/builtin.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checksums.cpp
  ${CMAKE_CURRENT_LIST_DIR}/head_fields.cpp
  ${CMAKE_CURRENT_LIST_DIR}/html_reference.cpp
  ${CMAKE_CURRENT_LIST_DIR}/redaction_filter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/content_coding.cpp
  ${CMAKE_CURRENT_LIST_DIR}/content_type.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/encoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/engine.cpp
  ${CMAKE_CURRENT_LIST_DIR}/escape_guard.cpp
  ${CMAKE_CURRENT_LIST_DIR}/escape_layer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/event_guard.cpp
  ${CMAKE_CURRENT_LIST_DIR}/event_text.cpp
  ${CMAKE_CURRENT_LIST_DIR}/field_escapes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/field_readings.cpp
  ${CMAKE_CURRENT_LIST_DIR}/grpc_payloads.cpp
  ${CMAKE_CURRENT_LIST_DIR}/retired_secrets.cpp
  ${CMAKE_CURRENT_LIST_DIR}/json_relax.cpp
  ${CMAKE_CURRENT_LIST_DIR}/prefilter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/secret_automaton.cpp
  ${CMAKE_CURRENT_LIST_DIR}/secret_spellings.cpp
  ${CMAKE_CURRENT_LIST_DIR}/stream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/stream_framing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/token_start.cpp
  ${CMAKE_CURRENT_LIST_DIR}/validators.cpp)
list(APPEND AIRLOCK_FILTER_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/response_body.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rule_engines.cpp)
