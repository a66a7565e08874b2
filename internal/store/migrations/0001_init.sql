-- 0001_init: the initial schema. Times are INTEGER Unix nanoseconds (UTC);
-- JSON columns hold text that json.Valid accepts.

CREATE TABLE executions (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace      TEXT    NOT NULL,
    session_id     TEXT    NOT NULL DEFAULT '',
    code           TEXT    NOT NULL DEFAULT '',
    stdout_excerpt TEXT    NOT NULL DEFAULT '',
    stderr_excerpt TEXT    NOT NULL DEFAULT '',
    result_excerpt TEXT    NOT NULL DEFAULT '',
    error_type     TEXT    NOT NULL DEFAULT '',
    error_message  TEXT    NOT NULL DEFAULT '',
    duration_ms    INTEGER NOT NULL DEFAULT 0,
    tool_calls     TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(tool_calls)),
    isolation      TEXT    NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL
);
CREATE INDEX executions_ns_id ON executions (namespace, id);
CREATE INDEX executions_ns_created ON executions (namespace, created_at);

CREATE TABLE skills (
    namespace   TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    version     INTEGER NOT NULL CHECK (version > 0),
    description TEXT    NOT NULL DEFAULT '',
    tags        TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
    code        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (namespace, name, version)
);

CREATE TABLE pii_vault (
    namespace  TEXT    NOT NULL,
    token      TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (namespace, kind, value),
    UNIQUE (namespace, token)
);

CREATE TABLE sessions (
    id           TEXT    NOT NULL PRIMARY KEY,
    namespace    TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL
);
CREATE INDEX sessions_ns ON sessions (namespace, last_used_at);

CREATE TABLE environments (
    namespace TEXT NOT NULL PRIMARY KEY,
    config    TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config))
);
