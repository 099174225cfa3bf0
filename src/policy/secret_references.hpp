#pragma once
// Private to the policy component: how a rule's text refers to the policy's secrets
// (${secrets.NAME}) and how a message names such text without ever echoing a secret's value or
// placeholder (one may have been pasted into any key or template by mistake).

#include "policy/credentials.hpp"
#include "policy/error_sink.hpp"
#include "policy/secrets.hpp"

#include <span>
#include <string>
#include <string_view>

namespace airlock::policy {

// The shape of a secret name (secrets_compiler.cpp): only a name of that shape is quoted back in
// a message, so a value pasted where a name belongs is never echoed.
bool secret_name_shape(std::string_view s);

// The index of the secret named `name`, or secret_template::no_secret.
std::size_t find_secret(std::span<const compiled_secret> secrets, std::string_view name);

// The index of the secret whose value (or placeholder) `text` holds, or
// secret_template::no_secret. Such text is never quoted in a message.
std::size_t holds_secret(std::string_view text, std::span<const compiled_secret> secrets);

// "'name'", or a note that it is not shown when it holds a secret's value or placeholder.
std::string quoted_unless_secret(std::string_view name, std::span<const compiled_secret> secrets);

// The message for a reference to a secret that is not declared; the name is quoted only when it
// has a secret name's shape and holds no secret.
std::string unknown_secret(std::string_view name, std::span<const compiled_secret> secrets);

// Splits a template ("Bearer ${secrets.github}") into parts. `error` is set (never quoting the
// template) when it has a reference other than ${secrets.NAME}, an unterminated "${", or a
// NAME that is not one of `secrets` ("unknown secret 'NAME'").
secret_template parse_secret_template(std::string_view text,
                                      std::span<const compiled_secret> secrets, std::string& error);

// Every error and warning in `errors` with the secrets' values and placeholders replaced by
// "(the value of secret NAME)": the backstop for a secret pasted anywhere (error_sink::hide).
void hide_secrets(error_sink& errors, std::span<const compiled_secret> secrets);

}  // namespace airlock::policy
