-- 0003_sessions_by_namespace: a session id is the caller's choice, so two
-- namespaces may both pick "s1"; the key is (namespace, id), and one
-- namespace's ids tell nothing about another's.

CREATE TABLE sessions_v3 (
    namespace    TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL,
    PRIMARY KEY (namespace, id)
);
INSERT INTO sessions_v3 (namespace, id, created_at, last_used_at)
    SELECT namespace, id, created_at, last_used_at FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_v3 RENAME TO sessions;
CREATE INDEX sessions_ns ON sessions (namespace, last_used_at);
