-- A counter every statement that changes `tools` moves, so replicas sharing the database
-- can tell cheaply that the registry changed (each polls it; see `Store::generation`).
CREATE TABLE registry_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation BIGINT NOT NULL
);
INSERT INTO registry_generation (id, generation) VALUES (1, 0);

CREATE FUNCTION toolsmith_bump_generation() RETURNS trigger AS $$
BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER tools_generation AFTER INSERT OR UPDATE OR DELETE ON tools
    FOR EACH STATEMENT EXECUTE FUNCTION toolsmith_bump_generation();
