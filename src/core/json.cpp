// Boost.JSON is used header-only: its out-of-line definitions are compiled by including
// <boost/json/src.hpp> in exactly one translation unit of the program, and this is that one.
// A second copy would be a duplicate-symbol link error; none would be an undefined-symbol
// error. Everything else includes <boost/json.hpp> and links airlock::core (which every component
// does).
#include <boost/json/src.hpp>
