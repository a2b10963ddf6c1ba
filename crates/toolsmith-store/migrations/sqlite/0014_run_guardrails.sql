-- Each logged call's id (its result's meta.call_id, which a result cut by max_result_bytes
-- names) and what its result guardrails did (meta.guardrails, JSON; NULL when nothing).
ALTER TABLE runs ADD COLUMN call_id TEXT;
ALTER TABLE runs ADD COLUMN guardrails TEXT;
CREATE INDEX runs_by_call ON runs (call_id);
