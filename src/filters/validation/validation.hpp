#pragma once
// Request parameter validation (the pipeline's step 5): a rule's compiled checks
// (policy::compiled_checks, built by policy::compile_checks) applied to one request. Each check
// is a pure function of the checks and the request part it reads, returns the first violation
// or nothing, and never echoes a request value. Thread safety: the compiled checks are
// immutable and shared; every call is independent.

#include "filters/validation/headers.hpp"
#include "filters/validation/json_body.hpp"
#include "filters/validation/query.hpp"
#include "filters/validation/violation.hpp"
