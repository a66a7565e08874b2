-- 0002_execution_savings: context savings of each execution (SPEC §4.1):
-- bytes of tool results that stayed in the sandbox, and bytes returned to
-- the model. Rows logged before this migration count as 0.

ALTER TABLE executions ADD COLUMN tool_result_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN returned_bytes INTEGER NOT NULL DEFAULT 0;
