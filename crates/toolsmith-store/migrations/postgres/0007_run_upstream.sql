-- The upstream MCP server a logged call went to (NULL for toolsmith's own tools).
ALTER TABLE runs ADD COLUMN upstream TEXT;
