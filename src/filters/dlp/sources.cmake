# Outbound DLP (issue 16): decoders, the scanner, host-name checks and the filter. The BIP-39
# English word list comes from Debian's python3-mnemonic (scripts/install-deps.sh) and is
# compiled in, so the proxy reads no file at run time.
set(AIRLOCK_BIP39_WORDLIST /usr/lib/python3/dist-packages/mnemonic/wordlist/english.txt
    CACHE FILEPATH "BIP-39 English word list (2048 lines)")
if(NOT EXISTS ${AIRLOCK_BIP39_WORDLIST})
  message(FATAL_ERROR "BIP-39 word list not found at ${AIRLOCK_BIP39_WORDLIST}: "
                      "install python3-mnemonic (scripts/install-deps.sh)")
endif()
file(STRINGS ${AIRLOCK_BIP39_WORDLIST} bip39_words)
list(LENGTH bip39_words bip39_count)
if(NOT bip39_count EQUAL 2048)
  message(FATAL_ERROR "${AIRLOCK_BIP39_WORDLIST}: expected 2048 words, found ${bip39_count}")
endif()
list(JOIN bip39_words "\",\"" bip39_joined)
set(bip39_cpp ${CMAKE_CURRENT_BINARY_DIR}/bip39_words.cpp)
file(WRITE ${bip39_cpp}.tmp
     "// Generated from ${AIRLOCK_BIP39_WORDLIST} by src/filters/dlp/sources.cmake.\n"
     "#include \"filters/dlp/seed_phrase.hpp\"\n"
     "namespace airlock::filters::dlp {\n"
     "const std::array<std::string_view, 2048> bip39_english = {\"${bip39_joined}\"};\n"
     "}  // namespace airlock::filters::dlp\n")
configure_file(${bip39_cpp}.tmp ${bip39_cpp} COPYONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${AIRLOCK_BIP39_WORDLIST})
list(APPEND AIRLOCK_FILTER_SOURCES
  ${bip39_cpp}
  ${CMAKE_CURRENT_LIST_DIR}/coded_body.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/escapes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/grpc_response_scan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/seed_phrase.cpp
  ${CMAKE_CURRENT_LIST_DIR}/scanner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/token_runs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/injection.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dlp_filter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dlp_plan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/head_places.cpp
  ${CMAKE_CURRENT_LIST_DIR}/protobuf_view.cpp
  ${CMAKE_CURRENT_LIST_DIR}/record_scrub.cpp
  ${CMAKE_CURRENT_LIST_DIR}/response_reading.cpp
  ${CMAKE_CURRENT_LIST_DIR}/response_scan.cpp)
