-- A counter every change to `tools` moves, so other processes sharing the file (a second
-- `serve`, a `toolsmith mcp`) can tell cheaply that the registry changed.
CREATE TABLE registry_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
INSERT INTO registry_generation (id, generation) VALUES (1, 0);

CREATE TRIGGER tools_generation_insert AFTER INSERT ON tools BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER tools_generation_update AFTER UPDATE ON tools BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER tools_generation_delete AFTER DELETE ON tools BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
