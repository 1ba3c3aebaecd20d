-- pgstore schema version 7: streamed results (idemstore.Streamer).

-- One row per item of a stream: item seq of the run that the record's
-- owner held under fence. A reader takes a record's items only where
-- fence and owner are the record's, so a claim that starts a new run (a
-- takeover, a claim after a release or past retention) writes nothing
-- here: the old run's items drop out of sight in the claim's own commit,
-- and the new run's first append deletes them. Delete and retention
-- cleanup delete a record's items in the statement that deletes its row.
-- owner guards against a row deleted some other way (an operator's
-- DELETE or TRUNCATE of the records table): its key starts again at
-- fence 1 under another owner, whose reads pass over the earlier items.
-- total is the bytes of the run's items up to this one, so an append
-- checks the run's size from its last item alone.
CREATE TABLE IF NOT EXISTS {{items_table}} (
    key   text COLLATE "C" NOT NULL,
    fence bigint      NOT NULL,
    seq   bigint      NOT NULL,
    owner bytea       NOT NULL,
    total bigint      NOT NULL,
    data  bytea       NOT NULL,
    PRIMARY KEY (key, fence, seq)
);

INSERT INTO {{version_table}} (version) VALUES (7) ON CONFLICT (version) DO NOTHING;
