-- What the kernel enforced of a logged call's sandbox (its meta.sandbox, JSON; NULL when it
-- started no process).
ALTER TABLE runs ADD COLUMN sandbox TEXT;
