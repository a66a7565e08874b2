-- 0007_tasks: executions that outlive the request that started them (MCP
-- tasks). A task is recorded before its handle is returned, so that any
-- replica sharing the database answers tasks/get; the replica that runs it
-- keeps heartbeat_at fresh, and a task whose heartbeat stopped reads as
-- failed. Input requests (approvals) and the answers to them, and a
-- cancellation asked on another replica, pass through the row.

CREATE TABLE tasks (
    id               TEXT    PRIMARY KEY,
    namespace        TEXT    NOT NULL,
    replica          TEXT    NOT NULL DEFAULT '',
    tool             TEXT    NOT NULL,
    generation       TEXT    NOT NULL DEFAULT '',
    status           TEXT    NOT NULL,
    status_message   TEXT    NOT NULL DEFAULT '',
    outcome          TEXT,
    input_requests   TEXT,
    input_responses  TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    heartbeat_at     INTEGER NOT NULL,
    ttl_ms           INTEGER NOT NULL
);
CREATE INDEX tasks_ns ON tasks (namespace, created_at);
CREATE INDEX tasks_replica ON tasks (replica, status);
