-- 0008_execution_network: what an execution's code reached through the
-- egress proxy (sandbox.network): a JSON array of flows, one per host, port
-- and outcome ({"host", "port", "connections", "sent", "received",
-- "refused"}). Rows logged before this migration, and executions with no
-- network, have [].

ALTER TABLE executions ADD COLUMN network TEXT NOT NULL DEFAULT '[]';
