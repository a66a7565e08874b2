// Package dashboard serves codecell's web dashboard: one page and its script
// and style sheet, embedded in the binary so that it works offline.
//
// The page holds no data. Its script reads the REST API under /api/v1 with
// the bearer token the user gives it (kept in sessionStorage, or taken from
// the URL fragment #token=...), so the assets are served without
// authentication. Everything the API returns is untrusted (code, output and
// errors come from the sandbox) and is inserted as text, never as markup; a
// Content-Security-Policy that allows only the page's own script and style
// backs that up. The page shows personal data only as the tokens the API
// returns: it never restores them.
//
// What it does not protect against: anyone who can run script in the page's
// origin (a browser extension, say) can read the token from sessionStorage.
package dashboard
