-- 0006_session_replicas: several replicas may share one database, each with
-- live sessions of its own; a session record names the replica that runs it
-- ('' for a lone server), so that a replica starting up clears its own
-- records and no other's, and two replicas may each run a session "s1" of
-- one namespace.

CREATE TABLE sessions_v6 (
    replica      TEXT    NOT NULL DEFAULT '',
    namespace    TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL,
    PRIMARY KEY (replica, namespace, id)
);
INSERT INTO sessions_v6 (namespace, id, created_at, last_used_at)
    SELECT namespace, id, created_at, last_used_at FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_v6 RENAME TO sessions;
CREATE INDEX sessions_ns ON sessions (namespace, last_used_at);
