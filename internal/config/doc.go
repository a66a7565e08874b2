// Package config finds, reads and validates codecell's JSON config file.
//
// The file is read once at start. Find applies the search order of the
// --config flag, $CODECELL_CONFIG, ./codecell.json and
// $XDG_CONFIG_HOME/codecell/config.json; Load and Parse turn the file into a
// Config in which every field holds either the user's value or its documented
// default, so the rest of codecell never applies defaults of its own. An
// empty or absent file is valid and means Default().
//
// Parsing is strict, because a typo in a limit or a policy must not silently
// become a default: an unknown or duplicated key, a value of the wrong type,
// a bad size or duration, an unset variable and every semantic rule (ranges,
// combinations of fields) are errors. Parse reports all of them at once,
// joined with errors.Join, each an *Error naming the file, the key path and
// the reason:
//
//	codecell.json: sandbox.memory: "12XB" is not a size (use e.g. 512MiB)
//
// ${VAR} in a JSON string value (and in the keys of env, headers and
// http.tokens) is replaced by the variable's value from the lookup function
// the caller passes; this package never reads the process environment itself.
// An unset or empty variable is an error. "$$" and "$VAR" without braces are
// left exactly as written. Error messages never include the expanded values of
// variables, header values, environment values or HTTP tokens, since those are
// usually secrets.
package config
