#pragma once
// The validators behind the built-in redactors (builtin.cpp), exposed for the tests. Each one
// turns a pattern's candidates into few false positives: boundaries, checksums, shapes.

#include "filters/redaction/redactor.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace airlock::filters::redaction::validators {

// The Luhn (mod 10) checksum of a string of ASCII digits (ISO/IEC 7812-1 annex B).
bool luhn_ok(std::string_view digits) noexcept;
// Whether a card number (digits only) has the length one of the major schemes issues for its
// prefix: Visa, Mastercard, American Express, Discover, UnionPay, Diners, JCB, Mir, Maestro.
bool card_scheme_ok(std::string_view digits) noexcept;

// True where a token may start right after byte position `begin` of `text`: at the start of
// the text, after a byte that is not a token byte, or after a JSON escape such as `\n` or
// `\u0022` (so that "line\nghp_..." inside a JSON string is still seen).
bool token_starts_at(const candidate& c, bool (*is_token_byte)(int)) noexcept;
bool token_ends_at(const candidate& c, bool (*is_token_byte)(int)) noexcept;

// Candidate not glued to other letters or digits on either side.
verdict alnum_bounded(const candidate& c);
// As alnum_bounded, and a trailing '.' or '-' (end of a sentence) is left out of the span.
verdict alnum_bounded_trim(const candidate& c);
// gcp-api-key: bounded by bytes outside [A-Za-z0-9_-].
verdict gcp_api_key(const candidate& c);
// aws-secret-key: the 40-byte value is not part of a longer base64 run and mixes character
// classes like a random key does.
verdict aws_secret_key(const candidate& c);
// jwt: bounded on the left, and the header segment decodes to a JOSE header with "alg"
// (RFC 7515 section 4.1.1: the header must carry "alg").
verdict jwt(const candidate& c);
// email: skips a JSON escape glued to the local part ("\nbob@x.io" is "bob@x.io"), and leaves
// file names such as "logo@2x.png" alone.
verdict email(const candidate& c);
// payment-card: finds, inside a run of 13..19+ digits with optional single ' ' or '-'
// separators, the leftmost then longest part that starts and ends on a group boundary, has
// consistent separators and 4-digit first group, a scheme prefix and length, and a valid Luhn
// checksum. Digit runs glued to letters, digits, '.', '+', '_' or '-' are left alone.
verdict payment_card(const candidate& c);
// phone: see builtin.hpp for exactly what is caught.
verdict phone(const candidate& c);

// checksums.cpp: the checksummed identifiers.
// The payload of a Base58Check string (version byte first, checksum removed), or nullopt when
// it is not Base58 or its checksum (first 4 bytes of SHA-256(SHA-256(payload))) is wrong.
std::optional<std::vector<std::uint8_t>> base58check_payload(std::string_view s);
// ISO 13616 IBAN (spaces allowed) with a valid mod 97-10 check (ISO 7064).
bool iban_ok(std::string_view text) noexcept;
// A BIP-173 Bech32 or BIP-350 Bech32m string (lower case) with a valid checksum.
bool bech32_ok(std::string_view s) noexcept;
verdict iban(const candidate& c);
// bitcoin-address: Base58Check P2PKH/P2SH (20-byte hash) or a Bech32/Bech32m segwit address.
verdict bitcoin_address(const candidate& c);
// wif-key: a Base58Check private key in Wallet Import Format (version 0x80 or 0xef).
verdict wif_key(const candidate& c);

}  // namespace airlock::filters::redaction::validators
