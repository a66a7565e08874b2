// Package pii finds personal data and secrets in text and replaces them with
// stable tokens such as [EMAIL_1], so that text shown to a model carries no
// real values while tool arguments written by the model can be restored to
// the originals host-side (README, "Personal data stays out of the model").
//
// Detection is pattern matching followed by validation (Luhn for cards,
// mod 97 for IBANs, US SSN ranges, NANP rules and digit counts for phones,
// octet ranges for IPv4, netip parsing for IPv6, entropy for assigned
// secrets). It does not protect against values that do not look like any
// known kind: names, street addresses, free-form secrets without a key
// name, numbers written out in words, or data split across lines. A Luhn-valid
// number with a card prefix is reported as a card even when it is really,
// say, an order number; the validators only make such collisions rare.
//
// Tokens are issued by a Vault. The package ships an in-memory vault;
// persistence belongs to the caller.
package pii
