# cmake -DINPUT=file -DOUTPUT=file.cpp -P EmbedText.cmake
# Writes a C++ source defining airlock::app::built_in_example_policy() with INPUT's bytes.
# Hex bytes, not a raw string literal, so that no content can end the literal early.
file(READ ${INPUT} content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${content}")
file(WRITE ${OUTPUT}
  "// Generated from ${INPUT} by cmake/EmbedText.cmake. Do not edit.\n"
  "#include <string_view>\n"
  "namespace airlock::app {\n"
  "namespace { constexpr char text[] = {${bytes} 0}; }\n"
  "std::string_view built_in_example_policy() { return {text, sizeof text - 1}; }\n"
  "}  // namespace airlock::app\n")
