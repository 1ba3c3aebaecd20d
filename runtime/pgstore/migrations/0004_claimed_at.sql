-- pgstore schema version 4: a record carries when its owner claimed it.

-- claimed_at is the database time of the claim that made the current (or,
-- once finished, the last) owner the owner: a new claim or the takeover of
-- an expired lease. Heartbeats and completion leave it, so now() -
-- claimed_at is how long a heartbeating owner has been running. It is
-- nullable: rows claimed before this migration have none (pgstore reads
-- NULL as the zero time) until they are claimed again. Adding a nullable
-- column without a default rewrites no rows and holds the table's lock
-- only for a moment.
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS claimed_at timestamptz;

-- The ordered claim sets claimed_at as the unordered claim statement does;
-- otherwise it is version 3's function.
-- An ordered claim in one round trip. A record that is running or
-- finished, or live with another payload's fingerprint, answers at once,
-- read-only, without looking at the order (a replay stays a replay). A
-- claim that would execute first locks the entity's order row, so the
-- check "at >= last - grace" and the advance "last = max(last, at)" are one
-- atomic step with the record's claim.
CREATE OR REPLACE FUNCTION {{claim_ordered}}(
    p_key text, p_owner bytea, p_fp bytea, p_lease bigint, p_ttl bigint, p_ts timestamptz,
    p_okey text, p_at timestamptz, p_grace bigint, p_override boolean)
RETURNS TABLE (claimed boolean, fence bigint, lease_until timestamptz, took_over boolean,
    state smallint, owner bytea, fingerprint bytea, result bytea, expires_at timestamptz,
    format smallint, now timestamptz, out_of_order boolean, last_accepted timestamptz)
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
                cur.fingerprint, cur.result, cur.expires_at, cur.format, ts, false, NULL::timestamptz;
            RETURN;
        END IF;

        INSERT INTO {{order_table}} (key, last_at, expires_at) VALUES (p_okey, '-infinity', '-infinity')
            ON CONFLICT (key) DO NOTHING;
        SELECT x.last_at, x.expires_at INTO o FROM {{order_table}} x WHERE x.key = p_okey FOR UPDATE;
        IF o.expires_at > ts AND NOT p_override AND p_at < o.last_at - p_grace * interval '1 microsecond' THEN
            RETURN QUERY SELECT false, coalesce(cur.fence, 0::bigint), NULL::timestamptz, false, 0::smallint,
                NULL::bytea, NULL::bytea, NULL::bytea, NULL::timestamptz, 1::smallint, ts, true, o.last_at;
            RETURN;
        END IF;

        RETURN QUERY
        INSERT INTO {{table}} AS r (key, state, owner, fence, fingerprint, result, lease_until, expires_at,
            updated_at, claimed_at, took_over, completed_in_tx, format)
        VALUES (p_key, 1, p_owner, 1, p_fp, NULL, ts + p_lease * interval '1 microsecond',
            ts + (p_lease + p_ttl) * interval '1 microsecond', ts, ts, false, false, 1)
        ON CONFLICT (key) DO UPDATE SET
            state = 1, owner = excluded.owner, fence = r.fence + 1, fingerprint = excluded.fingerprint,
            result = NULL, lease_until = excluded.lease_until, expires_at = excluded.expires_at,
            updated_at = excluded.updated_at, claimed_at = excluded.claimed_at, completed_in_tx = false, format = 1,
            took_over = (r.state = 1 AND r.expires_at > excluded.updated_at),
            waiters = (r.waiters AND r.state = 1 AND r.expires_at > excluded.updated_at)
        WHERE r.format <= 1 AND r.state BETWEEN 1 AND 4 AND (r.expires_at <= excluded.updated_at
            OR (r.fingerprint = excluded.fingerprint AND (r.state = 4
                OR (r.state = 1 AND r.lease_until <= excluded.updated_at))))
        RETURNING true, r.fence, r.lease_until, r.took_over, 0::smallint, NULL::bytea, NULL::bytea,
            NULL::bytea, NULL::timestamptz, 1::smallint, ts, false, NULL::timestamptz;
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

INSERT INTO {{version_table}} (version) VALUES (4) ON CONFLICT (version) DO NOTHING;
