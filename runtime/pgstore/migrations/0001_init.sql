-- pgstore schema version 1: the idempotency records table.
--
-- pgstore.MigrationSQL renders this file with the configured names (already
-- quoted): the schema, the records table, its version table (<table>_schema)
-- and the retention index (<table>_expires_at_idx).

CREATE TABLE IF NOT EXISTS {{version_table}} (
    version    integer     PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- One row per key. Rows are kept (and their fence with them) after release
-- and after expiry until retention cleanup deletes them, so fences never
-- repeat while a row exists.
CREATE TABLE IF NOT EXISTS {{table}} (
    key             text COLLATE "C" PRIMARY KEY,
    -- 1 in_progress, 2 completed, 3 failed, 4 released
    state           smallint    NOT NULL,
    -- 16-byte owner token of the current or last owner
    owner           bytea       NOT NULL,
    -- strictly increases on every claim of the key while the row exists
    fence           bigint      NOT NULL,
    -- 32-byte SHA-256 (or HMAC) of the call's payload
    fingerprint     bytea       NOT NULL,
    -- encoded result (completed) or recorded error (failed)
    result          bytea,
    -- lease expiry of an in-progress record (database clock)
    lease_until     timestamptz NOT NULL,
    -- the row stops being live (and may be deleted) at this instant
    expires_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    -- the current ownership took over an expired lease
    took_over       boolean     NOT NULL DEFAULT false,
    -- a Wait in some process is blocked on this in-progress record: finishing
    -- it must NOTIFY. Without waiters no NOTIFY is sent, because a NOTIFYing
    -- commit takes a cluster-wide lock that serializes such commits.
    waiters         boolean     NOT NULL DEFAULT false,
    -- completed by pgstore.CompleteInTx inside the caller's transaction
    completed_in_tx boolean     NOT NULL DEFAULT false,
    -- row format; a binary that finds a newer one refuses to read it
    format          smallint    NOT NULL DEFAULT 1
) WITH (fillfactor = 90);

-- Retention cleanup finds expired rows by this index.
CREATE INDEX IF NOT EXISTS {{expires_index}} ON {{table}} (expires_at);

INSERT INTO {{version_table}} (version) VALUES (1) ON CONFLICT (version) DO NOTHING;
