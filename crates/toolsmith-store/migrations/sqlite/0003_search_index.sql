-- A trigram index over what search looks at (name, description, tags), so a substring
-- search of three characters or more reads the matching rows instead of every row.
-- Kept in step with `tools` by triggers; rowid is the tool row's.
CREATE VIRTUAL TABLE tools_fts USING fts5(name, description, tags, tokenize = 'trigram');

INSERT INTO tools_fts (rowid, name, description, tags)
    SELECT rowid, lower(name), lower(description), tags FROM tools;

CREATE TRIGGER tools_fts_insert AFTER INSERT ON tools BEGIN
    INSERT INTO tools_fts (rowid, name, description, tags)
        VALUES (new.rowid, lower(new.name), lower(new.description), new.tags);
END;

CREATE TRIGGER tools_fts_update AFTER UPDATE OF name, description, tags ON tools BEGIN
    DELETE FROM tools_fts WHERE rowid = old.rowid;
    INSERT INTO tools_fts (rowid, name, description, tags)
        VALUES (new.rowid, lower(new.name), lower(new.description), new.tags);
END;

CREATE TRIGGER tools_fts_delete AFTER DELETE ON tools BEGIN
    DELETE FROM tools_fts WHERE rowid = old.rowid;
END;
