-- Trigram indexes (pg_trgm, a trusted extension since PostgreSQL 13: the database's owner
-- may create it) over what search looks at, so `LIKE '%text%'` on name, description or tags
-- uses an index instead of reading every row. The extension lives in `public` whatever the
-- search_path, so registries in other schemas of the same database share it.
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
CREATE INDEX IF NOT EXISTS tools_name_trgm ON tools USING gin (lower(name) public.gin_trgm_ops);
CREATE INDEX IF NOT EXISTS tools_description_trgm ON tools USING gin (lower(description) public.gin_trgm_ops);
CREATE INDEX IF NOT EXISTS tools_tags_trgm ON tools USING gin (tags public.gin_trgm_ops);
