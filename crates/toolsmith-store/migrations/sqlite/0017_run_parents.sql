-- The run a call was made by (code mode: the program's run, by its call id), so the run log
-- links a program's tool calls to it; NULL for a call made directly.
ALTER TABLE runs ADD COLUMN parent_call_id TEXT;
CREATE INDEX runs_by_parent ON runs (parent_call_id);
