-- 0004_execution_traceback: the traceback of a failed execution (an excerpt),
-- so that the dashboard can show where the code failed, not only how. Rows
-- logged before this migration have none.

ALTER TABLE executions ADD COLUMN error_traceback TEXT NOT NULL DEFAULT '';
