-- Timestamps rendered inside JSON built by SQL (jsonb_build_object, jsonb_agg) in the same ISO
-- form the drivers' values are normalised to: UTC, milliseconds, a Z.
create function iso_utc(t timestamptz) returns text language sql immutable parallel safe as $$
  select to_char(t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
