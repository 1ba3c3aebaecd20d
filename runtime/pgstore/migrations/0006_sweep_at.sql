-- pgstore schema version 6: the finishing UPDATE is a HOT update.

-- Completing, failing or releasing a record sets its expires_at. Version
-- 1 indexed expires_at for retention cleanup, so every finish wrote a new
-- entry into that index and into the primary key (an update that changes
-- an indexed column is never HOT): most of a first execution's server
-- work past two plain commits (docs/BENCHMARKS.md). Cleanup finds rows by
-- sweep_at instead: a lower bound of expires_at that the claim sets (the
-- claim's time + TTL) and that a finish lowers only when its expiry comes
-- earlier (a shorter TTL), so a finish leaves every indexed column as it
-- was and PostgreSQL updates the row in place on its page. Cleanup reads
-- the index up to now and deletes the rows whose expires_at has passed.
--
-- Rows written before this migration, and by version-5 binaries still
-- running while every process is upgraded, have sweep_at '-infinity' (a
-- constant default rewrites no rows): pgstore.Store.Cleanup, which the
-- sweeper runs, first sets their sweep_at to their expires_at in short
-- batches. Until then cleanup still deletes each once its expires_at has
-- passed, but reads them on every batch.
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS sweep_at timestamptz NOT NULL DEFAULT '-infinity';
CREATE INDEX IF NOT EXISTS {{sweep_index}} ON {{table}} (sweep_at);
DROP INDEX IF EXISTS {{expires_index_qualified}};

-- The ordered claim sets sweep_at as the unordered claim statement does;
-- otherwise it is version 5's function (same name and result, so
-- version-5 binaries calling it keep working).
CREATE OR REPLACE FUNCTION {{claim_ordered_v5}}(
    p_key text, p_owner bytea, p_fp bytea, p_lease bigint, p_ttl bigint, p_ts timestamptz,
    p_okey text, p_at timestamptz, p_grace bigint, p_override boolean)
RETURNS TABLE (claimed boolean, fence bigint, lease_until timestamptz, took_over boolean,
    state smallint, owner bytea, fingerprint bytea, result bytea, expires_at timestamptz,
    format smallint, now timestamptz, out_of_order boolean, last_accepted timestamptz,
    step_names bytea[], step_data bytea[])
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
    ts  timestamptz := coalesce(p_ts, statement_timestamp());
    cur record;
    o   record;
BEGIN
    FOR attempt IN 1..8 LOOP
        SELECT r.state, r.owner, r.fence, r.fingerprint, r.result, r.lease_until, r.expires_at, r.format
            INTO cur FROM {{table}} r WHERE r.key = p_key;
        IF FOUND AND NOT (cur.format <= 1 AND cur.state BETWEEN 1 AND 4 AND (cur.expires_at <= ts OR
                (cur.fingerprint = p_fp AND (cur.state = 4 OR (cur.state = 1 AND cur.lease_until <= ts))))) THEN
            RETURN QUERY SELECT false, cur.fence, cur.lease_until, false, cur.state, cur.owner,
                cur.fingerprint, cur.result, cur.expires_at, cur.format, ts, false, NULL::timestamptz,
                NULL::bytea[], NULL::bytea[];
            RETURN;
        END IF;

        INSERT INTO {{order_table}} (key, last_at, expires_at) VALUES (p_okey, '-infinity', '-infinity')
            ON CONFLICT (key) DO NOTHING;
        SELECT x.last_at, x.expires_at INTO o FROM {{order_table}} x WHERE x.key = p_okey FOR UPDATE;
        IF o.expires_at > ts AND NOT p_override AND p_at < o.last_at - p_grace * interval '1 microsecond' THEN
            RETURN QUERY SELECT false, coalesce(cur.fence, 0::bigint), NULL::timestamptz, false, 0::smallint,
                NULL::bytea, NULL::bytea, NULL::bytea, NULL::timestamptz, 1::smallint, ts, true, o.last_at,
                NULL::bytea[], NULL::bytea[];
            RETURN;
        END IF;

        RETURN QUERY
        INSERT INTO {{table}} AS r (key, state, owner, fence, fingerprint, result, lease_until, expires_at,
            updated_at, claimed_at, took_over, completed_in_tx, format, sweep_at)
        VALUES (p_key, 1, p_owner, 1, p_fp, NULL, ts + p_lease * interval '1 microsecond',
            ts + (p_lease + p_ttl) * interval '1 microsecond', ts, ts, false, false, 1,
            ts + p_ttl * interval '1 microsecond')
        ON CONFLICT (key) DO UPDATE SET
            state = 1, owner = excluded.owner, fence = r.fence + 1, fingerprint = excluded.fingerprint,
            result = NULL, lease_until = excluded.lease_until, expires_at = excluded.expires_at,
            updated_at = excluded.updated_at, claimed_at = excluded.claimed_at, completed_in_tx = false, format = 1,
            sweep_at = excluded.sweep_at,
            step_names = CASE WHEN r.expires_at > excluded.updated_at THEN r.step_names END,
            step_data = CASE WHEN r.expires_at > excluded.updated_at THEN r.step_data END,
            took_over = (r.state = 1 AND r.expires_at > excluded.updated_at),
            waiters = (r.waiters AND r.state = 1 AND r.expires_at > excluded.updated_at)
        WHERE r.format <= 1 AND r.state BETWEEN 1 AND 4 AND (r.expires_at <= excluded.updated_at
            OR (r.fingerprint = excluded.fingerprint AND (r.state = 4
                OR (r.state = 1 AND r.lease_until <= excluded.updated_at))))
        RETURNING true, r.fence, r.lease_until, r.took_over, 0::smallint, NULL::bytea, NULL::bytea,
            NULL::bytea, NULL::timestamptz, 1::smallint, ts, false, NULL::timestamptz, r.step_names, r.step_data;
        IF FOUND THEN
            UPDATE {{order_table}} x SET
                last_at = CASE WHEN x.expires_at > ts THEN greatest(x.last_at, p_at) ELSE p_at END,
                expires_at = ts + greatest(p_ttl, p_lease) * interval '1 microsecond'
            WHERE x.key = p_okey;
            RETURN;
        END IF;
        -- Another claim took the record after our read: read it again.
    END LOOP;
    RAISE EXCEPTION 'pgstore: ordered claim of % kept changing under 8 attempts', p_key;
END
$fn$;

INSERT INTO {{version_table}} (version) VALUES (6) ON CONFLICT (version) DO NOTHING;
